//! `hurray from-mlir` on input that crashes MLIR 22 itself (its text parser
//! segfaults, its bytecode reader aborts): a clear error and exit status 1,
//! never a signal, and no output.
#![cfg(feature = "mlir")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `hurray from-mlir INPUT -o DIR/out.hurray` (INPUT relative to the
/// workspace root); returns the temp dir, the output path and what it printed.
fn from_mlir(input: &str) -> (tempfile::TempDir, PathBuf, Output) {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(input);
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.hurray");
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("from-mlir")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    (dir, output, out)
}

#[test]
fn mlir_parser_segfault_becomes_an_error() {
    crash_becomes_an_error("mlir/tests/data/mlir22_parser_segv.mlir");
}

#[test]
fn mlir_bytecode_abort_becomes_an_error() {
    crash_becomes_an_error("mlir/tests/data/mlir22_bytecode_reader_oom.mlirbc");
}

fn crash_becomes_an_error(input: &str) {
    let (dir, output, out) = from_mlir(input);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("malformed in a way MLIR 22 does not report"),
        "{stderr}"
    );
    assert!(!output.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file is left"
    );
}

#[test]
fn the_example_lowers_through_the_child_process() {
    let (_dir, output, out) = from_mlir("examples/mlp.mlir");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = hurray::File::open(&output).unwrap();
    assert_eq!(
        file.tensor("fc2.pruned").unwrap().dims(),
        hurray::shape(&[0, 16])
    );
}
