//! Checking a signed file or checkpoint whole: the signature, then every
//! byte it commits to (what `hurray verify` runs). A loader checks less up
//! front: the signature at open, each tensor's digests when it reads them.

use crate::error::Result;
use crate::key::PublicKey;
use crate::signature::Signature;
use hurray::{File, ShardedFile};

/// What a whole check covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Member files checked (1 for a single file).
    pub files: usize,
    /// Tensors whose every buffer matched its digest.
    pub tensors: usize,
}

/// Checks `signature` over `file` with `key`, then every tensor's data
/// against its digests: the first mismatch is the error.
pub fn verify_file(file: &File, signature: &Signature, key: &PublicKey) -> Result<Verified> {
    signature.verify(file, key)?;
    let report = file.validate(true);
    if let Some(e) = report.problems.into_iter().next() {
        return Err(e.into());
    }
    Ok(Verified {
        files: 1,
        tensors: report.checksummed.unwrap_or(0),
    })
}

/// Checks `signature` over the checkpoint's `index` with `key`, then each
/// member's header against the digest the index records (on opening it),
/// then every tensor of every member against its digests. `checkpoint`
/// must be the one built from this very `index` (`ShardedFile::
/// from_index_at(index, ..)` or `from_index_with_sources(index, ..)`), not
/// a second open of its path, which could be another file by then.
pub fn verify_checkpoint(
    index: &File,
    checkpoint: &ShardedFile,
    signature: &Signature,
    key: &PublicKey,
) -> Result<Verified> {
    signature.verify(index, key)?;
    let mut verified = Verified {
        files: 0,
        tensors: 0,
    };
    for i in 0..checkpoint.members().len() {
        let member = checkpoint.member(i)?;
        let report = member.validate(true);
        if let Some(e) = report.problems.into_iter().next() {
            return Err(e.into());
        }
        verified.files += 1;
        verified.tensors += report.checksummed.unwrap_or(0);
    }
    Ok(verified)
}
