//! The CLI on a file written by the released 1.0 format: `inspect --json`
//! prints exactly the checked-in expectation and `validate` accepts it.

use std::path::Path;
use std::process::Command;

fn golden(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/v1.0").join(name)
}

#[test]
fn inspect_json_matches_the_v1_0_expectation() {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(["inspect", "--json"])
        .arg(golden("example.hurray"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(golden("example.json")).unwrap()).unwrap();
    assert_eq!(got, want);
    assert_eq!(got["tensors"][3]["shape"][0], "?", "a dynamic dim prints as \"?\"");
    assert_eq!(got["tensors"][1]["shape"][1], 0, "an empty dim prints as 0");
}

#[test]
fn validate_accepts_the_v1_0_example() {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray")).arg("validate").arg(golden("example.hurray")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}
