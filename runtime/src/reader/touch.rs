//! Accessing every page of a mapped range once, where a truncation of the
//! file is an error and not a fault (a step of
//! [`Storage::read_in`](super::storage::Storage::read_in)).

/// The page size touched at (the smallest common one); read-in joins
/// ranges and samples residency at it too.
pub(super) const PAGE: usize = 4096;

/// How many pages one `process_vm_readv` call reads a byte of: the
/// kernel's limit on the pieces of one call (`IOV_MAX`).
#[cfg(target_os = "linux")]
const PIECES: usize = 1024;

/// Reads one byte of every page `bytes` (part of a file's map) spans, its
/// first byte, one every [`PAGE`] bytes and its last, so each page has
/// been accessed by this process once; nothing for an empty range.
///
/// The reads go through the kernel (`process_vm_readv` on this process),
/// so a page a truncation of the file took away is an `EFAULT` error here,
/// where a plain read of the map would fault the process. Where the call
/// is refused (a sandbox that denies it, a kernel without it), nothing is
/// touched: the pages are accessed later, when they are used.
#[cfg(target_os = "linux")]
pub(super) fn touch(bytes: &[u8]) -> std::io::Result<()> {
    let offsets: Vec<usize> = (0..bytes.len())
        .step_by(PAGE)
        .chain(bytes.len().checked_sub(1))
        .collect();
    // A process id fits pid_t: the kernel hands out no larger one.
    let me = std::process::id() as libc::pid_t;
    let mut sink = [0u8; PIECES];
    for piece in offsets.chunks(PIECES) {
        let remote: Vec<libc::iovec> = piece
            .iter()
            .map(|&at| libc::iovec {
                iov_base: bytes[at..].as_ptr() as *mut libc::c_void,
                iov_len: 1,
            })
            .collect();
        let local = libc::iovec {
            iov_base: sink.as_mut_ptr().cast(),
            iov_len: piece.len(),
        };
        // SAFETY: the call reads from this process's own memory, at
        // addresses inside `bytes` (every offset is < bytes.len()), one
        // byte each, and writes as many bytes into `sink` (piece.len() <=
        // PIECES, its size); both iovec arrays live through the call and
        // their lengths are passed with them. A page the kernel cannot
        // read (a truncated file's) makes the call fail or stop short; it
        // never faults this process.
        let read = unsafe {
            libc::process_vm_readv(
                me,
                &local,
                1,
                remote.as_ptr(),
                remote.len() as libc::c_ulong,
                0,
            )
        };
        match read {
            n if n == piece.len() as isize => {}
            -1 => {
                let e = std::io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::ENOSYS | libc::EPERM) => Ok(()),
                    _ => Err(e),
                };
            }
            _ => return Err(std::io::Error::from_raw_os_error(libc::EFAULT)),
        }
    }
    Ok(())
}

/// Elsewhere nothing is touched: the pages are accessed when used.
#[cfg(not(target_os = "linux"))]
pub(super) fn touch(_bytes: &[u8]) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;

    /// Any range of a map is touched, empty or not, page-aligned or not.
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map files")]
    fn touches_any_range_of_a_map() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![3u8; 3000 * PAGE + 5]).unwrap();
        // SAFETY: a read-only map of a file only this test holds.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        touch(&map).unwrap();
        touch(&map[PAGE - 1..PAGE + 1]).unwrap();
        touch(&map[..0]).unwrap();
    }

    /// Pages a truncation took away are an error, not a fault.
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map files")]
    fn a_truncated_page_is_an_error() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![3u8; 8 * PAGE]).unwrap();
        // SAFETY: a read-only map of a file only this test holds; the test
        // truncates it, and reads the pages beyond only through `touch`.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        f.set_len(2 * PAGE as u64).unwrap();
        touch(&map[..2 * PAGE]).unwrap();
        let e = touch(&map[..4 * PAGE]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT), "{e}");
    }
}
