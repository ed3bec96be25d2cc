//! A map one reading-in thread reads its part of a file through
//! ([`Storage::read_in`](super::storage::Storage::read_in)).

use std::ops::Range;

/// A read-only map of part of a file over an open file description of its
/// own, through which one thread reads that part into the page cache as a
/// sequential stream. Nothing reads bytes through it: it is only advised
/// (`MADV_POPULATE_READ`), then dropped; the file's own map finds the pages
/// in the page cache.
///
/// Why a description of its own: the kernel keeps readahead state per open
/// file description. Threads faulting in different parts through one
/// description reset each other's state, so every fault looks random and
/// reads a small folio around it. A stream alone on its description grows
/// its readahead, and its folios, as a single sequential reader's do.
#[derive(Debug)]
pub(super) struct StreamMap {
    map: memmap2::Mmap,
    /// The file offset of the map's first byte.
    start: usize,
}

impl StreamMap {
    /// A map of `span` (byte offsets of `file`, not empty) over a new open
    /// file description of `file`'s file (`/proc/self/fd`); `None` where
    /// there is none to be had (no `/proc`, another system), and the
    /// caller reads through its own map instead. A description of another
    /// file could only cost time: nothing is read through the map.
    #[cfg(target_os = "linux")]
    pub(super) fn new(file: &std::fs::File, span: Range<usize>) -> Option<StreamMap> {
        use std::os::fd::AsRawFd;
        if span.is_empty() {
            return None;
        }
        let own = std::fs::File::open(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        // SAFETY: a read-only (PROT_READ) map that nothing in this process
        // writes, and that nothing reads either: it is only advised, so a
        // truncation of the file under it cannot fault a read.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(span.start as u64)
                .len(span.len())
                .map(&own)
        }
        .ok()?;
        Some(StreamMap {
            map,
            start: span.start,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn new(_file: &std::fs::File, _span: Range<usize>) -> Option<StreamMap> {
        None
    }

    /// Reads the bytes `piece` of the file (within the map's span) into
    /// the page cache, returning when they are in.
    #[cfg(target_os = "linux")]
    pub(super) fn populate(&self, piece: Range<usize>) -> std::io::Result<()> {
        let (at, len) = (piece.start - self.start, piece.len());
        populate_with(|advice| self.map.advise_range(advice, at, len))
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn populate(&self, _piece: Range<usize>) -> std::io::Result<()> {
        Ok(())
    }
}

/// Populates a range of a map through `advise` (which applies an advice to
/// that range): `MADV_POPULATE_READ`, returning when the pages are in; on a
/// kernel before 5.14, which cannot populate (`EINVAL`), `MADV_WILLNEED`,
/// and the first touches wait. The one place both maps' populate decides
/// this ([`StreamMap::populate`], `Storage::populate`).
#[cfg(target_os = "linux")]
pub(super) fn populate_with(
    advise: impl Fn(memmap2::Advice) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match advise(memmap2::Advice::PopulateRead) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => advise(memmap2::Advice::WillNeed),
        other => other,
    }
}
