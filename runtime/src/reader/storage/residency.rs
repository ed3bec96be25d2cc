//! Whether a map's pages are in memory already (`mincore`), so reading in
//! skips what a warm file holds.

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
