//! The reference pass that runs [`Checks`] after the generic FlatBuffers
//! verifier. (The fused pass, [`Fused`](super::Fused), lives beside
//! `Checks`: the generated verifier's walk calls into it for every tensor,
//! and keeping the two together keeps that call inlined.)

use super::super::Reader;
use super::{Checks, check_file};
use crate::error::Result;
use crate::generated::fb;
use crate::generated::verifier::{HeaderFields, TensorFields};

impl Reader<'_> {
    /// The reference semantic pass, after the generic FlatBuffers verifier:
    /// the file-wide checks, every tensor in order, the name index, overlaps.
    pub(in crate::reader) fn check_semantics(&self, data_end: u64, flags: u64) -> Result<()> {
        let header = HeaderFields::of(self.header);
        check_file(&header, flags)?;
        let tensors = header.tensors;
        let mut checks = Checks::new(
            data_end,
            flags,
            header.alignment,
            crate::checksum::Algorithms {
                checksum: fb::ChecksumAlgorithm(header.checksum_algorithm),
                digest: fb::DigestAlgorithm(header.digest_algorithm),
            },
            tensors.map_or(0, |t| t.len()),
            false,
        );
        for t in tensors.iter().flatten() {
            checks.tensor(&TensorFields::of(t))?;
        }
        checks.finish(&header)
    }
}
