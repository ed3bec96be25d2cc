//! `hurray convert` to and from IREE parameter archives, on archives IREE's
//! own writers made (`fixtures/irpa/make_fixtures.py`: iree.runtime's NumPy
//! helper and iree-turbine's `save_module_parameters`): every entry arrives
//! with the dtype, shape and bytes recorded in `expected.json`, an entry
//! without metadata as bytes, and Hurray -> IRPA -> Hurray gives the same
//! tensors. IREE itself reads the archives `convert` writes in
//! python/tests/test_iree.py.

mod common;

use common::{
    assert_conversion_refused, assert_shape_and_bytes, convert, convert_err, mutants, unhex,
};
use hurray::File;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/irpa")
}

/// Hurray's name for a NumPy/PyTorch dtype name of the fixtures.
fn hurray_name(dtype: &str) -> &'static str {
    match dtype {
        "float32" => "f32",
        "float16" => "f16",
        "bfloat16" => "bf16",
        "float64" => "f64",
        "int8" => "i8",
        "uint8" => "u8",
        "uint16" => "u16",
        "int64" => "i64",
        "bool" => "bool",
        other => panic!("no fixture has {other}"),
    }
}

fn check_against_expected(file: &File, archive: &str) {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("expected.json")).unwrap()).unwrap();
    let tensors = expected[archive].as_object().unwrap();
    assert_eq!(file.tensors().count(), tensors.len(), "{archive}");
    for (name, want) in tensors {
        let t = file.tensor(name).unwrap();
        let dtype = want["dtype"].as_str().unwrap();
        assert_eq!(t.element_type().name(), hurray_name(dtype), "{name}");
        let mut bytes = unhex(want["bytes"].as_str().unwrap());
        if dtype == "bool" {
            bytes = hurray::pack::pack_codes(bytes, 1);
        }
        assert_shape_and_bytes(file, name, want, &bytes);
    }
}

#[test]
fn archives_iree_wrote_convert_with_their_types_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for archive in ["numpy.irpa", "torch.irpa"] {
        let out = dir.path().join(format!("{archive}.hurray"));
        convert(&fixtures().join(archive), &out);
        let file = File::open(&out).unwrap();
        check_against_expected(&file, archive);
        // And back: an archive of the same entries, which converts to the same tensors.
        let back = dir.path().join(format!("back.{archive}"));
        convert(&out, &back);
        let again = dir.path().join(format!("again.{archive}.hurray"));
        convert(&back, &again);
        check_against_expected(&File::open(&again).unwrap(), archive);
        // Every entry's data is 64-byte aligned, as IREE places it.
        let bytes = std::fs::read(&back).unwrap();
        assert_eq!(bytes.len() % 4096, 0);
        assert_eq!(&bytes[..4], b"IRPA");
    }
}

#[test]
fn bad_archives_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixtures().join("numpy.irpa")).unwrap();
    let out = dir.path().join("out.hurray");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"IRPB".iter().chain(&good[4..]).copied().collect(),
            "no IRPA magic",
        ),
        (good[..60].to_vec(), "outside"),
        (good[..400].to_vec(), "outside"),
        (
            {
                // The entry table claims more entries than it holds.
                let mut b = good.clone();
                b[32..40].copy_from_slice(&1000u64.to_le_bytes());
                b
            },
            "outside",
        ),
        (
            {
                // Two entries with one name.
                let mut b = good.clone();
                let name: Vec<u8> = b[96 + 20..96 + 36].to_vec();
                b[176 + 20..176 + 36].copy_from_slice(&name);
                b
            },
            "appears twice",
        ),
        (
            {
                // Metadata claimed longer than the limit (entries may share it).
                let mut b = good.clone();
                b[96 + 44..96 + 52].copy_from_slice(&(2u64 << 20).to_le_bytes());
                b
            },
            "the limits are",
        ),
        (
            {
                // A linked archive.
                let mut b = good.clone();
                b[16..24].copy_from_slice(&4096u64.to_le_bytes());
                b
            },
            "linked",
        ),
    ];
    for (i, (bytes, want)) in cases.into_iter().enumerate() {
        assert_conversion_refused(&dir.path().join(format!("bad{i}.irpa")), &bytes, &out, want);
    }
    // Sub-byte types have no NumPy dtype an archive could name.
    let packed = dir.path().join("packed.hurray");
    let mut w = hurray::Writer::create(&packed).unwrap();
    let desc = hurray::TensorDescriptor::new("q", hurray::ElementType::Int4, hurray::shape(&[4]));
    w.add_tensor(&desc, &[&[0x21, 0x43]]).unwrap();
    w.finish().unwrap();
    let message = convert_err(&packed, &dir.path().join("packed.irpa"));
    assert!(
        message.contains("\"q\"") && message.contains("IRPA"),
        "{message}"
    );
}

#[test]
fn mutated_archives_are_errors_or_archives_never_panics() {
    // What the fuzz target does, over 3,000 mutants of an archive IREE wrote.
    let base = std::fs::read(fixtures().join("numpy.irpa")).unwrap();
    for m in mutants(&base, 0x2545_f491_4f6c_dd1d, 3000) {
        let _ = hurray_cli::convert::read_all("irpa", &m);
    }
}
