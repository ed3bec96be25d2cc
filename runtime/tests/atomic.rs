//! `AtomicFile`, the one atomic writer every front door uses: nothing at the
//! destination before commit, no temporary left after a drop, and the mode
//! of any new file (what `touch` gives under the same umask).

use hurray::{AtomicFile, Durability};
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
