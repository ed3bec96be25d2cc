//! What the front doors report about a file, computed once here: the
//! checks opening leaves for later (sparse indices, per-buffer checksums),
//! streamed tensor by tensor on any source.

use crate::Layout;
use crate::error::{Error, Result};
use crate::reader::{File, TensorRef};
use crate::source::{default_threads, in_runs};
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// fetched for a check that reads it and dropped after it, so memory
    /// stays one tensor's bytes: `hurray validate` of a URL streams.
    pub fn validate(&self, checksums: bool) -> Validation {
        self.validate_reporting(checksums, |_| {})
    }

    /// [`validate`](Self::validate), calling `progress` with each tensor's
    /// byte length once it is checked (what a front door's progress bar
    /// counts).
    pub fn validate_reporting(&self, checksums: bool, progress: impl Fn(u64)) -> Validation {
        self.check_each_tensor(
            DeferredChecks {
                sparse: true,
                checksums,
            },
            progress,
        )
    }

    /// [`validate`](Self::validate) of the checksums alone: every buffer
    /// against the checksum the header records, every mismatch reported
    /// (where [`verify_checksums`](Self::verify_checksums) stops at the
    /// first).
    pub(crate) fn validate_checksums(&self) -> Validation {
        self.check_each_tensor(
            DeferredChecks {
                sparse: false,
                checksums: true,
            },
            |_| {},
        )
    }

    /// `checks` on every tensor, one after the other.
    fn check_each_tensor(&self, checks: DeferredChecks, progress: impl Fn(u64)) -> Validation {
        let mut report = Validation {
            problems: Vec::new(),
            checksummed: checks.checksums.then_some(0),
        };
        // A tensor none of whose checks reads its bytes is not fetched: a
        // file read through a source costs no more than a mapped one does.
        for t in self.tensors().filter(|t| checks.read_data_of(t)) {
            let bytes = t.byte_length();
            let checked = self.with_data(t, |t| check(t, checks));
            progress(bytes);
            match checked {
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
    /// map, bytes in memory) is read in first ([`read_all`](Self::read_all)),
    /// then checked in the file's order on several threads, each a
    /// contiguous run of the data; a file read through a source streams as
    /// [`validate`](Self::validate) does.
    pub fn verify_checksums(&self) -> Result<bool> {
        Ok(self.count_verified_checksums()? > 0)
    }

    /// [`verify_checksums`](Self::verify_checksums), counting: how many
    /// tensors matched the checksums they record (what a sharded
    /// checkpoint's report adds up over its members).
    pub(crate) fn count_verified_checksums(&self) -> Result<usize> {
        if self.bytes().is_some() {
            return self.verify_in_place();
        }
        let mut verified = 0;
        for t in self.tensors() {
            verified += usize::from(self.with_data(t, |t| t.verify_checksum())?);
        }
        Ok(verified)
    }

    /// Verifies a file in place (a map, bytes in memory): reads it in (the
    /// pages not in memory yet, on several threads), then checks it in the
    /// file's order on one thread per core, each a contiguous run of the
    /// data.
    ///
    /// Why not check while reading in: measured cold on 1 GiB, checksums
    /// computed by the reading threads as their pieces came in took 0.96 s,
    /// by two threads beside the readers 1.05 s, and reading in first then
    /// checking 0.72 s (the load alone: 0.60 s). On two cores the
    /// checksums' memory reads slow the page-cache fills they overlap.
    fn verify_in_place(&self) -> Result<usize> {
        self.read_all()?;
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
        let verified = AtomicUsize::new(0);
        let size = |o: &(u64, u64, usize)| usize::try_from(o.1).unwrap_or(usize::MAX);
        in_runs(order, size, default_threads(), |(_, _, i)| {
            if reader.tensor_at(i).verify_checksum()? {
                verified.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), Error>(())
        })?;
        Ok(verified.into_inner())
    }
}

/// Which of the checks opening leaves for later to run.
#[derive(Debug, Clone, Copy)]
struct DeferredChecks {
    /// The index contents of sparse tensors.
    sparse: bool,
    /// Every buffer against its recorded checksum.
    checksums: bool,
}

impl DeferredChecks {
    /// Whether a check of `t` reads its bytes: the index contents of a
    /// sparse tensor, the buffers of one that records checksums or digests.
    fn read_data_of(self, t: &TensorRef<'_>) -> bool {
        let sparse = matches!(
            t.layout(),
            Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. }
        );
        let recorded = t.checksums().is_some() || t.records_digests();
        (self.sparse && sparse) || (self.checksums && recorded)
    }
}

/// One tensor's checks; whether its checksums were verified.
fn check(t: TensorRef<'_>, checks: DeferredChecks) -> Result<bool> {
    if checks.sparse {
        t.check_sparse_index()?;
    }
    if checks.checksums {
        return t.verify_checksum();
    }
    Ok(false)
}
