//! The two verifiers behind [`Reader::new`](crate::reader::Reader::new), side by
//! side, for differential testing (`fuzz/fuzz_targets/verifier.rs`,
//! `runtime/tests/verifier.rs`).
//!
//! - [`generated`]: the verifier the codegen emits from the schema
//!   (`runtime/src/gen/verifier.rs`), with the semantic checks run on each
//!   tensor as soon as its table passed. What `Reader::new` runs.
//! - [`reference`]: the generic FlatBuffers verifier, then the semantic
//!   checks over the verified header. What `Reader::new` runs for the error
//!   when the generated verifier finds a structural failure.
//!
//! Both must give the same [`Verdict`] on every input.

use super::{Failure, Reader, locate};
use crate::error::Error;

pub use super::structure::Structural;

/// What a verifier concluded about a file.
#[derive(Debug)]
pub enum Verdict {
    /// The file is valid.
    Valid,
    /// The header failed a structural check: the kind of the generic
    /// verifier's error ([`Error::InvalidHeader`]).
    Structure(Structural),
    /// Any other failure: the footer, the identifier or a semantic rule.
    Rule(Error),
    /// The generated verifier found two buffers overlapping; it leaves the
    /// naming of them to the reference ([`Error::BuffersOverlap`] there).
    Overlap,
    /// The generated verifier reached a state it should never reach (see
    /// the message); `Reader::new` then lets the reference decide. Agrees
    /// with nothing, so the differential tests report it.
    Unexpected(&'static str),
}

impl Verdict {
    /// Whether two verdicts agree: both valid, the same structural kind,
    /// rule failures with the same message, or an overlap found by both.
    pub fn agrees_with(&self, other: &Verdict) -> bool {
        match (self, other) {
            (Verdict::Valid, Verdict::Valid) => true,
            (Verdict::Structure(a), Verdict::Structure(b)) => a == b,
            (Verdict::Rule(a), Verdict::Rule(b)) => a.to_string() == b.to_string(),
            (Verdict::Overlap, Verdict::Rule(Error::BuffersOverlap { .. }))
            | (Verdict::Rule(Error::BuffersOverlap { .. }), Verdict::Overlap) => true,
            _ => false,
        }
    }
}

/// The generated verifier's verdict on the file `bytes`.
pub fn generated(bytes: &[u8]) -> Verdict {
    let (range, version, flags) = match locate(bytes) {
        Ok(l) => l,
        Err(e) => return Verdict::Rule(e),
    };
    let header = &bytes[range.clone()];
    match Reader::verify_generated(bytes, header, range.start as u64, version, flags) {
        Ok(_) => Verdict::Valid,
        Err(Failure::Structure(kind)) => Verdict::Structure(kind),
        Err(Failure::Rule(e)) => Verdict::Rule(e),
        Err(Failure::Overlap) => Verdict::Overlap,
        Err(Failure::Unexpected(why)) => Verdict::Unexpected(why),
    }
}

/// The reference verifier's verdict on the file `bytes`.
pub fn reference(bytes: &[u8]) -> Verdict {
    let (range, version, flags) = match locate(bytes) {
        Ok(l) => l,
        Err(e) => return Verdict::Rule(e),
    };
    let header = &bytes[range.clone()];
    match Reader::verify_reference(bytes, header, range.start as u64, version, flags) {
        Ok(_) => Verdict::Valid,
        Err(Error::InvalidHeader(e)) if !is_identifier(&e) => {
            Verdict::Structure(Structural::of(&e))
        }
        Err(e) => Verdict::Rule(e),
    }
}

/// The missing-identifier error both verifiers make before any walk.
fn is_identifier(e: &flatbuffers::InvalidFlatbuffer) -> bool {
    matches!(e, flatbuffers::InvalidFlatbuffer::MissingRequiredField { required, .. } if required.starts_with("file_identifier"))
}
