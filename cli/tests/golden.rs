//! The CLI on files written by the released formats (1.0 to 1.5): `inspect
//! --json` prints exactly the checked-in expectation and `validate` accepts them.

mod common;

use common::assert_ok;
use std::path::Path;
use std::process::Command;

fn golden(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(name)
}

#[test]
fn inspect_json_matches_the_v1_0_expectation() {
    inspect_json_matches("v1.0");
}

#[test]
fn inspect_json_matches_the_v1_1_expectation() {
    inspect_json_matches("v1.1");
}

#[test]
fn inspect_json_matches_the_v1_2_expectation() {
    inspect_json_matches("v1.2");
}

#[test]
fn inspect_json_matches_the_v1_4_expectation() {
    inspect_json_matches("v1.4");
}

/// A 1.4 file converted from GGUF (Q5_0 and Q4_K, held as codes with
/// two-level scales) still converts back to the very GGUF bytes.
#[test]
fn v1_4_gguf_conversion_writes_the_same_gguf_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("back.gguf");
    let status = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("convert")
        .arg(golden("v1.4/gguf_q5_0_q4_k.hurray"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let original =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf/unsupported.gguf");
    assert_eq!(
        std::fs::read(out).unwrap(),
        std::fs::read(original).unwrap()
    );
}

#[test]
fn inspect_json_matches_the_v1_3_expectation() {
    inspect_json_matches("v1.3");
    // And the 1.3 sharded checkpoint's index: members, pieces, offsets.
    index_json_matches("v1.3");
}

#[test]
fn inspect_json_matches_the_v1_5_expectation() {
    inspect_json_matches("v1.5");
    // And the 1.5 sharded checkpoint's index: each member's identity too.
    index_json_matches("v1.5");
}

fn index_json_matches(version: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(["inspect", "--json"])
        .arg(golden(&format!("{version}/sharded/model.hurray")))
        .output()
        .unwrap();
    assert_ok(&out);
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden(&format!("{version}/sharded/model.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(got, want);
}

fn inspect_json_matches(version: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(["inspect", "--json"])
        .arg(golden(&format!("{version}/example.hurray")))
        .output()
        .unwrap();
    assert_ok(&out);
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden(&format!("{version}/example.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(
        got["tensors"][3]["shape"][0], "?",
        "a dynamic dim prints as \"?\""
    );
    assert_eq!(got["tensors"][1]["shape"][1], 0, "an empty dim prints as 0");
}

#[test]
fn validate_accepts_the_released_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .arg("validate")
        .arg(golden("v1.0/example.hurray"))
        .arg(golden("v1.1/example.hurray"))
        .arg(golden("v1.2/example.hurray"))
        .arg(golden("v1.2/quant_microscaling.hurray"))
        .arg(golden("v1.2/quant_offsets.hurray"))
        .arg(golden("v1.3/example.hurray"))
        .arg(golden("v1.3/sharded/model.hurray"))
        .arg(golden("v1.4/example.hurray"))
        .arg(golden("v1.4/quant_two_level.hurray"))
        .arg(golden("v1.4/quant_code_table.hurray"))
        .arg(golden("v1.4/quant_group_index.hurray"))
        .arg(golden("v1.4/quant_block_formats.hurray"))
        .arg(golden("v1.4/gguf_q5_0_q4_k.hurray"))
        .arg(golden("v1.5/example.hurray"))
        .arg(golden("v1.5/sharded/model.hurray"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The text form names each quantization scheme with the runtime's spelling
/// (`QuantizationKind::name`), then its parameters and types.
#[test]
fn inspect_text_describes_quantization() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let inspect = |vector: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
            .arg("inspect")
            .arg(vectors.join(format!("{vector}.hurray")))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = inspect("quant_empty") + &inspect("quant_per_block");
    let v1_2 = inspect("quant_microscaling") + &inspect("quant_offsets");
    for needle in [
        "per_block(axis=1,block=32) f4e2m1fn->f32 scale=f8e8m0fnu zp=none",
        "tensor_scale=0.015625",
        "scale=f8e4m3fn zp=none tensor_scale=0.012345678173005581",
        "scale=f16 zp=none offset=f16",
    ] {
        assert!(v1_2.contains(needle), "{needle:?} not in:\n{v1_2}");
    }
    for line in [
        "axis1_empty  i8  [3,0]  dense  0 bytes  per_axis(axis=1) i8->f32 scale=f32 zp=none",
        "per_tensor_empty  i8  [0]  dense  0 bytes  per_tensor i8->f32 scale=f32 zp=i8",
        "i4  i4  [2,6]  dense  22 bytes  per_block(axis=1,block=4) i4->f32 scale=f32 zp=none",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
}
