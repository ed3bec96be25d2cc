//! Any bytes as a `.gguf` input of `hurray convert`: parsed and every tensor
//! streamed in canonical form, with every check a conversion makes. It must
//! never panic, and what it accepts streams exactly its declared length.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hurray_cli::convert::read_all("gguf", data);
});
