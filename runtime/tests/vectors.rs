//! The compliance vectors in `tests/vectors/`, read by the Rust runtime
//! (docs/impl/compliance.md):
//!
//! - every valid vector opens and matches its JSON expectation (descriptors,
//!   buffer bytes, decoded values through the runtime's views);
//! - every invalid vector fails with exactly the error its JSON names.
//!
//! That the checked-in vectors are exactly what `cargo xtask vectors`
//! generates is checked by xtask's own tests (`cargo test -p xtask`), where
//! the generator lives.

use hurray::views::Indices;
use hurray::{ElementType, Error, File, Layout, elements::ElementClass, minifloat, pack};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime lives one level below the workspace root")
        .to_owned()
}

fn vectors() -> Vec<(String, Value)> {
    let dir = root().join("tests/vectors");
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).expect("index.json"))
            .expect("index.json parses");
    let list = index["vectors"].as_array().expect("vectors list");
    assert!(!list.is_empty());
    list.iter()
        .map(|v| {
            let name = v["name"].as_str().expect("name").to_owned();
            let json: Value = serde_json::from_slice(
                &std::fs::read(dir.join(format!("{name}.json"))).expect("expectation"),
            )
            .expect("expectation parses");
            (name, json)
        })
        .collect()
}

fn path_of(name: &str) -> PathBuf {
    root().join(format!("tests/vectors/{name}.hurray"))
}

#[test]
fn the_suite_covers_what_the_brief_asks() {
    let all = vectors();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    for required in [
        "empty_shape_0",
        "empty_shape_3_0_5",
        "empty_csr_nnz_0",
        "layout_dense",
        "layout_strided",
        "layout_coo",
        "layout_csr",
        "layout_csc",
        "quant_per_tensor",
        "quant_per_axis",
        "quant_empty",
        "quant_per_block",
        "descriptor_only",
        "metadata",
        "multi_tensor",
        "alignment_4096",
    ] {
        assert!(names.contains(&required), "missing vector {required}");
    }
    for et in ElementType::ALL {
        let name = format!("dtype_{}", et.name());
        assert!(names.contains(&name.as_str()), "missing vector {name}");
    }
    let invalid = all
        .iter()
        .filter(|(_, j)| j["valid"] == json!(false))
        .count();
    assert!(invalid >= 20, "only {invalid} invalid vectors");
}

// ---------------------------------------------------------------------------
// Decoding elements: from the stored bytes, with the runtime's decoders for
// the formats Rust lacks.
// ---------------------------------------------------------------------------

fn float_value(et: ElementType, code: u64) -> f64 {
    minifloat::to_f64(et, code).unwrap_or_else(|| panic!("{} is not a float type", et.name()))
}

fn float_json(v: f64) -> Value {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// Element `i` of a buffer of `et` elements, as the JSON expectation spells it.
fn element(et: ElementType, bytes: &[u8], i: u64) -> Value {
    let bits = u64::from(et.bits());
    let raw: u128 = if bits < 8 {
        u128::from(pack::code_at(bytes, et.bits(), i).expect("element inside the buffer"))
    } else {
        let n = (bits / 8) as usize;
        let at = i as usize * n;
        let mut w = [0u8; 16];
        w[..n].copy_from_slice(&bytes[at..at + n]);
        u128::from_le_bytes(w)
    };
    match et.class() {
        ElementClass::Bool => json!(raw != 0),
        ElementClass::SignedInt => {
            let shift = 128 - bits;
            json!(((raw << shift) as i128 >> shift) as i64)
        }
        ElementClass::UnsignedInt => json!(raw as u64),
        ElementClass::Float => float_json(float_value(et, raw as u64)),
        ElementClass::Complex => {
            let half = bits / 2;
            let mask = (1u128 << half) - 1;
            let part = |c: u128| match half {
                32 => float_json(f64::from(f32::from_bits(c as u32))),
                _ => float_json(f64::from_bits(c as u64)),
            };
            json!([part(raw & mask), part(raw >> half)])
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn indices_json(ix: &Indices<'_>) -> Value {
    Value::Array((0..ix.len()).map(|i| json!(ix.get(i))).collect())
}

/// Logical row-major element offsets (in elements) of a strided tensor.
fn strided_offsets(dims: &[u64], strides: &[i64]) -> Vec<u64> {
    let count: u64 = dims.iter().product();
    (0..count)
        .map(|mut i| {
            let mut off = 0u64;
            for d in (0..dims.len()).rev() {
                off += (i % dims[d]) * strides[d] as u64;
                i /= dims[d];
            }
            off
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Valid vectors.
// ---------------------------------------------------------------------------

fn check_valid(name: &str, exp: &Value) {
    let file = File::open(path_of(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reader = file.reader();
    assert_eq!(
        json!([reader.version().0, reader.version().1]),
        exp["version"]
    );
    assert_eq!(
        json!(reader.alignment()),
        exp["alignment"],
        "{name}: alignment"
    );
    let meta: serde_json::Map<String, Value> = reader
        .metadata()
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect();
    assert_eq!(
        Value::Object(meta),
        exp["metadata"],
        "{name}: file metadata"
    );
    // Format 1.5; null for a vector that has none.
    assert_eq!(
        json!(file.file_id().map(|id| id.to_string())),
        exp["file_id"],
        "{name}: file_id"
    );
    let tensors = exp["tensors"].as_array().expect("tensors");
    assert_eq!(file.len(), tensors.len(), "{name}: tensor count");
    for (t, e) in file.tensors().zip(tensors) {
        let tn = e["name"].as_str().expect("name");
        let ctx = format!("{name}/{tn}");
        assert_eq!(t.name(), tn, "{name}: tensor order");
        // Lookup by name finds the same tensor.
        assert_eq!(file.tensor(tn).expect("lookup").name(), tn);
        let et = t.element_type();
        assert_eq!(json!(et.name()), e["dtype"], "{ctx}: dtype");
        let shape: Vec<Value> = t
            .dims()
            .iter()
            .map(|d| match d {
                hurray::Dim::Fixed(n) => json!(n),
                hurray::Dim::Dynamic => json!("?"),
            })
            .collect();
        assert_eq!(Value::Array(shape), e["shape"], "{ctx}: shape");
        let layout = t.layout();
        assert_eq!(json!(layout.name()), e["layout"], "{ctx}: layout");
        match &layout {
            Layout::Dense => {}
            Layout::Strided(s) => assert_eq!(json!(s), e["strides"], "{ctx}"),
            Layout::Coo {
                nnz,
                index_type,
                canonical,
            } => {
                assert_eq!(json!(nnz), e["nnz"], "{ctx}");
                assert_eq!(json!(index_type.name()), e["index_type"], "{ctx}");
                assert_eq!(json!(canonical), e["canonical"], "{ctx}");
            }
            Layout::Csr { nnz, index_type } | Layout::Csc { nnz, index_type } => {
                assert_eq!(json!(nnz), e["nnz"], "{ctx}");
                assert_eq!(json!(index_type.name()), e["index_type"], "{ctx}");
            }
        }
        assert_eq!(json!(t.is_descriptor_only()), e["descriptor_only"], "{ctx}");
        assert_eq!(json!(t.alignment()), e["alignment"], "{ctx}: alignment");
        assert_eq!(json!(t.element_count()), e["element_count"], "{ctx}");
        let meta: serde_json::Map<String, Value> = t
            .metadata()
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        assert_eq!(Value::Object(meta), e["metadata"], "{ctx}: metadata");

        // Buffers: roles, lengths and bytes.
        let buffers = e["buffers"].as_array().expect("buffers");
        let mut total = 0;
        for b in buffers {
            let role = b["role"].as_str().expect("role");
            let role: hurray::descriptor::BufferRole = role.parse().expect("a known role");
            let bytes = t.buffer(role).unwrap_or_else(|| panic!("{ctx}: no {role}"));
            assert_eq!(json!(bytes.len()), b["length"], "{ctx}: {role} length");
            assert_eq!(json!(hex(bytes)), b["hex"], "{ctx}: {role} bytes");
            // The checksum the file records (1.2) is the one of the bytes.
            if let Some(sums) = t.checksums() {
                let (_, sum) = sums.iter().find(|(r, _)| *r == role).expect("a checksum");
                assert_eq!(json!(sum), b["crc32c"], "{ctx}: {role} checksum");
            }
            // And the digest (1.4).
            if let Some((_, digests)) = t.digests() {
                let (_, d) = digests.iter().find(|(r, _)| *r == role).expect("a digest");
                assert_eq!(json!(d.to_hex()), b["blake3"], "{ctx}: {role} digest");
            }
            if !bytes.is_empty() {
                // Non-empty buffers start on the tensor's alignment (in the file).
                let off = bytes.as_ptr() as usize - file.bytes().unwrap().as_ptr() as usize;
                assert_eq!(off as u64 % t.alignment(), 0, "{ctx}: {role} alignment");
            }
            total += bytes.len() as u64;
        }
        if !t.is_descriptor_only() {
            assert!(
                t.verify_checksum().expect(&ctx),
                "{ctx}: the 1.2 writer records checksums"
            );
            assert_eq!(t.byte_length(), total, "{ctx}: byte_length");
            let roles: Vec<&str> = t.buffers().iter().map(|(r, _)| r.name()).collect();
            let listed: Vec<&str> = buffers
                .iter()
                .map(|b| b["role"].as_str().unwrap_or(""))
                .collect();
            assert_eq!(roles, listed, "{ctx}: buffer roles");
        } else {
            assert!(buffers.is_empty());
            assert!(matches!(t.data(), Err(Error::NoData { .. })), "{ctx}");
            continue;
        }

        // Values through the runtime's views.
        match &layout {
            Layout::Dense | Layout::Strided(_) => {
                let dims = t.shape().to_wire();
                let data = t.data().expect("data");
                let block_format = t.quantization().and_then(|q| q.block_format);
                let offsets = match &layout {
                    Layout::Strided(s) => strided_offsets(&dims, s),
                    // A block format's values are its blocks' bytes (1.4).
                    _ if block_format.is_some() => (0..data.len() as u64).collect(),
                    _ => (0..t.element_count().unwrap_or(0)).collect(),
                };
                let values: Vec<Value> = offsets.iter().map(|&o| element(et, data, o)).collect();
                assert_eq!(Value::Array(values), e["values"], "{ctx}: values");
                if block_format.is_none() {
                    check_typed_views(&t, &ctx, e);
                }
            }
            Layout::Coo { .. } => {
                let v = t.coo().unwrap_or_else(|err| panic!("{ctx}: {err}"));
                assert_eq!(indices_json(&v.indices), e["indices"], "{ctx}: indices");
                let values: Vec<Value> = (0..v.nnz).map(|i| element(et, v.values, i)).collect();
                assert_eq!(Value::Array(values), e["values"], "{ctx}: values");
            }
            Layout::Csr { .. } | Layout::Csc { .. } => {
                let v = if matches!(layout, Layout::Csr { .. }) {
                    t.csr()
                } else {
                    t.csc()
                }
                .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                assert_eq!(indices_json(&v.pointers), e["pointers"], "{ctx}: pointers");
                assert_eq!(indices_json(&v.indices), e["indices"], "{ctx}: indices");
                let values: Vec<Value> = (0..v.nnz).map(|i| element(et, v.values, i)).collect();
                assert_eq!(Value::Array(values), e["values"], "{ctx}: values");
            }
        }

        // Quantization descriptor and parameters.
        match (t.quantization(), e["quantization"].as_object()) {
            (None, None) => {}
            (Some(q), Some(qe)) => {
                // The expectations spell absent parameters as 0.
                assert_eq!(json!(q.scheme.kind().name()), qe["scheme"], "{ctx}");
                assert_eq!(json!(q.scheme.axis().unwrap_or(0)), qe["axis"], "{ctx}");
                assert_eq!(
                    json!(q.scheme.block_size().unwrap_or(0)),
                    qe["block_size"],
                    "{ctx}"
                );
                assert_eq!(json!(q.expressed_type.name()), qe["expressed_type"]);
                assert_eq!(json!(q.scale_type.name()), qe["scale_type"]);
                assert_eq!(
                    json!(q.zero_point_type.map(ElementType::name)),
                    qe["zero_point_type"]
                );
                assert_eq!(json!(q.storage_min), qe["storage_min"]);
                assert_eq!(json!(q.storage_max), qe["storage_max"]);
                let scales = t
                    .buffer(hurray::descriptor::BufferRole::Scales)
                    .expect("scales");
                let n = qe["scales"].as_array().map_or(0, Vec::len) as u64;
                let got: Vec<Value> = (0..n).map(|i| element(q.scale_type, scales, i)).collect();
                assert_eq!(Value::Array(got), qe["scales"], "{ctx}: scales");
                if let Some(zt) = q.zero_point_type {
                    let zps = t
                        .buffer(hurray::descriptor::BufferRole::ZeroPoints)
                        .expect("zero points");
                    let got: Vec<Value> = (0..n).map(|i| element(zt, zps, i)).collect();
                    assert_eq!(Value::Array(got), qe["zero_points"], "{ctx}: zero points");
                }
                // Format 1.2's fields; the 1.0/1.1 vectors spell them as their defaults.
                assert_eq!(json!(q.tensor_scale), qe["tensor_scale"], "{ctx}");
                assert_eq!(
                    json!(q.offset_type.map(ElementType::name)),
                    qe["offset_type"],
                    "{ctx}"
                );
                if let Some(ot) = q.offset_type {
                    let offsets = t
                        .buffer(hurray::descriptor::BufferRole::Offsets)
                        .expect("offsets");
                    let got: Vec<Value> = (0..n).map(|i| element(ot, offsets, i)).collect();
                    assert_eq!(Value::Array(got), qe["offsets"], "{ctx}: offsets");
                }
                check_quantization_1_4(&t, &q, qe, &ctx);
            }
            (q, qe) => panic!("{ctx}: quantization {q:?} vs {qe:?}"),
        }
    }
}

/// Format 1.4's fields (the older vectors spell them as their defaults),
/// the code table's and the group index's values.
fn check_quantization_1_4(
    t: &hurray::TensorRef<'_>,
    q: &hurray::Quantization,
    qe: &serde_json::Map<String, Value>,
    ctx: &str,
) {
    let name = |t: Option<ElementType>| json!(t.map(ElementType::name));
    assert_eq!(name(q.code_table_type), qe["code_table_type"], "{ctx}");
    assert_eq!(json!(q.tensor_offset), qe["tensor_offset"], "{ctx}");
    assert_eq!(name(q.group_index_type), qe["group_index_type"], "{ctx}");
    assert_eq!(
        json!(q.block_format.map(hurray::descriptor::BlockFormat::name)),
        qe["block_format"],
        "{ctx}"
    );
    for (level, key) in [
        (&q.scale_quantization, "scale_quantization"),
        (&q.offset_quantization, "offset_quantization"),
    ] {
        let got = level.as_deref().map(|l| {
            json!({
                "scheme": l.scheme.kind().name(),
                "axis": l.scheme.axis().unwrap_or(0),
                "block_size": l.scheme.block_size().unwrap_or(0),
                "expressed_type": l.expressed_type.name(),
                "scale_type": l.scale_type.name(),
                "code_table_type": l.code_table_type.map(ElementType::name),
                "tensor_scale": l.tensor_scale,
                "tensor_offset": l.tensor_offset,
            })
        });
        assert_eq!(got.unwrap_or(Value::Null), qe[key], "{ctx}: {key}");
    }
    for (ty, role, key) in [
        (
            q.code_table_type,
            hurray::descriptor::BufferRole::CodeTable,
            "code_table",
        ),
        (
            q.group_index_type,
            hurray::descriptor::BufferRole::GroupIndex,
            "group_index",
        ),
    ] {
        if let Some(ty) = ty {
            let bytes = t.buffer(role).expect("buffer");
            let n = bytes.len() as u64 * 8 / u64::from(ty.bits());
            let got: Vec<Value> = (0..n).map(|i| element(ty, bytes, i)).collect();
            assert_eq!(Value::Array(got), qe[key], "{ctx}: {key}");
        }
    }
}

/// The typed zero-copy views agree with the bytes.
fn check_typed_views(t: &hurray::TensorRef<'_>, ctx: &str, e: &Value) {
    let data = t.data().expect("data");
    let contiguous = !matches!(t.layout(), Layout::Strided(_));
    macro_rules! same {
        ($ty:ty) => {{
            let s = t.as_strided::<$ty>().expect(ctx).0;
            assert_eq!(hurray::as_bytes(s), data, "{ctx}: typed view");
            if !data.is_empty() {
                assert_eq!(
                    s.as_ptr() as usize,
                    data.as_ptr() as usize,
                    "{ctx}: zero-copy"
                );
            }
            if contiguous {
                assert_eq!(
                    t.as_slice::<$ty>().expect(ctx).len() as u64,
                    t.element_count().unwrap_or(0)
                );
            }
        }};
    }
    match t.element_type() {
        ElementType::Int8 => same!(i8),
        ElementType::UInt8 => same!(u8),
        ElementType::Int16 => same!(i16),
        ElementType::UInt16 => same!(u16),
        ElementType::Int32 => same!(i32),
        ElementType::UInt32 => same!(u32),
        ElementType::Int64 => same!(i64),
        ElementType::UInt64 => same!(u64),
        ElementType::Float32 => same!(f32),
        ElementType::Float64 => same!(f64),
        ElementType::Float8E4M3FN => same!(hurray::elements::Float8E4M3FN),
        ElementType::Float8E5M2 => same!(hurray::elements::Float8E5M2),
        ElementType::Complex64 => same!(hurray::elements::Complex64),
        ElementType::Complex128 => same!(hurray::elements::Complex128),
        et if et.bits() < 8 && et.class() != ElementClass::Float => {
            let p = t.packed().expect(ctx);
            let got: Vec<Value> = p
                .iter()
                .map(|v| match et.class() {
                    ElementClass::Bool => json!(v != 0),
                    _ => json!(v),
                })
                .collect();
            assert_eq!(Value::Array(got), e["values"], "{ctx}: packed view");
        }
        _ => {}
    }
}

#[test]
fn valid_vectors_match_their_expectations() {
    let mut n = 0;
    for (name, exp) in vectors() {
        if exp["valid"] == json!(true) {
            check_valid(&name, &exp);
            n += 1;
        }
    }
    assert!(n >= 30, "only {n} valid vectors");
}

/// Dequantization through `QuantizedView::dequantize` (every scheme, empty axes included).
#[test]
fn dequantize_matches_expectations() {
    for (name, exp) in vectors() {
        if exp["valid"] != json!(true) {
            continue;
        }
        let file = File::open(path_of(&name)).expect("opens");
        for (t, e) in file
            .tensors()
            .zip(exp["tensors"].as_array().expect("tensors"))
        {
            if t.quantization().is_none() {
                continue;
            }
            if t.is_descriptor_only() {
                continue;
            }
            let got: Vec<Value> = t
                .quantized()
                .expect("quantized view")
                .dequantize()
                .iter()
                .map(|v| float_json(f64::from(*v)))
                .collect();
            assert_eq!(
                Value::Array(got),
                e["quantization"]["dequantized"],
                "{name}/{}",
                t.name()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Invalid vectors.
// ---------------------------------------------------------------------------

/// `(variant, tensor, field)` of an error, as the JSON expectations name them.
fn describe(e: &Error) -> (String, Option<String>, Option<String>) {
    let variant = e.kind().to_owned();
    let s = |v: &str| Some(v.to_owned());
    let (tensor, field) = match e {
        Error::BadFooter { field, .. } => (None, s(field)),
        Error::NamesNotSorted { name, .. } => (s(name), None),
        Error::MetadataNotSorted { owner, key, .. } => {
            ((owner != "file").then(|| owner.clone()), s(key))
        }
        Error::InvalidAlignment { owner, .. } => (
            owner
                .strip_prefix("tensor \"")
                .and_then(|o| o.strip_suffix('"'))
                .map(str::to_owned),
            s("alignment"),
        ),
        Error::InvalidElementType { tensor, field, .. } => (s(tensor), s(field)),
        Error::UnsupportedLayout { tensor, .. } => (s(tensor), s("layout")),
        Error::UnsupportedQuantization { tensor, .. } => (s(tensor), s("quantization.scheme")),
        Error::DynamicWithData { tensor, dim } => (s(tensor), Some(format!("shape[{dim}]"))),
        Error::DescriptorOnlyWithData { tensor, field, .. } => (s(tensor), s(field)),
        // File-level fields (the name index) carry an empty tensor name.
        Error::InvalidField { tensor, field, .. } => {
            ((!tensor.is_empty()).then(|| tensor.clone()), s(field))
        }
        Error::SizeOverflow { tensor, field } => (s(tensor), s(field)),
        Error::BufferCount { tensor, .. } => (s(tensor), s("buffers")),
        Error::BufferLength { tensor, buffer, .. }
        | Error::BufferOutOfBounds { tensor, buffer, .. }
        | Error::BufferMisaligned { tensor, buffer, .. }
        | Error::InvalidSparseIndex { tensor, buffer, .. } => (s(tensor), s(buffer)),
        Error::BuffersOverlap {
            second,
            second_buffer,
            ..
        } => (s(second), s(second_buffer)),
        _ => (None, None),
    };
    (variant, tensor, field)
}

/// Opens the file and, like `hurray validate`, checks every sparse tensor's index data.
fn open_and_view(path: &Path) -> Result<(), (&'static str, Error)> {
    let file = File::open(path).map_err(|e| ("open", e))?;
    for t in file.tensors() {
        if t.is_descriptor_only() {
            continue;
        }
        let r = match t.layout() {
            Layout::Coo { .. } => t.coo().map(|_| ()),
            Layout::Csr { .. } => t.csr().map(|_| ()),
            Layout::Csc { .. } => t.csc().map(|_| ()),
            _ => Ok(()),
        };
        r.map_err(|e| ("view", e))?;
    }
    Ok(())
}

#[test]
fn invalid_vectors_fail_with_the_named_error() {
    let mut n = 0;
    let mut failures = Vec::new();
    for (name, exp) in vectors() {
        if exp["valid"] != json!(false) {
            continue;
        }
        n += 1;
        let want = &exp["error"];
        match open_and_view(&path_of(&name)) {
            Ok(()) => failures.push(format!("{name}: accepted, expected {want}")),
            Err((stage, e)) => {
                let (variant, tensor, field) = describe(&e);
                let mut got = json!({
                    "variant": variant,
                    "stage": stage,
                    "tensor": tensor,
                    "field": field,
                });
                if let Error::BuffersOverlap {
                    first,
                    first_buffer,
                    ..
                } = &e
                {
                    got["with"] = json!({ "tensor": first, "field": first_buffer });
                }
                if let Some(with) = got.get("with").cloned() {
                    // The pair of overlapping buffers, in either order.
                    let mut swapped = got.clone();
                    swapped["with"] = json!({ "tensor": got["tensor"], "field": got["field"] });
                    swapped["tensor"] = with["tensor"].clone();
                    swapped["field"] = with["field"].clone();
                    if &swapped == want {
                        got = swapped;
                    }
                }
                if &got != want {
                    failures.push(format!("{name}: got {got} ({e}), expected {want}"));
                }
            }
        }
        // The same bytes through the in-memory constructor fail the same way.
        if want["stage"] == json!("open") {
            let bytes = std::fs::read(path_of(&name)).expect("read");
            match File::from_bytes(&bytes) {
                Ok(_) => failures.push(format!("{name}: from_bytes accepted it")),
                Err(e) => {
                    if json!(describe(&e).0) != want["variant"] {
                        failures.push(format!("{name}: from_bytes gave {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n >= 20, "only {n} invalid vectors");
}
