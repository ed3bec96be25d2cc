//! What a tensor's header records to check its bytes: checksums (format
//! 1.2, ADR-0009) and digests (format 1.4, ADR-0012), and checking them.

use super::TensorRef;
use crate::buffer::BufferRole;
use crate::checksum::ChecksumAlgorithm;
use crate::digest::{DIGEST_LEN, Digest, DigestAlgorithm};
use crate::error::{Error, Result};

impl TensorRef<'_> {
    /// The checksum the header records for each buffer, with the
    /// buffer's role, in [`buffers`](Self::buffers) order; `None` when the
    /// file has no checksums (format 1.0/1.1 files, or written without).
    pub fn checksums(&self) -> Option<Vec<(BufferRole, u64)>> {
        let sums = self.t.checksums()?;
        Some(
            self.buffers()
                .into_iter()
                .zip(sums.iter())
                .map(|((role, _), sum)| (role, sum))
                .collect(),
        )
    }

    /// The digest the header records for each buffer (format 1.4), with
    /// the buffer's role, in [`buffers`](Self::buffers) order, and their
    /// algorithm; `None` when the tensor has none, or the file's algorithm
    /// is one this build does not know (verifying then refuses it).
    pub fn digests(&self) -> Option<(DigestAlgorithm, Vec<(BufferRole, Digest)>)> {
        let algorithm = DigestAlgorithm::from_wire(self.facts.digest()).ok()??;
        let bytes = self.t.digests()?.bytes();
        let digests = self
            .buffers()
            .into_iter()
            .zip(bytes.chunks_exact(DIGEST_LEN))
            .filter_map(|((role, _), d)| Some((role, Digest::from_slice(d)?)))
            .collect();
        Some((algorithm, digests))
    }

    /// Whether the header records digests of this tensor's buffers, of any
    /// algorithm (one this build does not know included: verifying refuses
    /// it).
    pub(crate) fn records_digests(&self) -> bool {
        self.t.digests().is_some()
    }

    /// Reads every buffer of the tensor and compares it with what the
    /// header records of it: its checksum (format 1.2) and its digest
    /// (format 1.4), each where the file has them. `Ok(true)` when all
    /// match, `Ok(false)` when the tensor records neither,
    /// [`Error::ChecksumMismatch`] or [`Error::DigestMismatch`] naming the
    /// buffer and both values otherwise. This reads the data; opening does
    /// not.
    pub fn verify_checksum(&self) -> Result<bool> {
        let digests = self.verify_digests()?;
        Ok(self.verify_crc()? || digests)
    }

    /// The digests part of [`verify_checksum`](Self::verify_checksum).
    fn verify_digests(&self) -> Result<bool> {
        if self.t.digests().is_none() {
            return Ok(false);
        }
        let wire = DigestAlgorithm::from_wire(self.facts.digest());
        let Some(algorithm) = self.known(wire, "digest_algorithm")? else {
            return Ok(false);
        };
        self.require_read()?;
        let Some((_, digests)) = self.digests() else {
            return Ok(false);
        };
        for ((role, bytes), (_, expected)) in self.buffers().into_iter().zip(digests) {
            let found = algorithm.of(bytes);
            if found != expected {
                return Err(Error::DigestMismatch {
                    tensor: self.name().to_owned(),
                    buffer: role.name(),
                    algorithm: algorithm.name(),
                    expected: expected.to_hex(),
                    found: found.to_hex(),
                });
            }
        }
        Ok(true)
    }

    /// The checksums part of [`verify_checksum`](Self::verify_checksum).
    fn verify_crc(&self) -> Result<bool> {
        let Some(sums) = self.checksums() else {
            return Ok(false);
        };
        self.require_read()?;
        let wire = ChecksumAlgorithm::from_wire(self.facts.checksum());
        let Some(algorithm) = self.known(wire, "checksum_algorithm")? else {
            return Ok(false);
        };
        for ((role, bytes), (_, expected)) in self.buffers().into_iter().zip(sums) {
            let found = algorithm.of(bytes);
            if found != expected {
                return Err(Error::ChecksumMismatch {
                    tensor: self.name().to_owned(),
                    buffer: role.name(),
                    algorithm: algorithm.name(),
                    expected,
                    found,
                });
            }
        }
        Ok(true)
    }

    /// The algorithm a wire value names (`Ok(None)`: none), or, for a value
    /// this build does not know, [`Error::InvalidField`] on `field`:
    /// refused when checked, never at open.
    fn known<A>(&self, wire: Result<Option<A>, u8>, field: &str) -> Result<Option<A>> {
        wire.map_err(|value| Error::InvalidField {
            tensor: self.name().to_owned(),
            field: field.into(),
            value: value.to_string(),
            reason: format!("a {} this reader does not know", field.replace('_', " ")),
        })
    }
}
