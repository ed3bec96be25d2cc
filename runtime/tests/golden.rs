//! Files written by released versions of the format still read, with the
//! same descriptors and bytes (docs/spec/schema-evolution.md).

use hurray::{Dim, ElementType, File, Layout};
use std::path::Path;

fn golden(version: &str, name: &str) -> File {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(version)
        .join(name);
    File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn v1_0_example_reads_with_current_code() {
    check_example(&golden("v1.0", "example.hurray"), (1, 0));
}

#[test]
fn v1_1_example_reads_with_current_code() {
    check_example(&golden("v1.1", "example.hurray"), (1, 1));
}

#[test]
fn v1_2_example_reads_with_current_code() {
    let file = golden("v1.2", "example.hurray");
    check_example(&file, (1, 2));
    let checked = file
        .tensors()
        .filter(|t| t.verify_checksum().unwrap())
        .count();
    assert_eq!(checked, 4, "every tensor with data has checksums");
}

#[test]
fn v1_3_example_reads_with_current_code() {
    check_example(&golden("v1.3", "example.hurray"), (1, 3));
}

/// Format 1.3's sharded checkpoint as the 1.3 writer wrote it
/// (`runtime/examples/write_sharded.rs`): the index, its members' sizes and
/// CRC-32C, a tensor in three pieces assembled and sliced across them, and
/// whole tensors, packed and empty, read in place.
#[test]
fn v1_3_sharded_checkpoint_reads_with_current_code() {
    let checkpoint = check_sharded("v1.3", (1, 3));
    assert!(checkpoint.members().iter().all(|m| m.file_id.is_none()));
}

/// Format 1.5's sharded checkpoint, written by the same program with the
/// 1.5 writer: as 1.3's, and the index records each member's identity,
/// which is the one in the member's header.
#[test]
fn v1_5_sharded_checkpoint_reads_with_current_code() {
    let checkpoint = check_sharded("v1.5", (1, 5));
    for (i, m) in checkpoint.members().iter().enumerate() {
        let id = m.file_id.expect("a 1.5 member's identity");
        assert_eq!(checkpoint.member(i).unwrap().file_id(), Some(id));
    }
}

#[test]
fn v1_5_example_reads_with_current_code() {
    check_example(&golden("v1.5", "example.hurray"), (1, 5));
}

/// The checkpoint `runtime/examples/write_sharded.rs` wrote under
/// `tests/golden/VERSION/sharded`, read whole.
fn check_sharded(release: &str, version: (u16, u16)) -> hurray::ShardedFile {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(release)
        .join("sharded");
    let index = dir.join("model.hurray");
    let plain = File::open(&index).unwrap();
    assert_eq!(plain.reader().version(), version);
    assert!(plain.reader().is_shard_index() && plain.is_empty());
    let checkpoint = hurray::ShardedFile::open(&index).unwrap();
    checkpoint.verify_members().unwrap();
    let paths: Vec<&str> = checkpoint
        .members()
        .iter()
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(paths, ["rank0.hurray", "rank1.hurray", "rank2.hurray"]);
    let embed = checkpoint.tensor("embed").unwrap();
    assert_eq!(
        (embed.shape.as_slice(), embed.pieces.len()),
        (&[8u64, 6][..], 3)
    );
    let want: Vec<f32> = (0..48).map(|i| i as f32 * 0.25 - 4.0).collect();
    let whole = checkpoint.assemble("embed").unwrap();
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(&whole.bytes),
        want.as_slice()
    );
    let rows = checkpoint
        .slice(
            "embed",
            &[
                hurray::slice::SliceRange::new(2, 7, 1),
                hurray::slice::SliceRange::index(5),
            ],
        )
        .unwrap();
    let col: Vec<f32> = (2..7).map(|r| want[r * 6 + 5]).collect();
    assert_eq!(bytemuck::cast_slice::<u8, f32>(&rows.bytes), col.as_slice());
    let int4 = checkpoint.get("proj.int4").unwrap();
    let codes: Vec<u8> = int4
        .packed()
        .unwrap()
        .iter()
        .map(|v| v as u8 & 0xf)
        .collect();
    assert_eq!(codes, (0..24u8).map(|i| i % 16).collect::<Vec<_>>());
    let empty = checkpoint.get("empty").unwrap();
    assert_eq!(empty.dims(), [Dim::Fixed(3), Dim::Fixed(0), Dim::Fixed(5)]);
    assert_eq!(empty.as_slice::<f32>().unwrap(), &[] as &[f32]);
    checkpoint
}

/// Format 1.2's additions as the 1.2 writer wrote them (frozen copies of the
/// compliance vectors of that release): every buffer has the recorded bytes,
/// and every quantized tensor dequantizes to the recorded values.
#[test]
fn v1_2_microscaling_offsets_and_new_types_read_with_current_code() {
    let files = frozen_vectors("v1.2", (1, 2));
    assert_eq!(files, 10, "two quantization files and eight element types");
}

/// Format 1.4's additions as the 1.4 writer wrote them: two-level scales,
/// code tables, a group index, every block format, the 3-, 5- and 6-bit
/// integer types (frozen compliance vectors), all with digests.
#[test]
fn v1_4_composite_quantization_and_new_types_read_with_current_code() {
    let files = frozen_vectors("v1.4", (1, 4));
    assert_eq!(files, 10, "four quantization files and six element types");
    let file = golden("v1.4", "quant_two_level.hurray");
    let t = file.tensor("q4_k").unwrap();
    assert!(t.quantization().unwrap().is_composite());
    assert!(t.digests().is_some(), "1.4 vectors record digests");
    // A block format's bytes are blocks, not elements: element views refuse
    // them by name, the dequantized view and the raw buffer read them.
    let file = golden("v1.4", "quant_block_formats.hurray");
    let t = file.tensor("ggml_iq2_xxs").unwrap();
    let refused = |e: hurray::Error| matches!(&e, hurray::Error::InvalidField { field, .. } if field == "quantization.block_format");
    assert!(refused(t.as_slice::<u8>().unwrap_err()));
    assert!(refused(t.packed().unwrap_err()));
    let all = [
        hurray::slice::SliceRange::new(0, 2, 1),
        hurray::slice::SliceRange::new(0, 256, 1),
    ];
    assert!(refused(t.read_slice(&all).unwrap_err()));
    assert_eq!(t.quantized().unwrap().dequantize().len(), 512);
    assert_eq!(t.data().unwrap().len(), 2 * 66);
}

#[test]
fn v1_4_example_reads_with_current_code() {
    check_example(&golden("v1.4", "example.hurray"), (1, 4));
}

/// The frozen vectors of `version` (every `.hurray` but the example and
/// GGUF conversions): every buffer has the recorded bytes, and every
/// quantized tensor dequantizes to the recorded values. Returns how many.
fn frozen_vectors(version: &str, expect: (u16, u16)) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden")
        .join(version);
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.extension().is_none_or(|e| e != "hurray")
            || name == "example"
            || name.starts_with("gguf_")
        {
            continue;
        }
        let file = golden(version, &format!("{name}.hurray"));
        assert_eq!(file.reader().version(), expect, "{name}");
        for t in file.tensors() {
            // 1.2 writers record a CRC-32C per buffer.
            assert!(t.verify_checksum().unwrap(), "{name}: {}", t.name());
        }
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path.with_extension("json")).unwrap())
                .unwrap();
        for (t, e) in file.tensors().zip(want["tensors"].as_array().unwrap()) {
            assert_eq!(t.name(), e["name"], "{name}");
            assert_eq!(t.element_type().name(), e["dtype"], "{name}");
            for (b, eb) in t.buffers().iter().zip(e["buffers"].as_array().unwrap()) {
                assert_eq!(b.0.name(), eb["role"], "{name}");
                let hex: String = b.1.iter().map(|x| format!("{x:02x}")).collect();
                assert_eq!(hex, eb["hex"], "{name}: {} {}", t.name(), b.0);
            }
            if let Some(deq) = e["quantization"].get("dequantized") {
                let got: Vec<serde_json::Value> = t
                    .quantized()
                    .unwrap()
                    .dequantize()
                    .into_iter()
                    .map(|v| match v {
                        v if v.is_nan() => "nan".into(),
                        v if v.is_infinite() => (if v > 0.0 { "inf" } else { "-inf" }).into(),
                        v => serde_json::json!(f64::from(v)),
                    })
                    .collect();
                assert_eq!(&serde_json::Value::Array(got), deq, "{name}: {}", t.name());
            }
        }
        files += 1;
    }
    files
}

/// Every release wrote the same example tensors; 1.1 adds the name index.
fn check_example(file: &File, version: (u16, u16)) {
    assert_eq!(file.reader().version(), version);
    let names: Vec<_> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "dense.weight",
            "empty.slice",
            "packed.int4",
            "signature.input",
            "sparse.csr_empty"
        ]
    );
    let w = file.tensor("dense.weight").unwrap();
    let want: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    assert_eq!(w.as_slice::<f32>().unwrap(), &want[..]);
    let e = file.tensor("empty.slice").unwrap();
    assert_eq!(e.dims(), vec![Dim::Fixed(3), Dim::Fixed(0), Dim::Fixed(5)]);
    assert_eq!(e.data().unwrap().len(), 0);
    let p: Vec<i16> = file
        .tensor("packed.int4")
        .unwrap()
        .packed()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(p, vec![1, 2, 3, -1, -8]);
    let s = file.tensor("signature.input").unwrap();
    assert!(s.is_descriptor_only());
    assert_eq!(s.dims(), vec![Dim::Dynamic, Dim::Fixed(784)]);
    let c = file.tensor("sparse.csr_empty").unwrap();
    assert_eq!(
        c.layout(),
        Layout::Csr {
            nnz: 0,
            index_type: ElementType::Int64
        }
    );
    assert_eq!(c.csr().unwrap().nnz, 0);
    assert_eq!(
        file.reader().metadata().collect::<Vec<_>>(),
        vec![("producer", "hurray example")]
    );
}
