//! What the front doors report about a file, computed once here: the
//! checks opening leaves for later (sparse indices, per-buffer checksums),
//! streamed tensor by tensor on any source.

use crate::error::{Error, Result};
use crate::reader::{File, TensorRef};
use crate::source::{default_threads, in_runs};
use std::sync::atomic::{AtomicBool, Ordering};

/// What [`File::validate`] found.
#[derive(Debug, Default)]
pub struct Validation {
    /// Every problem, in file order (tensors sorted by name).
    pub problems: Vec<Error>,
    /// How many tensors matched the checksums the header records, when
    /// checksums were asked for; `Some(0)` for a file that records none.
    pub checksummed: Option<usize>,
}

impl Validation {
    /// Whether nothing was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl File {
    /// Checks what opening leaves for later, tensor by tensor: the index
    /// contents of every sparse tensor (ADR-0003) and, with `checksums`,
    /// every buffer against the checksum the header records (ADR-0009).
    /// A tensor of a file read through a source that is not read yet is
    /// fetched for the check and dropped after it, so memory stays one
    /// tensor's bytes: `hurray validate` of a URL streams.
    pub fn validate(&self, checksums: bool) -> Validation {
        let mut report = Validation {
            problems: Vec::new(),
            checksummed: checksums.then_some(0),
        };
        for t in self.tensors() {
            match self.with_data(t, |t| check(t, checksums)) {
                Ok(true) => {
                    if let Some(n) = report.checksummed.as_mut() {
                        *n += 1;
                    }
                }
                Ok(false) => {}
                Err(e) => report.problems.push(e),
            }
        }
        report
    }
}

impl File {
    /// Verifies every tensor's buffers against the checksums the header
    /// records: `true` when at least one tensor records checksums and every
    /// recorded one matches, `false` when the file records none; a mismatch
    /// is [`Error::ChecksumMismatch`] naming the tensor. A file in place (a
    /// map, bytes in memory) is checked in the file's order on several
    /// threads, each a contiguous run of the data, so on a cold map the
    /// checksums keep pace with the device and leave every page read in; a
    /// file read through a source streams as [`validate`](Self::validate)
    /// does.
    pub fn verify_checksums(&self) -> Result<bool> {
        if self.bytes().is_some() {
            return self.verify_in_place();
        }
        let mut verified = false;
        for t in self.tensors() {
            verified |= self.with_data(t, |t| t.verify_checksum())?;
        }
        Ok(verified)
    }

    fn verify_in_place(&self) -> Result<bool> {
        let reader = self.reader();
        // (first byte, bytes, tensor) in the file's order.
        let mut order: Vec<(u64, u64, usize)> = (0..self.len())
            .map(|i| {
                let t = reader.header_tensor(i);
                let (start, len) = t.data_ranges().fold((u64::MAX, 0u64), |(s, n), (at, len)| {
                    (s.min(at), n.saturating_add(len))
                });
                (start, len, i)
            })
            .collect();
        order.sort_unstable();
        let verified = AtomicBool::new(false);
        let size = |o: &(u64, u64, usize)| usize::try_from(o.1).unwrap_or(usize::MAX);
        in_runs(order, size, default_threads(), |(_, _, i)| {
            if reader.tensor_at(i).verify_checksum()? {
                verified.store(true, Ordering::Relaxed);
            }
            Ok::<(), Error>(())
        })?;
        Ok(verified.into_inner())
    }
}

/// One tensor's checks; whether its checksums were verified.
fn check(t: TensorRef<'_>, checksums: bool) -> Result<bool> {
    t.check_sparse_index()?;
    if checksums {
        return t.verify_checksum();
    }
    Ok(false)
}
