//! Any bytes as a `.ptd` input of `hurray convert` (ExecuTorch's FlatTensor
//! file): parsed and every tensor streamed in canonical form, with every
//! check a conversion makes. It must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hurray_cli::convert::read_all("ptd", data);
});
