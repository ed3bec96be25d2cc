//! `hurray opt`: MLIR pass pipelines with the Hurray passes from the CLI, on
//! the bundled example and a real producer's IR; the file the export writes
//! passes `hurray validate`, and the import restores the module.
#![cfg(feature = "mlir")]

mod common;

use common::assert_ok;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hurray(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .unwrap()
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn round_trip(input: &Path, dir: &Path, name: &str) -> (String, String) {
    let weights = dir.join(format!("{name}.hurray"));
    let exported = dir.join(format!("{name}.ref.mlir"));
    let imported = dir.join(format!("{name}.back.mlir"));
    let reprinted = dir.join(format!("{name}.orig.mlir"));
    assert_ok(&hurray(&[
        "opt",
        input.to_str().unwrap(),
        "-o",
        exported.to_str().unwrap(),
        &format!(
            "--pass-pipeline=builtin.module(hurray-export-constants{{file={} inline-small=false}})",
            weights.display()
        ),
    ]));
    let out = hurray(&["validate", "--checksums", weights.to_str().unwrap()]);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(": ok (") && stdout.contains("match their checksums"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&exported).unwrap();
    assert!(text.contains("dense_resource<\"hurray."), "{text}");
    assert_ok(&hurray(&[
        "opt",
        exported.to_str().unwrap(),
        "-o",
        imported.to_str().unwrap(),
        "--pass-pipeline=builtin.module(hurray-import-constants)",
    ]));
    // The input as the same MLIR prints it, through an empty pipeline.
    assert_ok(&hurray(&[
        "opt",
        input.to_str().unwrap(),
        "-o",
        reprinted.to_str().unwrap(),
        "--pass-pipeline=builtin.module()",
    ]));
    let read = |p: &Path| {
        hurray_mlir::passes::canonical_resource_names(&std::fs::read_to_string(p).unwrap())
    };
    (read(&imported), read(&reprinted))
}

#[test]
fn export_and_import_round_trip_the_example_and_torch_mlir_ir() {
    let dir = tempfile::tempdir().unwrap();
    for (rel, name) in [
        ("examples/mlp.mlir", "example"),
        ("mlir/tests/fixtures/torch/mlp.linalg.mlir", "linalg"),
    ] {
        let (imported, original) = round_trip(&repo(rel), dir.path(), name);
        assert_eq!(imported, original, "{rel}");
    }
}

#[test]
fn pipeline_errors_name_the_pipeline_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.mlir");
    let input = repo("examples/mlp.mlir");
    for (pipeline, expected) in [
        (
            "builtin.module(no-such-pass)",
            "'no-such-pass' does not refer to a registered pass",
        ),
        (
            "builtin.module(hurray-import-constants)",
            "no file: pass file=PATH, or give the module a hurray.file attribute",
        ),
    ] {
        let out = hurray(&[
            "opt",
            input.to_str().unwrap(),
            "-o",
            out_path.to_str().unwrap(),
            &format!("--pass-pipeline={pipeline}"),
        ]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(expected) && stderr.contains(pipeline),
            "{stderr}"
        );
        assert!(!out_path.exists());
    }
}
