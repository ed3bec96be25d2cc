//! Where a resident [`File`](super::File)'s bytes live: a shared read-only
//! map, a private copy-on-write map, or an aligned copy in memory. Each is
//! a [`Source`] whose bytes are also addressable in place: views borrow
//! them, and owned reads ([`File::fetch`](super::File::fetch)) go through
//! `pread` for a map (so a file truncated under the reader is an error,
//! not a fault) and copy for memory.

use crate::aligned::AlignedBytes;
use crate::error::{Error, Result};
use crate::source::{Ends, PIECE, PreadSource, ReadRequest, Source};
use std::ops::Range;
use std::path::Path;
use std::ptr::NonNull;

/// The threads that populate a map: they mostly wait on the device, so
/// their count is the depth of the queue they keep, not the cores. Measured
/// on a cold 1 GiB file (2 cores, a virtual disk): 1 thread 0.92-1.7 s,
/// 2: 0.73-0.98 s, 4: 0.73-0.82 s, 8: 0.70-0.87 s, 16: 0.65-0.82 s.
pub(super) const POPULATE_THREADS: usize = 8;

/// The page size populated ranges are joined across (the smallest common one).
const PAGE: usize = 4096;

/// How [`File::open_with`](super::File::open_with) maps a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MapMode {
    /// A shared, read-only map. Exports carry DLPack's read-only flag; a
    /// consumer that writes anyway faults.
    #[default]
    ReadOnly,
    /// A private map (`MAP_PRIVATE`, readable and writable). Consumers of an
    /// export may write: the first write to a page copies that page into
    /// this process, so the file never changes and other readers never see
    /// the write. The pages nobody writes stay shared with the page cache.
    CopyOnWrite,
}

#[derive(Debug)]
pub(super) enum Storage {
    /// A read-only map, and the open file for positioned reads.
    Mmap(memmap2::Mmap, PreadSource),
    /// A private, writable map, and the open file.
    CopyOnWrite(CowMap, PreadSource),
    /// An in-memory copy, 64-byte aligned so typed views line up.
    Owned(AlignedBytes),
}

/// A private map and a pointer to its first byte taken with write
/// permission, which exports hand to consumers that may write.
#[derive(Debug)]
pub(super) struct CowMap {
    map: memmap2::MmapMut,
    base: NonNull<u8>,
}

// SAFETY: `base` points into `map`, which `CowMap` owns and which moves
// with it (the mapping itself never moves); `MmapMut` is Send and Sync. This
// crate only offsets `base` and hands the result to consumers of an export;
// that their writes never overlap a reference this crate hands out is the
// contract of `File::open_with`, whoever holds the `CowMap`.
unsafe impl Send for CowMap {}
// SAFETY: as above: `&CowMap` reads the map through `&[u8]` only, under the
// same contract.
unsafe impl Sync for CowMap {}

impl Storage {
    /// Maps the open file `file` (of `path`, for messages) as `mode` says.
    pub(super) fn map(path: &Path, file: std::fs::File, mode: MapMode) -> Result<Storage> {
        let fail = |e| Error::io("mapping", path, e);
        match mode {
            MapMode::ReadOnly => {
                // SAFETY: the map is read-only (PROT_READ): nothing in this
                // process can write to it, and the bytes are only read through
                // `&[u8]`. Concurrent truncation by another process is the
                // caveat documented on `File::open`.
                let map = unsafe { memmap2::Mmap::map(&file) }.map_err(fail)?;
                Ok(Storage::Mmap(map, PreadSource::from_open(file, path)))
            }
            MapMode::CopyOnWrite => {
                // SAFETY: as for the read-only map, truncation included. The
                // map is MAP_PRIVATE: writes through it (by consumers of an
                // export, under `File::open_with`'s contract) copy the touched
                // page and never reach the file or another process.
                let mut map =
                    unsafe { memmap2::MmapOptions::new().map_copy(&file) }.map_err(fail)?;
                let base = NonNull::new(map.as_mut_ptr()).ok_or_else(|| {
                    fail(std::io::Error::other(
                        "the map of a non-empty file is at NULL",
                    ))
                })?;
                let pread = PreadSource::from_open(file, path);
                Ok(Storage::CopyOnWrite(CowMap { map, base }, pread))
            }
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mmap(m, _) => m,
            Storage::CopyOnWrite(c, _) => &c.map,
            Storage::Owned(a) => a.as_slice(),
        }
    }

    /// Reads the pages of `ranges` (byte ranges of the map, sorted by start) into
    /// memory and maps them, in pieces of [`PIECE`] on [`POPULATE_THREADS`]:
    /// afterwards, reading those bytes neither waits for the disk nor takes
    /// a page fault. Nothing for bytes in memory.
    ///
    /// Why: a load that maps and then reads tensors in the file's name order
    /// (not its data order) waits on readahead restarted at every tensor, on
    /// one thread; populating first reads the file in large sequential runs
    /// on every thread, and maps its pages in one call per piece instead of
    /// one fault per 16 pages (docs/performance.md, "Head to head").
    pub(super) fn populate(&self, ranges: &[Range<usize>]) -> Result<()> {
        let pread = match self {
            Storage::Mmap(_, f) | Storage::CopyOnWrite(_, f) => f,
            Storage::Owned(_) => return Ok(()),
        };
        // Neighbours within a page of each other (a tensor's buffers, small
        // tensors side by side) are one range: one call, not one each.
        let mut joined: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges.iter().filter(|r| !r.is_empty()) {
            match joined.last_mut() {
                Some(last) if r.start <= last.end.saturating_add(PAGE) => {
                    last.end = last.end.max(r.end);
                }
                _ => joined.push(r.clone()),
            }
        }
        let pieces: Vec<Range<usize>> = joined
            .iter()
            .flat_map(|r| {
                (r.start..r.end)
                    .step_by(PIECE)
                    .map(move |at| at..(at + PIECE).min(r.end))
            })
            .collect();
        crate::source::in_runs(pieces, |p| p.len(), POPULATE_THREADS, |p| self.advise(p))
            .map_err(|e| Error::io("reading in", Path::new(pread.location()), e))
    }

    /// Populates `piece` of this storage's map: `MADV_POPULATE_READ`, or,
    /// on a kernel older than 5.14 or a system without it, the asynchronous
    /// `MADV_WILLNEED`.
    #[cfg(unix)]
    fn advise(&self, piece: Range<usize>) -> std::io::Result<()> {
        use memmap2::Advice;
        let advise = |advice: Advice| match self {
            Storage::Mmap(m, _) => m.advise_range(advice, piece.start, piece.len()),
            Storage::CopyOnWrite(c, _) => c.map.advise_range(advice, piece.start, piece.len()),
            Storage::Owned(_) => Ok(()),
        };
        #[cfg(target_os = "linux")]
        match advise(Advice::PopulateRead) {
            // EINVAL: a kernel that does not know the advice.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
            done => return done,
        }
        advise(Advice::WillNeed)
    }

    #[cfg(not(unix))]
    fn advise(&self, _piece: Range<usize>) -> std::io::Result<()> {
        Ok(())
    }

    /// The open file behind a map; None for bytes in memory.
    pub(super) fn file(&self) -> Option<&std::fs::File> {
        match self {
            Storage::Mmap(_, f) | Storage::CopyOnWrite(_, f) => Some(f.file()),
            Storage::Owned(_) => None,
        }
    }

    /// A pointer to the first byte of `data` (a sub-slice of
    /// [`bytes`](Self::bytes)) that a consumer may write through, if this
    /// storage allows writes.
    pub(super) fn writable_ptr(&self, data: &[u8]) -> Option<NonNull<u8>> {
        let Storage::CopyOnWrite(c, _) = self else {
            return None;
        };
        let offset = (data.as_ptr() as usize).checked_sub(c.map.as_ptr() as usize)?;
        if offset.checked_add(data.len())? > c.map.len() {
            return None;
        }
        // SAFETY: `offset + data.len() <= map.len()` (checked above), so the
        // result stays inside the map `base` points to.
        Some(unsafe { c.base.add(offset) })
    }
}

impl Source for Storage {
    fn location(&self) -> &str {
        match self {
            Storage::Mmap(_, f) | Storage::CopyOnWrite(_, f) => f.location(),
            Storage::Owned(_) => "memory",
        }
    }

    fn read_ends(&self, prefix: u64, suffix: u64) -> std::io::Result<Ends> {
        Ok(crate::source::ends_of(self.bytes(), prefix, suffix))
    }

    fn read_many(&self, requests: &mut [ReadRequest<'_>]) -> std::io::Result<()> {
        match self {
            // The file, not the map: what another process truncated is an
            // error here, and a copy-on-write map's local writes stay local.
            Storage::Mmap(_, f) | Storage::CopyOnWrite(_, f) => f.read_many(requests),
            Storage::Owned(a) => crate::source::copy_many(a.as_slice(), requests),
        }
    }

    fn current_len(&self) -> std::io::Result<u64> {
        match self {
            Storage::Mmap(_, f) | Storage::CopyOnWrite(_, f) => f.current_len(),
            Storage::Owned(a) => Ok(a.as_slice().len() as u64),
        }
    }
}
