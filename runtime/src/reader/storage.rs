//! Where a resident [`File`](super::File)'s bytes live: a shared read-only
//! map, a private copy-on-write map, or an aligned copy in memory. Each is
//! a [`Source`] whose bytes are also addressable in place: views borrow
//! them, and owned reads ([`File::fetch`](super::File::fetch)) go through
//! `pread` for a map (so a file truncated under the reader is an error,
//! not a fault) and copy for memory.

use super::stream_map::StreamMap;
use super::touch::touch;
use crate::aligned::AlignedBytes;
use crate::error::{Error, Result};
use crate::source::{Ends, PreadSource, ReadRequest, Source};
use std::ops::Range;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a map's pages are in memory already (`mincore`), so reading in
/// skips what a warm file holds.
mod residency {
    use super::PAGE;
    use std::ops::Range;

    /// Whether the bytes `range` of `map` (a file mapping, page-aligned;
    /// `range` within it and not empty) look to be in
    /// the page cache: their first and last pages are. A chunk judged wrongly
    /// costs time, never correctness: one judged in memory is faulted in as
    /// it is touched, one judged out is read again from the cache.
    #[cfg(target_os = "linux")]
    pub(super) fn in_memory(map: &[u8], range: Range<usize>) -> bool {
        if range.is_empty() || range.end > map.len() {
            return false;
        }
        let (first, last) = (range.start / PAGE * PAGE, (range.end - 1) / PAGE * PAGE);
        [first, last].into_iter().all(|at| page_in_memory(map, at))
    }

    #[cfg(target_os = "linux")]
    fn page_in_memory(map: &[u8], at: usize) -> bool {
        let mut answer = [0u8; 1];
        let addr = map[at..].as_ptr();
        if addr.align_offset(PAGE) != 0 {
            return false;
        }
        // SAFETY: `addr` is page-aligned (checked above) and points into `map`,
        // a live mapping this borrow keeps alive; mincore only looks up the
        // page tables and the page cache for [addr, addr + len) (a range inside
        // the mapping: `at < map.len()` and the mapping extends to a page
        // boundary), never reads or writes the mapped bytes, and writes one
        // byte per page of that range (len <= PAGE: at most one, on a system
        // with larger pages still one) into `answer`, which has room for it.
        let rc = unsafe { libc::mincore(addr as *mut libc::c_void, 1, answer.as_mut_ptr()) };
        rc == 0 && answer[0] & 1 == 1
    }

    /// Elsewhere nothing is judged in memory: every chunk is read in.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn in_memory(_map: &[u8], _range: Range<usize>) -> bool {
        false
    }

    #[cfg(all(test, target_os = "linux"))]
    mod tests {
        use super::*;
        use std::io::Write;

        /// A file just written is in the page cache; dropped from it, it is
        /// not; touched again, its pages are.
        #[test]
        #[cfg_attr(miri, ignore = "Miri cannot map files")]
        fn pages_in_and_out_of_the_page_cache() {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&vec![7u8; 8 * PAGE]).unwrap();
            f.sync_all().unwrap();
            // SAFETY: a read-only map of a file only this test holds.
            let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
            assert!(in_memory(&map, 0..8 * PAGE));
            // SAFETY: posix_fadvise only advises about the open descriptor.
            let rc = unsafe {
                libc::posix_fadvise(
                    std::os::fd::AsRawFd::as_raw_fd(&f),
                    0,
                    0,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            assert_eq!(rc, 0);
            assert!(!in_memory(&map, 0..8 * PAGE));
            assert!(map.iter().all(|&b| b == 7));
            assert!(in_memory(&map, 0..8 * PAGE));
            assert!(!in_memory(&map, 0..0), "an empty range");
            assert!(!in_memory(&map, 0..9 * PAGE), "past the end");
        }
    }
}

// The page size ranges read in are joined across and chunks are touched
// at (the smallest common one), defined beside the touch.
use super::touch::PAGE;

/// The bytes a reader thread of [`Storage::read_in`] asks the kernel for at
/// once.
const CHUNK: usize = 4 << 20;

/// How many sequential streams [`Storage::read_in`] reads with, a thread
/// each (measured: see `read_in`). Threads that mostly wait for the
/// device.
const READERS: usize = 8;

/// How many chunks, spread over what is read in, [`Storage::read_in`]
/// looks at first, to tell a file all in memory without looking at every
/// chunk.
const SAMPLED_CHUNKS: usize = 16;

/// `chunks` (in the file's order) cut into at most `streams` runs of
/// consecutive chunks, of about as many chunks each: the work of one
/// sequential stream each.
fn runs(chunks: &[Range<usize>], streams: usize) -> Vec<&[Range<usize>]> {
    if chunks.is_empty() || streams == 0 {
        return Vec::new();
    }
    chunks.chunks(chunks.len().div_ceil(streams)).collect()
}

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

    /// Reads the pages of `ranges` (byte ranges of the map, sorted by
    /// start) into memory and maps them, and returns when they are in:
    /// the chunks of [`CHUNK`] bytes not in the page cache yet are cut into
    /// [`READERS`] runs of consecutive chunks, and each run is read in by a
    /// thread of its own as one sequential stream in the file's order
    /// ([`stream_in`](Self::stream_in)); chunks already in memory are left
    /// to be mapped as they are first touched. Nothing for bytes in memory.
    ///
    /// Why: one stream (a plain map touched in order, what a loader that
    /// maps gets) keeps too little in flight for a virtual disk. Eight
    /// threads populating 4 MiB chunks through the one map (what this did
    /// before) keep enough in flight but share one readahead state, so each
    /// fault reads a small folio around it. Eight streams, each on an open
    /// file description of its own and touching what it read, do both.
    /// Measured on a cold 1 GiB file in fresh processes, strategies
    /// interleaved, medians of 4 (docs/head-to-head.md, "Eight streams"):
    /// right after the file's pages were dropped, eight streams 0.52 s, the
    /// eight threads through one map 0.80 s, one stream 0.71 s; after 4 s
    /// of quiet (the freed memory handed back to the host), 0.65 s, 0.76 s
    /// and 1.30 s. On a warm file populating costs more than it saves (a
    /// file of 2 MiB folios was mapped 2 MiB per fault as it was touched:
    /// 5 ms, where populating it took 8 ms; a file of 1 MiB folios, as the
    /// writer's, 11 ms against 67 ms), hence the look at what is in memory
    /// first (docs/head-to-head.md): at [`SAMPLED_CHUNKS`] chunks spread
    /// over the ranges, then, unless all of those are in, at every chunk.
    pub(super) fn read_in(&self, ranges: &[Range<usize>]) -> Result<()> {
        if matches!(self, Storage::Owned(_)) {
            return Ok(());
        }
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
        let bytes = self.bytes();
        let mut chunks = Vec::new();
        for r in joined {
            let mut at = r.start;
            while at < r.end {
                let end = (at + CHUNK).min(r.end);
                chunks.push(at..end);
                at = end;
            }
        }
        // A file all in memory (just written, or read before) is the common
        // warm case, and looking at every chunk of it costs two system
        // calls a chunk (0.5-1.9 ms for 1 GiB, measured: a tenth of a warm
        // load). A sample of the chunks tells it: when every sampled chunk
        // is in memory, the rest are taken to be too, and any that are not
        // come in as they are touched, as without `read_in`.
        let step = chunks.len().div_ceil(SAMPLED_CHUNKS).max(1);
        let warm = chunks
            .iter()
            .step_by(step)
            .chain(chunks.last())
            .all(|c| residency::in_memory(bytes, c.clone()));
        if warm {
            return Ok(());
        }
        // The chunks not in memory yet, in the file's order, cut into
        // runs of consecutive chunks, one a thread.
        let missing: Vec<Range<usize>> = chunks
            .into_iter()
            .filter(|c| !residency::in_memory(bytes, c.clone()))
            .collect();
        let runs = runs(&missing, READERS);
        let failed = AtomicBool::new(false);
        let work = |run: &[Range<usize>]| -> Result<()> {
            self.stream_in(run, &failed)
                .map_err(|e| Error::io("reading in", Path::new(self.location()), e))
        };
        match runs.as_slice() {
            [] => Ok(()),
            [run] => work(run),
            _ => std::thread::scope(|scope| {
                let handles: Vec<_> = runs.iter().map(|run| scope.spawn(|| work(run))).collect();
                handles
                    .into_iter()
                    .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            }),
        }
    }

    /// Reads the chunks of `run` (consecutive, in the file's order) in as
    /// one sequential stream, each chunk read into the page cache through
    /// a [`StreamMap`] when one can be had (else through this storage's
    /// own map) and then touched through this storage's own map, one byte
    /// a page ([`touch`]: a truncated page is an error, not a fault),
    /// before the next; stops early once `failed` is set, and sets it on
    /// an error.
    ///
    /// Why the touch: a page's first access from this machine's processor
    /// has a cost of its own (on a virtual machine, the host mapping
    /// memory it had taken back), paid at the touch, not when the device
    /// fills the page. Touched by the stream, right after its chunk came
    /// in, that cost overlaps the other streams' reads; left to the
    /// caller, it was paid after them, on one thread, and took 0.3-0.7 s
    /// of a 1 GiB load (docs/head-to-head.md, "Eight streams").
    fn stream_in(&self, run: &[Range<usize>], failed: &AtomicBool) -> std::io::Result<()> {
        let span = run.first().map_or(0, |c| c.start)..run.last().map_or(0, |c| c.end);
        let own = self.file().and_then(|f| StreamMap::new(f, span));
        let bytes = self.bytes();
        for chunk in run {
            if failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            let read = match &own {
                Some(own) => own.populate(chunk.clone()),
                None => self.populate(chunk.clone()),
            };
            if let Err(e) = read.and_then(|()| touch(&bytes[chunk.clone()])) {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Reads `piece` of the map into memory and maps it, returning when it
    /// is in.
    #[cfg(target_os = "linux")]
    fn populate(&self, piece: Range<usize>) -> std::io::Result<()> {
        super::stream_map::populate_with(|advice| self.advise(advice, piece.clone()))
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    fn populate(&self, piece: Range<usize>) -> std::io::Result<()> {
        self.advise(memmap2::Advice::WillNeed, piece)
    }

    #[cfg(not(unix))]
    fn populate(&self, _piece: Range<usize>) -> std::io::Result<()> {
        Ok(())
    }

    #[cfg(unix)]
    fn advise(&self, advice: memmap2::Advice, range: Range<usize>) -> std::io::Result<()> {
        match self {
            Storage::Mmap(m, _) => m.advise_range(advice, range.start, range.len()),
            Storage::CopyOnWrite(c, _) => c.map.advise_range(advice, range.start, range.len()),
            Storage::Owned(_) => Ok(()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chunk lands in exactly one run, in the file's order, and the
    /// runs are as even as the count allows.
    #[test]
    fn runs_cut_chunks_in_order() {
        let chunks: Vec<Range<usize>> = (0..10).map(|i| i * CHUNK..(i + 1) * CHUNK).collect();
        let cut = runs(&chunks, 4);
        assert_eq!(
            cut.iter().map(|r| r.len()).collect::<Vec<_>>(),
            [3, 3, 3, 1]
        );
        assert_eq!(cut.concat(), chunks);
        assert_eq!(runs(&chunks[..3], 8).len(), 3, "fewer chunks than streams");
        assert!(runs(&[], 8).is_empty());
        assert!(runs(&chunks, 0).is_empty());
    }

    /// A file dropped from the page cache is read in by the streams: after
    /// `read_in` every chunk is in memory, and the map reads the file's
    /// bytes; so is a part of a file, and nothing outside it.
    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "Miri cannot map files")]
    fn streams_read_a_cold_file_in() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        // Long enough that its last chunk lies beyond what the kernel's own
        // readahead may add past the part read below (up to twice
        // `read_ahead_kb`: 16 MiB on this project's machines).
        let len = 24 * CHUNK + 5 * PAGE + 17;
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&data).unwrap();
        f.as_file().sync_all().unwrap();
        let drop_cache = || {
            // SAFETY: posix_fadvise only advises about the open descriptor.
            let rc = unsafe {
                libc::posix_fadvise(f.as_file().as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
            };
            assert_eq!(rc, 0);
        };
        let in_memory = |bytes: &[u8], range: Range<usize>| {
            let mut at = range.start;
            while at < range.end {
                let end = (at + CHUNK).min(range.end);
                if !residency::in_memory(bytes, at..end) {
                    return false;
                }
                at = end;
            }
            true
        };
        // A map keeps the pages it touched in memory: each read-in gets a
        // map of its own, made after the drop.
        let storage = || {
            drop_cache();
            let file = std::fs::File::open(f.path()).unwrap();
            Storage::map(f.path(), file, MapMode::ReadOnly).unwrap()
        };

        let whole = storage();
        let bytes = whole.bytes();
        assert!(!residency::in_memory(bytes, 0..CHUNK));
        whole.read_in(std::slice::from_ref(&(0..len))).unwrap();
        assert!(in_memory(bytes, 0..len));
        assert!(bytes == data.as_slice());
        drop(whole);

        let part = 2 * CHUNK + 100..5 * CHUNK + 7;
        let some = storage();
        let bytes = some.bytes();
        some.read_in(std::slice::from_ref(&part)).unwrap();
        assert!(in_memory(bytes, part.clone()));
        assert!(!residency::in_memory(bytes, 23 * CHUNK..24 * CHUNK));
        assert!(bytes[part.clone()] == data[part]);
    }
}
