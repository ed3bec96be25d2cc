//! `hurray convert` to and from ExecuTorch's `.ptd` files, on files
//! ExecuTorch's own export wrote (`fixtures/ptd/make_fixtures.py`): every
//! tensor arrives with the type, shape and bytes of the model's state dict
//! (`expected.json`), and `.ptd` -> Hurray -> `.ptd` -> Hurray gives the same
//! tensors. Bad `.ptd` files, built here as a hostile producer would, are
//! refused by name with nothing written. ExecuTorch itself runs the `.ptd`
//! files `convert` writes in python/tests/test_executorch.py.

mod common;

use common::{assert_conversion_refused, assert_shape_and_bytes, convert, mutants, unhex};
use hurray::{File, descriptor::BufferRole};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ptd")
}

fn check_against_expected(file: &File, fixture: &str) {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("expected.json")).unwrap()).unwrap();
    let tensors = expected[fixture].as_object().unwrap();
    assert_eq!(file.tensors().count(), tensors.len(), "{fixture}");
    for (name, want) in tensors {
        let t = file.tensor(name).unwrap();
        let dtype = match want["dtype"].as_str().unwrap() {
            "float32" => "f32",
            "bfloat16" => "bf16",
            "int8" => "i8",
            other => panic!("no fixture has {other}"),
        };
        assert_eq!(t.element_type().name(), dtype, "{name}");
        let bytes = unhex(want["bytes"].as_str().unwrap());
        assert_shape_and_bytes(file, name, want, &bytes);
    }
}

#[test]
fn files_executorch_wrote_convert_both_ways_with_their_types_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for fixture in ["mlp.ptd", "mixed.ptd"] {
        let out = dir.path().join(format!("{fixture}.hurray"));
        convert(&fixtures().join(fixture), &out);
        check_against_expected(&File::open(&out).unwrap(), fixture);
        let back = dir.path().join(format!("back.{fixture}"));
        convert(&out, &back);
        let bytes = std::fs::read(&back).unwrap();
        assert_eq!(&bytes[4..12], b"FT01FH01");
        let again = dir.path().join(format!("again.{fixture}.hurray"));
        convert(&back, &again);
        check_against_expected(&File::open(&again).unwrap(), fixture);
    }
}

/// One named tensor of a built file: key, segment, scalar type, sizes, dim order.
type Named<'a> = (&'a str, u32, i8, &'a [i32], &'a [u8]);

/// A `.ptd` file as a producer might write one: `segments` (offset, size)
/// over `data`, and the named tensors.
fn ptd(
    segments: &[(u64, u64)],
    named: &[Named<'_>],
    data: &[u8],
    segment_base_slack: u64,
) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let mut tables = Vec::new();
    for &(key, segment, scalar, sizes, order) in named {
        let key = fbb.create_string(key);
        let sizes = fbb.create_vector(sizes);
        let order = fbb.create_vector(order);
        let t = fbb.start_table();
        fbb.push_slot_always(6, sizes);
        fbb.push_slot_always(8, order);
        fbb.push_slot_always::<i8>(4, scalar);
        let layout = fbb.end_table(t);
        let t = fbb.start_table();
        fbb.push_slot_always(4, key);
        fbb.push_slot_always(8, layout);
        fbb.push_slot_always::<u32>(6, segment);
        tables.push(fbb.end_table(t));
    }
    let mut segs = Vec::new();
    for &(offset, size) in segments {
        let t = fbb.start_table();
        fbb.push_slot_always::<u64>(4, offset);
        fbb.push_slot_always::<u64>(6, size);
        segs.push(fbb.end_table(t));
    }
    let segs = fbb.create_vector(&segs);
    let tables = fbb.create_vector(&tables);
    let root = fbb.start_table();
    fbb.push_slot_always(6, segs);
    fbb.push_slot_always(8, tables);
    let root = fbb.end_table(root);
    fbb.finish(root, Some("FT01"));
    let fb = fbb.finished_data();
    let base = (fb.len() as u64 + 48).next_multiple_of(128);
    let mut out = Vec::new();
    out.extend_from_slice(&(u32::from_le_bytes(fb[..4].try_into().unwrap()) + 48).to_le_bytes());
    out.extend_from_slice(&fb[4..8]);
    out.extend_from_slice(b"FH01");
    out.extend_from_slice(&40u32.to_le_bytes());
    for v in [
        48,
        fb.len() as u64,
        base,
        data.len() as u64 + segment_base_slack,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.resize(56, 0);
    out.extend_from_slice(&fb[8..]);
    out.resize(base as usize, 0);
    out.extend_from_slice(data);
    out
}

#[test]
fn a_file_built_here_as_a_producer_would_converts() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let input = dir.path().join("built.ptd");
    std::fs::write(
        &input,
        ptd(&[(0, 16)], &[("w", 0, 6, &[2, 2], &[0, 1])], &values, 0),
    )
    .unwrap();
    let out = dir.path().join("built.hurray");
    convert(&input, &out);
    let file = File::open(&out).unwrap();
    assert_eq!(
        file.tensor("w")
            .unwrap()
            .buffer(BufferRole::Values)
            .unwrap(),
        &values[..]
    );
}

#[test]
fn bad_ptd_files_are_refused_by_name_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let data = [0u8; 64];
    let f32x4: &[i32] = &[4];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // A segment past the segment data.
        (
            ptd(&[(0, 80)], &[("w", 0, 6, f32x4, &[0])], &data, 0),
            "segment 0: offset 0 + size 80 lies past",
        ),
        (
            ptd(&[(u64::MAX - 8, 16)], &[("w", 0, 6, f32x4, &[0])], &data, 0),
            "segment 0: offset",
        ),
        // The header's segment data past the end of the file.
        (
            ptd(&[(0, 16)], &[("w", 0, 6, f32x4, &[0])], &data, 1 << 40),
            "segment_data_size",
        ),
        // Two segments over the same bytes.
        (
            ptd(
                &[(0, 32), (16, 32)],
                &[("a", 0, 6, &[8], &[0]), ("b", 1, 6, &[8], &[0])],
                &data,
                0,
            ),
            "segments 0 and 1 overlap",
        ),
        // Scalar types with no Hurray type, and none ExecuTorch defines.
        (
            ptd(&[(0, 16)], &[("q", 0, 12, f32x4, &[0])], &data, 0),
            "scalar type QInt8 (12) has no Hurray element type",
        ),
        (
            ptd(&[(0, 16)], &[("x", 0, 99, f32x4, &[0])], &data, 0),
            "scalar type 99 is not one ExecuTorch defines",
        ),
        // Sizes whose product overflows, and a negative size.
        (
            ptd(
                &[(0, 16)],
                &[("big", 0, 6, &[i32::MAX; 3], &[0, 1, 2])],
                &data,
                0,
            ),
            "\"big\"",
        ),
        (
            ptd(&[(0, 16)], &[("neg", 0, 6, &[-4], &[0])], &data, 0),
            "sizes[0] = -4 is negative",
        ),
        // A layout that does not fit its segment.
        (
            ptd(&[(0, 16)], &[("w", 0, 6, &[5], &[0])], &data, 0),
            "f32 [5] takes 20 bytes, its segment holds 16",
        ),
        // A segment index that does not exist, a duplicate key.
        (
            ptd(&[(0, 16)], &[("w", 3, 6, f32x4, &[0])], &data, 0),
            "segment 3 does not exist",
        ),
        (
            ptd(
                &[(0, 16), (64, 0)],
                &[("w", 0, 6, f32x4, &[0]), ("w", 0, 6, f32x4, &[0])],
                &data,
                0,
            ),
            "appears twice",
        ),
        // Not the contiguous dim order.
        (
            ptd(&[(0, 16)], &[("t", 0, 6, &[2, 2], &[1, 0])], &data, 0),
            "dim order [1, 0]",
        ),
    ];
    let out = dir.path().join("out.hurray");
    for (i, (bytes, want)) in cases.into_iter().enumerate() {
        assert_conversion_refused(&dir.path().join(format!("bad{i}.ptd")), &bytes, &out, want);
    }
    let good = std::fs::read(fixtures().join("mlp.ptd")).unwrap();
    for (i, (bytes, want)) in [
        (good[..40].to_vec(), "extended header"),
        (good[..1000].to_vec(), "past the"),
        (
            {
                let mut b = good.clone();
                b[4..8].copy_from_slice(b"XT01");
                b
            },
            "FT01",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        assert_conversion_refused(&dir.path().join(format!("cut{i}.ptd")), &bytes, &out, want);
    }
}

#[test]
fn mutated_ptd_files_are_errors_or_files_never_panics() {
    // What the fuzz target does, over 3,000 mutants of a file ExecuTorch wrote.
    let base = std::fs::read(fixtures().join("mixed.ptd")).unwrap();
    let mut opened = 0;
    for m in mutants(&base, 0x9e37_79b9_7f4a_7c15, 3000) {
        opened += usize::from(hurray_cli::convert::read_all("ptd", &m).is_ok());
    }
    assert!(opened > 0 && opened < 3000, "{opened}");
}
