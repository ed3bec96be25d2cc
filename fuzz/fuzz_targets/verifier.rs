//! Differential: the generated verifier (`runtime/src/gen/verifier.rs` with
//! the fused semantic checks) against the reference (the generic FlatBuffers
//! verifier, then the semantic checks). Any disagreement, in the verdict or
//! in the kind of failure, is a crash.
//!
//! Half of the inputs are taken as whole files; the other half as a header
//! behind a valid prefix and footer, so that most inputs reach the header
//! walk rather than stopping at the magic.
#![no_main]

use hurray::format::frame;
use hurray::verifiers::{generated, reference};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 { rest.to_vec() } else { frame(&[], rest, 0) };
    let g = generated(&bytes);
    let r = reference(&bytes);
    assert!(g.agrees_with(&r), "generated {g:?}, reference {r:?}");
});
