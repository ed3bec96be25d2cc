//! Verifying a sharded checkpoint's members: each one whole against the
//! length and CRC-32C its index records, and each one's own per-buffer
//! checksums. One walk over the members, which every front door reports
//! from: the first problem ([`ChecksumReport::into_result`]), or all of
//! them.

use super::ShardedFile;
use crate::checksum::{ChecksumAlgorithm, Running};
use crate::error::{Error, Result};
use crate::reader::File;
use crate::shard_index::ShardMember;
use crate::source::ReadRequest;

/// What [`ShardedFile::checksum_report`] found.
#[derive(Debug, Default)]
pub struct ChecksumReport {
    /// Members unlike the index, in index order: not openable at the length
    /// it records, or whole bytes of another CRC-32C. Each error names its
    /// member ([`Error::MemberMismatch`], or an I/O error naming its path).
    pub members: Vec<Error>,
    /// Buffers unlike the checksum their member records, members in index
    /// order: the member's path as the index records it, and the error
    /// naming the tensor and the buffer ([`Error::ChecksumMismatch`]).
    pub buffers: Vec<(String, Error)>,
    /// How many tensors matched the checksums their members record.
    pub verified: usize,
}

impl ChecksumReport {
    /// Whether nothing differs.
    pub fn is_ok(&self) -> bool {
        self.members.is_empty() && self.buffers.is_empty()
    }

    /// The first problem as the error, a member unlike the index before a
    /// buffer unlike its checksum (the member is the file to replace);
    /// otherwise how many tensors matched.
    pub fn into_result(self) -> Result<usize> {
        if let Some(e) = self.members.into_iter().next() {
            return Err(e);
        }
        if let Some((_, e)) = self.buffers.into_iter().next() {
            return Err(e);
        }
        Ok(self.verified)
    }
}

impl ShardedFile {
    /// Reads every member whole and compares its length and CRC-32C with the
    /// index's: [`Error::MemberMismatch`] naming the first that differs.
    pub fn verify_members(&self) -> Result<()> {
        for (i, m) in self.members().iter().enumerate() {
            matches_index(m, self.member(i)?)?;
        }
        Ok(())
    }

    /// Verifies every member: whole, against the length and CRC-32C the
    /// index records (as [`verify_members`](Self::verify_members)), and
    /// every buffer against the checksum the member records (as
    /// [`File::verify_checksums`]). Every member is checked, whatever an
    /// earlier one showed, so the report lists each problem.
    pub fn checksum_report(&self) -> ChecksumReport {
        let mut report = ChecksumReport::default();
        for (i, m) in self.members().iter().enumerate() {
            let member = match self.member(i) {
                Ok(member) => member,
                Err(e) => {
                    report.members.push(e);
                    continue;
                }
            };
            if let Err(e) = matches_index(m, member) {
                report.members.push(e);
            }
            // The fast check first (in place on several threads); only a
            // member that fails it is read again, tensor by tensor, to name
            // every buffer that differs.
            match member.count_verified_checksums() {
                Ok(n) => report.verified += n,
                Err(_) => {
                    let found = member.validate_checksums();
                    report.verified += found.checksummed.unwrap_or(0);
                    report
                        .buffers
                        .extend(found.problems.into_iter().map(|e| (m.path.clone(), e)));
                }
            }
        }
        report
    }
}

/// Whether `file`, read whole, has the CRC-32C the index records for member
/// `m` (its length was compared when it was opened).
fn matches_index(m: &ShardMember, file: &File) -> Result<()> {
    let found = whole_crc32c(file)?;
    if found != m.crc32c {
        return Err(Error::MemberMismatch {
            member: m.path.clone(),
            field: "crc32c",
            expected: format!("{:#010x}", m.crc32c),
            found: format!("{found:#010x}"),
        });
    }
    Ok(())
}

/// The CRC-32C of the whole of `file`: of its bytes in place, or streamed
/// through its source in pieces (memory stays one piece).
pub(super) fn whole_crc32c(file: &File) -> Result<u64> {
    if let Some(bytes) = file.bytes() {
        return Ok(ChecksumAlgorithm::Crc32c.of(bytes));
    }
    let source = file.source();
    let mut running = Running::new(ChecksumAlgorithm::Crc32c);
    let mut buf = vec![0u8; crate::source::PIECE.min(file.file_len() as usize)];
    let mut at = 0u64;
    while at < file.file_len() {
        let n = (file.file_len() - at).min(buf.len() as u64) as usize;
        let mut request = [ReadRequest {
            offset: at,
            buf: &mut buf[..n],
        }];
        source
            .read_many(&mut request)
            .map_err(|e| Error::io("reading", source.location(), e))?;
        running.update(&buf[..n]);
        at += n as u64;
    }
    Ok(running.finish())
}
