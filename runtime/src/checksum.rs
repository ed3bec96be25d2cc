//! Per-buffer checksums (format 1.2, ADR-0009): the writer computes one for
//! every buffer in its single streaming pass, the header records them, and a
//! reader checks them only when asked ([`TensorRef::verify_checksum`]):
//! opening a file never reads its data.
//!
//! [`TensorRef::verify_checksum`]: crate::TensorRef::verify_checksum

use crate::generated::fb;

/// How a file's checksums are computed (`Header.checksum_algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChecksumAlgorithm {
    /// CRC-32C (Castagnoli), the checksum iSCSI, ext4, S3 and GCS use;
    /// computed with carry-less multiplication on x86-64 and aarch64.
    Crc32c,
}

impl ChecksumAlgorithm {
    /// The name used in the CLI, JSON and messages.
    pub const fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32c => "crc32c",
        }
    }

    pub(crate) fn to_wire(self) -> fb::ChecksumAlgorithm {
        match self {
            ChecksumAlgorithm::Crc32c => fb::ChecksumAlgorithm::Crc32c,
        }
    }

    /// The algorithm of a wire value: `Ok(None)` for `None`, `Err(value)`
    /// for a value this build does not know.
    pub(crate) fn from_wire(value: fb::ChecksumAlgorithm) -> Result<Option<Self>, u8> {
        match value {
            fb::ChecksumAlgorithm::None => Ok(None),
            fb::ChecksumAlgorithm::Crc32c => Ok(Some(ChecksumAlgorithm::Crc32c)),
            other => Err(other.0),
        }
    }

    /// The checksum of `bytes`.
    pub fn of(self, bytes: &[u8]) -> u64 {
        let mut r = Running::new(self);
        r.update(bytes);
        r.finish()
    }
}

/// A header's two integrity algorithms, as the wire spells them: its
/// checksums' (format 1.2) and its digests' (format 1.4). Every tensor of
/// a reader carries them (an unknown value is refused only when verified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Algorithms {
    pub(crate) checksum: fb::ChecksumAlgorithm,
    pub(crate) digest: fb::DigestAlgorithm,
}

impl Algorithms {
    pub(crate) fn of(header: &fb::Header<'_>) -> Algorithms {
        Algorithms {
            checksum: header.checksum_algorithm(),
            digest: header.digest_algorithm(),
        }
    }
}

/// A checksum computed over bytes that arrive in pieces.
#[derive(Clone)]
pub(crate) struct Running {
    digest: crc_fast::Digest,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").finish_non_exhaustive()
    }
}

impl Running {
    pub(crate) fn new(algorithm: ChecksumAlgorithm) -> Self {
        match algorithm {
            ChecksumAlgorithm::Crc32c => Running {
                digest: crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi),
            },
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.digest.update(bytes);
    }

    pub(crate) fn finish(self) -> u64 {
        self.digest.finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_values() {
        // RFC 3720 (iSCSI) B.4 and the CRC catalogue's check value.
        let c = ChecksumAlgorithm::Crc32c;
        assert_eq!(c.of(b"123456789"), 0xE306_9283);
        assert_eq!(c.of(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(c.of(&[0xFFu8; 32]), 0x62A8_AB43);
        assert_eq!(c.of(b""), 0);
        // Pieces give the checksum of the whole.
        let mut r = Running::new(c);
        r.update(b"1234");
        r.update(b"");
        r.update(b"56789");
        assert_eq!(r.finish(), 0xE306_9283);
    }
}
