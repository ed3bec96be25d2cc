//! A writer killed mid-way leaves the destination untouched.
//!
//! Each test re-runs its own test binary as the child process (selected by an
//! environment variable): the child writes a tensor through
//! `Writer::create`, says "ready" and waits to be killed before `finish()`.

use hurray::{ElementType, TensorDescriptor, Writer, shape};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const CHILD_DEST: &str = "HURRAY_TEST_CHILD_DEST";

/// In the child: write, announce, wait to be killed. Never returns.
fn be_the_child(dest: &Path) -> ! {
    let mut w = Writer::create(dest).unwrap();
    let data = vec![7u8; 1 << 20];
    w.add_tensor(
        &TensorDescriptor::new("big", ElementType::UInt8, shape(&[1 << 20])),
        &[&data],
    )
    .unwrap();
    println!("\nready");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(120));
    unreachable!("the parent kills the child long before this");
}

fn kill_mid_write(test_name: &str, dest: &Path) {
    if let Some(d) = std::env::var_os(CHILD_DEST) {
        be_the_child(Path::new(&d));
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
        .env(CHILD_DEST, dest)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let ready = stdout
        .lines()
        .map_while(Result::ok)
        .any(|l| l.trim() == "ready");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ready, "the child wrote its tensor before being killed");
}

#[test]
fn killed_writer_leaves_no_destination() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.hurray");
    kill_mid_write("killed_writer_leaves_no_destination", &dest);
    assert!(!dest.exists(), "no partial destination file");
}

#[test]
fn killed_writer_leaves_old_destination_intact() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.hurray");
    std::fs::write(&dest, b"previous version").unwrap();
    kill_mid_write("killed_writer_leaves_old_destination_intact", &dest);
    assert_eq!(std::fs::read(&dest).unwrap(), b"previous version");
}
