//! Any bytes as a `.hurray` input of a conversion out of Hurray: verified and
//! validated, written as GGUF (a `hurray.gguf` layout, recorded keys, every
//! quantized form joined back into blocks) and unfolded for the other
//! writers (MXFP4 pairs, bitsandbytes 4-bit and compressed-tensors layers).
//! It must never panic, and never write more than the expansion limit
//! allows.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(written) = hurray_cli::convert::write_all_from_hurray(data) {
        // Keys are written from their text renderings: at most 4x as binary.
        assert!(written <= hurray::limits::expansion_limit(8 * data.len() as u64));
    }
});
