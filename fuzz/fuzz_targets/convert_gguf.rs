//! Any bytes as a `.gguf` input of `hurray convert`: parsed and every tensor
//! streamed in canonical form, with every check a conversion makes. It must
//! never panic, and what it accepts streams exactly its declared length.
//! Every block tensor is also taken apart into its Hurray buffers and put
//! back together (what converting in and out again does): the blocks must
//! come back bit for bit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hurray_cli::convert::read_all("gguf", data);
    let _ = hurray_cli::convert::gguf_blocks_round_trip(data);
});
