//! `File::read` and `read_all` on a mapped file: the pages asked for come
//! into memory (the kernel's own answer, `mincore`; the call starts their
//! reads and returns, so the test waits for them, up to a minute), those not
//! asked for are not read, and the bytes are the file's. The file's pages are
//! dropped from the page cache first (`posix_fadvise(DONTNEED)` after an
//! fsync); where the file system keeps them anyway (tmpfs), nothing can be
//! observed and the test says so.
#![cfg(target_os = "linux")]

use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use std::os::fd::AsRawFd;
use std::path::Path;

const PAGE: usize = 4096;
/// The tensors and their f32 elements: `a` (48 MiB) is far longer than the
/// kernel's read-around of a page fault (half of the device's readahead, 4
/// MiB here) reaches, and `b` (20 MiB) spans three 8 MiB pieces.
const TENSORS: [(&str, usize); 3] = [("a", 12 << 20), ("b", 5 << 20), ("c", 1 << 20)];

fn write(path: &Path) -> Vec<Vec<f32>> {
    let mut w = Writer::create(path).unwrap();
    let mut all = Vec::new();
    for (i, (name, len)) in TENSORS.into_iter().enumerate() {
        let data: Vec<f32> = (0..len).map(|j| (i + j) as f32).collect();
        let desc = TensorDescriptor::new(name, ElementType::Float32, shape(&[len as u64]));
        w.add_tensor(&desc, &[hurray::as_bytes(&data)]).unwrap();
        all.push(data);
    }
    w.finish().unwrap();
    all
}

/// The test file (in a directory that lives as long as the result), its
/// pages dropped from the page cache, then opened; None, said, where the
/// file system keeps the pages.
fn dropped() -> Option<(tempfile::TempDir, File, Vec<Vec<f32>>)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.hurray");
    let data = write(&path);
    if !drop_pages(&path) {
        eprintln!("this file system keeps the file's pages: nothing to observe");
        return None;
    }
    let file = File::open(&path).unwrap();
    Some((dir, file, data))
}

/// Drops the file's pages from the page cache; false where they stay.
/// Pages still under writeback are not dropped: retried a few times.
fn drop_pages(path: &Path) -> bool {
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    for _ in 0..20 {
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0, "posix_fadvise");
        let file = File::open(path).unwrap();
        if resident(file.bytes().unwrap()) < 0.05 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// The fraction of the pages under `bytes` (part of a map) in memory.
fn resident(bytes: &[u8]) -> f64 {
    let start = bytes.as_ptr() as usize / PAGE * PAGE;
    let end = (bytes.as_ptr() as usize + bytes.len()).div_ceil(PAGE) * PAGE;
    let mut vec = vec![0u8; (end - start) / PAGE];
    // SAFETY: `start..end` is the page-aligned cover of `bytes`, which lies
    // in a live map; `vec` has one byte per page of it, as mincore writes.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&v| v & 1 == 1).count() as f64 / vec.len() as f64
}

/// Waits until every page under `bytes` is in memory; false after a minute.
fn comes_in(bytes: &[u8]) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while resident(bytes) < 1.0 {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

fn values<'f>(file: &'f File, name: &str) -> &'f [u8] {
    let t = file.get(name).unwrap();
    let (at, len) = t
        .buffer_range(hurray::descriptor::BufferRole::Values)
        .unwrap();
    &file.bytes().unwrap()[at as usize..(at + len) as usize]
}

#[test]
#[cfg_attr(miri, ignore = "mincore and posix_fadvise are foreign calls")]
fn read_all_reads_every_page_of_a_mapped_file_in() {
    let Some((_dir, file, data)) = dropped() else {
        return;
    };
    assert!(resident(file.bytes().unwrap()) < 0.05);
    file.read_all().unwrap();
    assert!(
        comes_in(file.bytes().unwrap()),
        "{}",
        resident(file.bytes().unwrap())
    );
    for ((name, _), want) in TENSORS.iter().zip(&data) {
        assert_eq!(values(&file, name), hurray::as_bytes(want));
    }
}

#[test]
#[cfg_attr(miri, ignore = "mincore and posix_fadvise are foreign calls")]
fn read_reads_in_the_named_tensors_only() {
    let Some((_dir, file, data)) = dropped() else {
        return;
    };
    file.read(&["b"]).unwrap();
    assert!(
        comes_in(values(&file, "b")),
        "{}",
        resident(values(&file, "b"))
    );
    // The kernel reads around and ahead of b; the first half of a, far
    // from b, stays on disk.
    let a = values(&file, "a");
    assert!(resident(&a[..a.len() / 2]) < 0.05);
    assert_eq!(values(&file, "b"), hurray::as_bytes(&data[1]));
    let e = file.read(&["b", "absent"]).unwrap_err();
    assert_eq!(e.kind(), "NotFound");
    assert!(e.to_string().contains("absent"), "{e}");
}
