//! `AtomicFile`, the one atomic writer every front door uses: nothing at the
//! destination before commit, no temporary left after a drop, and the mode
//! of any new file (what `touch` gives under the same umask).

use hurray::{
    ElementType, TensorDescriptor,
    atomic::{AtomicFile, Durability},
    shape,
};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// This process's umask, as Linux reports it.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

#[test]
fn nothing_appears_before_commit_and_the_temp_goes_on_drop() {
    // Skipping the fsyncs changes what survives a power loss, never what a
    // reader sees: both durabilities are atomic.
    for durability in [Durability::Synced, Durability::RenameOnly] {
        atomic_as(durability);
    }
}

fn atomic_as(durability: Durability) {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.bin");
    let mut f = AtomicFile::create_with(&dest, durability).unwrap();
    f.write_all(b"abc").unwrap();
    assert!(!dest.exists());
    assert!(f.temp_path().starts_with(dir.path()));
    drop(f);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    std::fs::write(&dest, b"old").unwrap();
    let mut f = AtomicFile::create_with(&dest, durability).unwrap();
    f.write_all(b"new").unwrap();
    assert_eq!(
        std::fs::read(&dest).unwrap(),
        b"old",
        "the old file stays until commit"
    );
    f.commit().unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn mode_is_what_touch_gives_under_the_same_umask() {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours");
    let touched = dir.path().join("touched");
    AtomicFile::create(&ours).unwrap().commit().unwrap();
    let written = dir.path().join("written.hurray");
    hurray::Writer::create(&written).unwrap().finish().unwrap();
    let mask = umask();
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("umask {mask:03o} && touch \"$0\""))
        .arg(&touched)
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(mode(&ours), mode(&touched), "umask {mask:03o}");
    assert_eq!(mode(&ours), 0o666 & !mask);
    assert_eq!(
        mode(&written),
        mode(&touched),
        "Writer::create goes through AtomicFile"
    );
}

#[test]
fn a_missing_directory_is_an_io_error_naming_it() {
    let err = AtomicFile::create("/nonexistent-dir/x.hurray").unwrap_err();
    assert_eq!(err.kind(), "Io");
    assert!(err.to_string().contains("/nonexistent-dir"), "{err}");
}

/// Bytes numbered by their position, from `at`.
fn numbered(at: usize, len: usize) -> Vec<u8> {
    (at..at + len).map(|i| (i % 251) as u8).collect()
}

/// How many of the file's pages are in the page cache (`mincore` of a map).
fn resident_pages(path: &Path) -> usize {
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    // SAFETY: a read-only map of a file no one writes while it lives; only
    // its address is used (by mincore), never its bytes.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let mut residency = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `map` is a live mapping of `len` bytes and `residency` has
    // one byte per 4 KiB page of it (the page size of the machines tested).
    let rc = unsafe { libc::mincore(map.as_ptr() as *mut _, len, residency.as_mut_ptr()) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    residency.iter().filter(|&&r| r & 1 == 1).count()
}

/// Whether the file system of `dir` opens files for direct writes.
fn takes_direct_writes(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("probe");
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(probe);
    opened
}

/// A durable file's bytes, written in pieces of every size (a flush in the
/// middle, windows crossed, a tail shorter than a block), are the bytes
/// handed over, and the file is as long as they are. Where the file system
/// takes direct writes, they never entered the page cache; a file written
/// without the fsyncs is in it.
#[test]
fn a_durable_file_is_written_around_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    for durability in [Durability::Synced, Durability::RenameOnly] {
        let dest = dir.path().join(format!("{durability:?}.bin"));
        let mut f = AtomicFile::create_with(&dest, durability).unwrap();
        let direct = f.is_direct();
        if durability == Durability::Synced {
            assert_eq!(
                direct,
                takes_direct_writes(dir.path()),
                "direct where allowed"
            );
        }
        let mut at = 0;
        for (i, len) in [3, 4093, 1, (2 << 20) + 5, 0, 6 << 20, 777]
            .into_iter()
            .enumerate()
        {
            f.write_all(&numbered(at, len)).unwrap();
            at += len;
            if i == 1 {
                f.flush().unwrap();
            }
        }
        f.commit().unwrap();
        // Before anything reads it: what the write left in the page cache.
        let resident = resident_pages(&dest);
        let written = std::fs::read(&dest).unwrap();
        assert_eq!(written.len(), at, "{durability:?}");
        assert!(written == numbered(0, at), "{durability:?}: bytes differ");
        match (durability, direct) {
            (Durability::RenameOnly, _) => {
                assert!(!direct);
                assert_eq!(
                    resident,
                    at.div_ceil(4096),
                    "written through the page cache"
                );
            }
            (_, true) => assert_eq!(resident, 0, "a durable file stays out of the page cache"),
            (_, false) => eprintln!(
                "{}: no direct writes on this file system",
                dir.path().display()
            ),
        }
    }
}

/// `Writer::create` writes a durable file the same way, and a file of the
/// same tensors reads back equal however it was written.
#[test]
fn a_durable_hurray_file_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..(3 << 20) / 4 + 17).map(|i| i as f32).collect();
    let mut files = Vec::new();
    for durability in [Durability::Synced, Durability::RenameOnly] {
        let path = dir.path().join(format!("{durability:?}.hurray"));
        let mut w = hurray::Writer::create_with(&path, durability).unwrap();
        for (name, v) in [("a", &values[..5]), ("b", &values[..])] {
            let desc = TensorDescriptor::new(name, ElementType::Float32, shape(&[v.len() as u64]));
            w.add_tensor(&desc, &[bytemuck::cast_slice(v)]).unwrap();
        }
        w.finish().unwrap();
        files.push(std::fs::read(&path).unwrap());
        let f = hurray::File::open(&path).unwrap();
        assert!(f.verify_checksums().unwrap());
        assert_eq!(
            f.tensor("b").unwrap().as_slice::<f32>().unwrap(),
            &values[..]
        );
    }
    assert!(files[0] == files[1], "the same bytes either way");
}
