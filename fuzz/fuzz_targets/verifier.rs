//! Differential: the generated verifier (`runtime/src/gen/verifier.rs` with
//! the fused semantic checks) against the reference (the generic FlatBuffers
//! verifier, then the semantic checks). Any disagreement, in the verdict or
//! in the kind of failure, is a crash.
//!
//! Half of the inputs are taken as whole files; the other half as a header
//! behind a valid prefix and footer, so that most inputs reach the header
//! walk rather than stopping at the magic.
#![no_main]

use hurray::format::{FOOTER_MAGIC, MAGIC, VERSION_MAJOR, VERSION_MINOR};
use hurray::verifiers::{generated, reference};
use libfuzzer_sys::fuzz_target;

fn wrap(header: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    out[..8].copy_from_slice(&MAGIC);
    out[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    out[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    out.extend_from_slice(header);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let len = out.len() as u64 - 64;
    out.extend_from_slice(&64u64.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&FOOTER_MAGIC);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 { rest.to_vec() } else { wrap(rest) };
    let g = generated(&bytes);
    let r = reference(&bytes);
    assert!(g.agrees_with(&r), "generated {g:?}, reference {r:?}");
});
