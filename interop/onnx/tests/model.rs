//! Models built field by field (as onnx.proto numbers them): the walk to the
//! initializers, the rewrite, and every refusal. Real producers' models
//! (torch.onnx.export, the onnx package) are tested from Python
//! (python/tests/test_onnx.py) with ONNX Runtime as the reader.

use hurray::{ElementType, File, descriptor::BufferRole};
use hurray_onnx::{Error, Model, Options, externalize, write_weights};
use std::path::PathBuf;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(out: &mut Vec<u8>, n: u32, b: &[u8]) {
    varint(out, (u64::from(n) << 3) | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn varint_field(out: &mut Vec<u8>, n: u32, v: u64) {
    varint(out, u64::from(n) << 3);
    varint(out, v);
}

/// A `TensorProto`: name, ONNX data type, dims, and `raw_data`.
fn tensor(name: &str, data_type: u64, dims: &[i64], raw: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    for d in dims {
        varint_field(&mut t, 1, *d as u64);
    }
    varint_field(&mut t, 2, data_type);
    bytes_field(&mut t, 8, name.as_bytes());
    bytes_field(&mut t, 9, raw);
    t
}

/// A `GraphProto` with these initializers and nodes.
fn graph(initializers: &[Vec<u8>], nodes: &[Vec<u8>]) -> Vec<u8> {
    let mut g = Vec::new();
    bytes_field(&mut g, 2, b"g");
    for n in nodes {
        bytes_field(&mut g, 1, n);
    }
    for t in initializers {
        bytes_field(&mut g, 5, t);
    }
    g
}

/// A `NodeProto` (`If`) whose attribute holds `body` as its graph.
fn node_with_subgraph(body: &[u8]) -> Vec<u8> {
    let mut attr = Vec::new();
    bytes_field(&mut attr, 1, b"then_branch");
    bytes_field(&mut attr, 6, body);
    varint_field(&mut attr, 20, 5);
    let mut node = Vec::new();
    bytes_field(&mut node, 4, b"If");
    bytes_field(&mut node, 5, &attr);
    node
}

/// A `ModelProto` around `graph`, with fields before and after it (an
/// unknown field number included) that a rewrite must keep.
fn model(graph: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    varint_field(&mut m, 1, 10);
    bytes_field(&mut m, 2, b"test-producer");
    bytes_field(&mut m, 7, graph);
    bytes_field(&mut m, 99, b"a field of a later ONNX");
    m
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn open(bytes: Vec<u8>) -> hurray_onnx::Result<Model> {
    Model::from_bytes(bytes, PathBuf::from("."))
}

fn two_level_model() -> Vec<u8> {
    let big = f32_bytes(&(0..1024).map(|i| i as f32).collect::<Vec<_>>());
    let inner = graph(&[tensor("inner.w", 1, &[32, 32], &big)], &[]);
    let outer = graph(
        &[
            tensor("a.bias", 1, &[4], &f32_bytes(&[1.0, 2.0, 3.0, 4.0])),
            tensor("b.mask", 9, &[3], &[1, 0, 1]),
            tensor("c.empty", 10, &[0, 8], &[]),
            tensor("d.w", 16, &[512], &[7; 1024]),
        ],
        &[node_with_subgraph(&inner)],
    );
    model(&outer)
}

#[test]
fn initializers_of_subgraphs_are_found() {
    let m = open(two_level_model()).unwrap();
    let names: Vec<_> = m.initializers().iter().map(|i| i.name()).collect();
    assert_eq!(names, ["inner.w", "a.bias", "b.mask", "c.empty", "d.w"]);
    let mask = &m.initializers()[2];
    assert_eq!(mask.element_type(), ElementType::Bool);
    // ONNX's bool bytes become Hurray's bits.
    assert_eq!(&m.values(mask).unwrap()[..], &[0b101]);
    assert_eq!(m.initializers()[4].element_type(), ElementType::BFloat16);
}

#[test]
fn externalized_models_keep_every_other_byte_and_point_at_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = two_level_model();
    let m = open(bytes.clone()).unwrap();
    let (out, weights) = (dir.path().join("m.onnx"), dir.path().join("m.hurray"));
    let report = externalize(&m, &out, &weights, &Options::default()).unwrap();
    assert_eq!(report.external, 2, "{report:?}");
    let inline: Vec<_> = report.inline.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(inline, ["a.bias", "b.mask", "c.empty"]);
    let file = File::open(&weights).unwrap();
    assert_eq!(file.tensors().count(), 5);
    let rewritten = Model::from_bytes(std::fs::read(&out).unwrap(), dir.path().to_owned()).unwrap();
    for (before, after) in m.initializers().iter().zip(rewritten.initializers()) {
        assert_eq!(before.name(), after.name());
        assert_eq!(m.values(before).unwrap(), rewritten.values(after).unwrap());
        let t = file.tensor(before.name()).unwrap();
        if after.is_external() {
            assert_eq!(t.buffer_range(BufferRole::Values).unwrap().0 % 4096, 0);
        }
    }
    // The model's own fields, before and after the graph, are untouched.
    let out_bytes = std::fs::read(&out).unwrap();
    assert!(out_bytes.starts_with(&bytes[..17]));
    assert!(out_bytes.ends_with(b"a field of a later ONNX"));
    // With nothing to move, the model is written as it was.
    let all_inline = Options {
        threshold: u64::MAX,
        ..Options::default()
    };
    externalize(&m, &out, &weights, &all_inline).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
}

#[test]
fn typed_fields_decode_as_raw_data_does() {
    // int32_data for f16 (bit patterns), int64_data, float_data, packed
    // and one element per field.
    let mut t = Vec::new();
    varint_field(&mut t, 1, 3);
    varint_field(&mut t, 2, 10);
    bytes_field(&mut t, 8, b"h");
    let mut packed = Vec::new();
    for v in [0x3c00u64, 0x4000] {
        varint(&mut packed, v);
    }
    bytes_field(&mut t, 5, &packed);
    varint_field(&mut t, 5, 0xc000);
    let mut neg = Vec::new();
    varint_field(&mut neg, 1, 2);
    varint_field(&mut neg, 2, 7);
    bytes_field(&mut neg, 8, b"i64");
    varint_field(&mut neg, 7, (-5i64) as u64);
    varint_field(&mut neg, 7, 9);
    let m = open(model(&graph(&[t, neg], &[]))).unwrap();
    let h = &m.initializers()[0];
    assert_eq!(
        &m.values(h).unwrap()[..],
        &[0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0]
    );
    let i = &m.initializers()[1];
    let want: Vec<u8> = [-5i64, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(&m.values(i).unwrap()[..], &want[..]);
}

fn refusal(bytes: Vec<u8>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.hurray");
    let e = match open(bytes) {
        Err(e) => e,
        Ok(m) => write_weights(&m, &w, 64).unwrap_err(),
    };
    assert!(!w.exists(), "nothing is written on error");
    e.to_string()
}

#[test]
fn bad_tensors_are_refused_by_name() {
    let one = |t: Vec<u8>| model(&graph(&[t], &[]));
    let cases = [
        (tensor("s", 8, &[1], b"x"), "\"s\": data_type = STRING"),
        (tensor("n", 1, &[-1], &[]), "\"n\": dims = -1"),
        (
            tensor("short", 1, &[4], &[0; 12]),
            "\"short\": raw_data = 12 bytes",
        ),
        (tensor("u", 200, &[1], &[0]), "\"u\": data_type = 200"),
        (
            tensor("b", 9, &[2], &[1, 2]),
            "\"b\": data = 2: a BOOL byte is 0 or 1",
        ),
        (tensor("", 1, &[1], &[0; 4]), "name = \"\""),
    ];
    for (t, want) in cases {
        let e = refusal(one(t));
        assert!(e.contains(want), "{e} lacks {want}");
    }
    // Typed values in the field of another type.
    let mut t = Vec::new();
    varint_field(&mut t, 2, 1);
    bytes_field(&mut t, 8, b"f");
    varint_field(&mut t, 7, 1);
    let e = refusal(one(t));
    assert!(e.contains("\"f\": data = field 7"), "{e}");
    // Typed entries out of range for their type, or too many: refused, not
    // truncated (256 would read as a false BOOL, 300 as an INT8 44).
    for (data_type, values, want) in [
        (
            9u64,
            vec![256u64, 1],
            "\"t\": int32_data = 256: not a value of bool",
        ),
        (
            3,
            vec![300, 1],
            "\"t\": int32_data = 300: not a value of i8",
        ),
        (3, vec![(-129i64) as u64, 1], "\"t\": int32_data = -129"),
        (6, vec![1, 2, 3], "\"t\": int32_data = 3 entries"),
        (27, vec![1, 2, 3], "\"t\": int32_data = 3 entries"),
    ] {
        let mut t = Vec::new();
        varint_field(&mut t, 1, 2);
        varint_field(&mut t, 2, data_type);
        bytes_field(&mut t, 8, b"t");
        for v in values {
            varint_field(&mut t, 5, v);
        }
        let e = refusal(one(t));
        assert!(e.contains(want), "{e} lacks {want}");
    }
    // More dimensions than MAX_ONNX_RANK.
    let e = refusal(one(tensor("r", 1, &[1; 65], &[0; 4])));
    assert!(e.contains("MAX_ONNX_RANK"), "{e}");
    // A duplicate name across a graph and its subgraph.
    let inner = graph(&[tensor("w", 1, &[1], &[0; 4])], &[]);
    let outer = graph(
        &[tensor("w", 1, &[1], &[0; 4])],
        &[node_with_subgraph(&inner)],
    );
    let e = refusal(model(&outer));
    assert!(e.contains("\"w\""), "{e}");
}

#[test]
fn truncated_and_deeply_nested_models_are_refused() {
    let bytes = two_level_model();
    for cut in [1, 5, 19, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            matches!(open(bytes[..cut].to_vec()), Err(Error::Malformed { .. })),
            "cut at {cut}"
        );
    }
    let mut g = graph(&[tensor("w", 1, &[1], &[0; 4])], &[]);
    for _ in 0..30 {
        g = graph(&[], &[node_with_subgraph(&g)]);
    }
    let e = open(model(&g)).unwrap_err().to_string();
    assert!(e.contains("MAX_ONNX_GRAPH_DEPTH"), "{e}");
}

fn external_tensor(location: &str, offset: u64, length: u64) -> Vec<u8> {
    external_f32(location, offset, length, 4)
}

/// An external f32 tensor `ext` of `count` elements.
fn external_f32(location: &str, offset: u64, length: u64, count: u64) -> Vec<u8> {
    let mut t = Vec::new();
    varint_field(&mut t, 1, count);
    varint_field(&mut t, 2, 1);
    bytes_field(&mut t, 8, b"ext");
    for (k, v) in [
        ("location", location.to_owned()),
        ("offset", offset.to_string()),
        ("length", length.to_string()),
    ] {
        let mut e = Vec::new();
        bytes_field(&mut e, 1, k.as_bytes());
        bytes_field(&mut e, 2, v.as_bytes());
        bytes_field(&mut t, 13, &e);
    }
    varint_field(&mut t, 14, 1);
    t
}

#[test]
fn external_data_is_read_inside_its_file_and_directory_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("d.bin"),
        f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    )
    .unwrap();
    let at = |location: &str, offset, length| {
        let bytes = model(&graph(&[external_tensor(location, offset, length)], &[]));
        Model::from_bytes(bytes, dir.path().to_owned()).unwrap()
    };
    let m = at("d.bin", 8, 16);
    assert_eq!(
        &m.values(&m.initializers()[0]).unwrap()[..],
        &f32_bytes(&[2.0, 3.0, 4.0, 5.0])[..]
    );
    for (location, offset, length, want) in [
        ("d.bin", 12, 16, "outside"),
        ("d.bin", u64::MAX, 16, "outside"),
        ("d.bin", 0, 12, "external_data.length = 12 bytes"),
        ("../d.bin", 0, 16, "inside the model's directory"),
        ("/etc/passwd", 0, 16, "inside the model's directory"),
        ("missing.bin", 0, 16, "missing.bin"),
    ] {
        let m = at(location, offset, length);
        let e = m.values(&m.initializers()[0]).unwrap_err().to_string();
        assert!(e.contains("\"ext\"") || e.contains(location), "{e}");
        assert!(e.contains(want), "{e} lacks {want}");
    }
}

#[test]
fn the_weights_must_be_inside_the_models_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let m = open(two_level_model()).unwrap();
    let e = externalize(
        &m,
        &sub.join("m.onnx"),
        &dir.path().join("w.hurray"),
        &Options::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Argument(_)), "{e}");
    assert!(!dir.path().join("w.hurray").exists() && !sub.join("m.onnx").exists());
    let existing = Options {
        existing: true,
        ..Options::default()
    };
    let e = externalize(
        &m,
        &dir.path().join("m.onnx"),
        &dir.path().join("none.hurray"),
        &existing,
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::Io { .. }) && e.to_string().contains("none.hurray"),
        "{e}"
    );
}

#[test]
fn fuzzings_entry_accepts_what_it_parses() {
    hurray_onnx::exercise(&two_level_model()).unwrap();
    assert!(hurray_onnx::exercise(b"\x0b").is_err());
}

#[test]
fn external_data_larger_than_a_piece_is_streamed_whole() {
    // 20 MiB and 28 bytes of f32, read in 8 MiB pieces; and 19 external BOOLs.
    let dir = tempfile::tempdir().unwrap();
    let count = (20 << 18) + 7u64;
    let mut data: Vec<u8> = (0..count * 4).map(|i| (i % 251) as u8).collect();
    let bools = [1u8, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1];
    data.extend_from_slice(&bools);
    std::fs::write(dir.path().join("big.bin"), &data).unwrap();
    let t = external_f32("big.bin", 0, count * 4, count);
    let mut b = Vec::new();
    varint_field(&mut b, 1, bools.len() as u64);
    varint_field(&mut b, 2, 9);
    bytes_field(&mut b, 8, b"mask");
    for (k, v) in [
        ("location", "big.bin".to_owned()),
        ("offset", (count * 4).to_string()),
    ] {
        let mut e = Vec::new();
        bytes_field(&mut e, 1, k.as_bytes());
        bytes_field(&mut e, 2, v.as_bytes());
        bytes_field(&mut b, 13, &e);
    }
    varint_field(&mut b, 14, 1);
    let m = Model::from_bytes(model(&graph(&[t, b], &[])), dir.path().to_owned()).unwrap();
    let w = dir.path().join("w.hurray");
    write_weights(&m, &w, 64).unwrap();
    let file = File::open(&w).unwrap();
    assert_eq!(
        file.tensor("ext")
            .unwrap()
            .buffer(BufferRole::Values)
            .unwrap(),
        &data[..(count * 4) as usize]
    );
    let packed = hurray::pack::pack_codes(bools, 1);
    assert_eq!(
        file.tensor("mask")
            .unwrap()
            .buffer(BufferRole::Values)
            .unwrap(),
        &packed[..]
    );
}

/// xorshift64: a fixed sequence of mutations, the same on every run.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn mutated_models_are_errors_or_models_never_panics() {
    // What the fuzz target does, over 3,000 mutants of a model with a
    // subgraph, typed, raw and external data: a flipped, set or cut byte.
    let mut base = two_level_model();
    let mut t = Vec::new();
    varint_field(&mut t, 1, 2);
    varint_field(&mut t, 2, 7);
    bytes_field(&mut t, 8, b"typed");
    bytes_field(&mut t, 7, &[3, 0x7f]);
    let mut g = graph(&[t, external_tensor("x.bin", 0, 16)], &[]);
    bytes_field(&mut g, 2, b"tail");
    base = model(&[&base[..], &g[..]].concat());
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        let mut m = base.clone();
        for _ in 0..1 + next(&mut state) % 4 {
            let at = (next(&mut state) % m.len() as u64) as usize;
            match next(&mut state) % 3 {
                0 => m[at] ^= 1 << (next(&mut state) % 8),
                1 => m[at] = next(&mut state) as u8,
                _ => m.truncate(at.max(1)),
            }
        }
        let _ = hurray_onnx::exercise(&m);
    }
}

#[test]
fn hurray_tensors_onnx_cannot_point_at_are_refused_by_name() {
    // An existing file whose "m" is sparse, and one whose "m" is quantized
    // (per-tensor int8): ONNX external data holds dense plain values only.
    use hurray::{
        Layout, Quantization, TensorDescriptor, Writer, descriptor::QuantizationScheme, shape,
    };
    let dir = tempfile::tempdir().unwrap();
    let model_bytes = model(&graph(&[tensor("m", 3, &[2, 2], &[1, 0, 0, 2])], &[]));
    let m = Model::from_bytes(model_bytes, dir.path().to_owned()).unwrap();
    let existing = Options {
        existing: true,
        threshold: 0,
        ..Options::default()
    };
    let sparse =
        TensorDescriptor::new("m", ElementType::Int8, shape(&[2, 2])).with_layout(Layout::Csr {
            nnz: 2,
            index_type: ElementType::Int64,
        });
    let pointers: Vec<u8> = [0i64, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let indices: Vec<u8> = [0i64, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
    let quantized = TensorDescriptor::new("m", ElementType::Int8, shape(&[2, 2]))
        .with_quantization(Quantization::new(
            QuantizationScheme::PerTensor,
            ElementType::Float32,
            ElementType::Float32,
        ));
    let scale = 0.5f32.to_le_bytes();
    let cases: [(&TensorDescriptor, Vec<&[u8]>, &str); 2] = [
        (&sparse, vec![&pointers, &indices, &[1, 2]], "layout = csr"),
        (
            &quantized,
            vec![&[1, 0, 0, 2], &scale, &[]],
            "quantization = per_tensor",
        ),
    ];
    for (desc, buffers, want) in cases {
        let w = dir.path().join("w.hurray");
        let mut writer = Writer::create(&w).unwrap();
        writer.add_tensor(desc, &buffers).unwrap();
        writer.finish().unwrap();
        let out = dir.path().join("m.onnx");
        let e = externalize(&m, &out, &w, &existing)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"m\"") && e.contains(want), "{e}");
        assert!(!out.exists());
    }
}

#[test]
fn a_failed_externalize_leaves_both_outputs_and_the_input_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.bin"), f32_bytes(&[1.0, 2.0, 3.0, 4.0])).unwrap();
    let (out, weights) = (dir.path().join("m.onnx"), dir.path().join("w.hurray"));
    std::fs::write(&out, b"the previous model").unwrap();
    std::fs::write(&weights, b"the previous weights").unwrap();
    // An external BOOL (kept inline) whose byte is 2: found after the
    // weights are written, before either output takes its place.
    std::fs::write(dir.path().join("b.bin"), [1u8, 2]).unwrap();
    let mut b = Vec::new();
    varint_field(&mut b, 1, 2);
    varint_field(&mut b, 2, 9);
    bytes_field(&mut b, 8, b"mask");
    for (k, v) in [("location", "b.bin"), ("offset", "0")] {
        let mut e = Vec::new();
        bytes_field(&mut e, 1, k.as_bytes());
        bytes_field(&mut e, 2, v.as_bytes());
        bytes_field(&mut b, 13, &e);
    }
    varint_field(&mut b, 14, 1);
    let bad = Model::from_bytes(model(&graph(&[b], &[])), dir.path().to_owned()).unwrap();
    let e = externalize(&bad, &out, &weights, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"mask\"") && e.contains("BOOL byte"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"the previous model");
    assert_eq!(std::fs::read(&weights).unwrap(), b"the previous weights");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 4, "no partial file is left: {left:?}");
    // The input's own external data file is refused as the weights.
    let input = Model::from_bytes(
        model(&graph(&[external_tensor("d.bin", 0, 16)], &[])),
        dir.path().to_owned(),
    )
    .unwrap();
    let e = externalize(&input, &out, &dir.path().join("d.bin"), &Options::default()).unwrap_err();
    assert!(
        matches!(e, Error::Argument(_)) && e.to_string().contains("\"ext\""),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("d.bin")).unwrap(),
        f32_bytes(&[1.0, 2.0, 3.0, 4.0])
    );
}
