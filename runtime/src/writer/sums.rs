//! What the writer computes of each buffer as it passes: its checksum
//! (format 1.2, on by default) and its digest (format 1.4, on request), in
//! the same pass over the same bytes.

use crate::checksum::{ChecksumAlgorithm, Running};
use crate::digest::{Digest, DigestAlgorithm, RunningDigest};

/// The algorithms a writer records for every buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SumsWanted {
    pub(crate) checksum: Option<ChecksumAlgorithm>,
    pub(crate) digest: Option<DigestAlgorithm>,
}

impl SumsWanted {
    /// The running sums of a new buffer; `None` when nothing is recorded.
    pub(crate) fn start(self) -> Option<BufferSums> {
        if self.checksum.is_none() && self.digest.is_none() {
            return None;
        }
        Some(BufferSums {
            checksum: self.checksum.map(Running::new),
            digest: self.digest.map(RunningDigest::new),
        })
    }
}

/// One buffer's checksum and digest so far.
#[derive(Debug, Clone)]
pub(crate) struct BufferSums {
    checksum: Option<Running>,
    digest: Option<RunningDigest>,
}

impl BufferSums {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        if let Some(c) = &mut self.checksum {
            c.update(bytes);
        }
        if let Some(d) = &mut self.digest {
            d.update(bytes);
        }
    }

    /// Appends the finished checksum and digest to `sums`.
    pub(crate) fn finish_into(self, sums: &mut Sums) {
        if let Some(c) = self.checksum {
            sums.checksums.push(c.finish());
        }
        if let Some(d) = self.digest {
            sums.digests.push(d.finish());
        }
    }
}

/// The checksums and digests of a tensor's buffers, in buffer order (each
/// list empty when the file records none).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sums {
    pub(crate) checksums: Vec<u64>,
    pub(crate) digests: Vec<Digest>,
}
