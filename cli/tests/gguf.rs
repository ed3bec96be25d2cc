//! `hurray convert model.gguf model.hurray` on files written by llama.cpp's
//! own `gguf` Python package (`fixtures/gguf/make_fixtures.py`): every tensor
//! dequantizes to exactly what `gguf.quants.dequantize` gives (the expected
//! `.npz`, read by `hurray convert`), the GGUF key/values become the file's
//! metadata, and a type Hurray has no form for is refused by name with no
//! output written.

mod common;

use common::{convert, convert_err, hurray, json_dims};
use hurray::{
    ElementType, File, TensorRef,
    descriptor::{BufferRole, QuantizationScheme},
};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf")
}

/// The values of `t` as f32: dequantized, or decoded exactly.
fn values(t: &TensorRef<'_>) -> Vec<f32> {
    if t.quantization().is_some() {
        return t.quantized().unwrap().dequantize();
    }
    let bytes = t.data().unwrap();
    let width = (t.element_type().bits() / 8) as usize;
    bytes
        .chunks_exact(width)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..width].copy_from_slice(c);
            hurray::minifloat::to_f64(t.element_type(), u64::from_le_bytes(w)).unwrap() as f32
        })
        .collect()
}

#[test]
fn gguf_tensors_dequantize_exactly_as_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.hurray");
    convert(&fixtures().join("types.gguf"), &out);
    let expected_path = dir.path().join("expected.hurray");
    convert(&fixtures().join("types.expected.npz"), &expected_path);
    let file = File::open(&out).unwrap();
    let expected = File::open(&expected_path).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("types.expected.json")).unwrap(),
    )
    .unwrap();

    let tensors = manifest["tensors"].as_array().unwrap();
    assert_eq!(file.len(), tensors.len());
    for m in tensors {
        let name = m["name"].as_str().unwrap();
        let t = file.tensor(name).unwrap();
        let shape = json_dims(&m["shape"]);
        assert_eq!(t.shape().to_wire(), shape, "{name}");
        let (dtype, quantized) = match m["type"].as_str().unwrap() {
            "F32" => (ElementType::Float32, false),
            "F16" => (ElementType::Float16, false),
            "BF16" => (ElementType::BFloat16, false),
            "Q8_0" => (ElementType::Int8, true),
            "Q4_0" | "Q4_1" => (ElementType::UInt4, true),
            other => panic!("unexpected type {other}"),
        };
        assert_eq!(t.element_type(), dtype, "{name}");
        assert_eq!(t.quantization().is_some(), quantized, "{name}");
        let want = expected.tensor(name).unwrap();
        let want: Vec<f32> = want.as_slice::<f32>().unwrap().to_vec();
        let got = values(&t);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{name}[{i}]: {g} != {w}");
        }
    }

    // The block fields, de-interleaved bit for bit.
    let q4_0 = file.tensor("q4_0_3d").unwrap();
    let q = q4_0.quantization().unwrap();
    assert_eq!(
        q.scheme,
        QuantizationScheme::PerBlock {
            axis: 2,
            block_size: 32
        }
    );
    assert_eq!(
        (q.scale_type, q.zero_point_type),
        (ElementType::Float16, Some(ElementType::UInt8))
    );
    assert!(
        q4_0.buffer(BufferRole::ZeroPoints)
            .unwrap()
            .iter()
            .all(|&z| z == 8)
    );
    let q4_1 = file.tensor("q4_1_2d").unwrap().quantization().unwrap();
    assert_eq!(q4_1.offset_type, Some(ElementType::Float16));
    assert_eq!(q4_1.zero_point_type, None);

    // Every key/value, rendered as the manifest says.
    let metadata = file.reader().metadata().to_map();
    for kv in manifest["metadata"].as_array().unwrap() {
        let (k, v) = (kv[0].as_str().unwrap(), kv[1].as_str().unwrap());
        assert_eq!(metadata.get(k).map(String::as_str), Some(v), "metadata {k}");
    }

    // The runtime's validator accepts the file, and it uses 1.2's offsets.
    let validated = hurray(&[Path::new("validate"), &out]);
    assert!(validated.status.success(), "{validated:?}");
    assert_eq!(
        file.reader().version(),
        (hurray::format::VERSION_MAJOR, hurray::format::VERSION_MINOR)
    );
}

#[test]
fn k_quants_convert_and_write_back_the_same_file() {
    // A Q5_0 tensor (quantized by gguf.quants) and a Q4_K one (random
    // blocks): both held as codes and scales, and written back as GGUF,
    // the very bytes the `gguf` package wrote.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.hurray");
    convert(&fixtures().join("unsupported.gguf"), &out);
    let file = File::open(&out).unwrap();
    let q4_k = file.tensor("q4_k").unwrap().quantization().unwrap();
    assert_eq!(q4_k.scale_type, ElementType::UInt6);
    assert!(q4_k.scale_quantization.is_some() && q4_k.offset_quantization.is_some());
    assert_eq!(
        file.tensor("q5_0").unwrap().element_type(),
        ElementType::UInt5
    );
    let back = dir.path().join("back.gguf");
    convert(&out, &back);
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(fixtures().join("unsupported.gguf")).unwrap()
    );
    let back = dir.path().join("types.gguf");
    let types = dir.path().join("types.hurray");
    convert(&fixtures().join("types.gguf"), &types);
    convert(&types, &back);
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(fixtures().join("types.gguf")).unwrap()
    );
}

#[test]
fn what_gguf_cannot_hold_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // GGUF is written from Hurray only.
    let err = convert_err(&fixtures().join("types.gguf"), &dir.path().join("out.gguf"));
    assert!(
        err.contains("GGUF is written from a .hurray file only"),
        "{err}"
    );
    // A type GGUF lacks, named.
    let npz = dir.path().join("x.hurray");
    let mut w = hurray::Writer::create(&npz).unwrap();
    let d = hurray::TensorDescriptor::new("f8", ElementType::Float8E4M3FN, hurray::shape(&[4]));
    w.add_tensor(&d, &[&[0u8; 4]]).unwrap();
    w.finish().unwrap();
    let err = convert_err(&npz, &dir.path().join("x.gguf"));
    assert!(
        err.contains("\"f8\"") && err.contains("f8e4m3fn has no GGUF type"),
        "{err}"
    );
    assert!(!dir.path().join("x.gguf").exists());
    // Codes of Q4_0's form whose zero points are not Q4_0's 8: no GGUF type.
    let q = dir.path().join("q.hurray");
    let mut w = hurray::Writer::create(&q).unwrap();
    let mut quant = hurray::Quantization::new(
        QuantizationScheme::PerBlock {
            axis: 0,
            block_size: 32,
        },
        ElementType::Float32,
        ElementType::Float16,
    );
    quant.zero_point_type = Some(ElementType::UInt8);
    let d = hurray::TensorDescriptor::new("w", ElementType::UInt4, hurray::shape(&[32]))
        .with_quantization(quant);
    w.add_tensor(&d, &[&[0u8; 16], &[0, 0x3c], &[7]]).unwrap();
    w.finish().unwrap();
    let err = convert_err(&q, &dir.path().join("q.gguf"));
    assert!(
        err.contains("\"w\"") && err.contains("zero point 0 is 7"),
        "{err}"
    );
    // A truncated file is an error, not a crash, and writes nothing.
    let bytes = std::fs::read(fixtures().join("types.gguf")).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = convert_err(&cut, &dir.path().join("cut.hurray"));
    assert!(err.contains("reading"), "{err}");
}

#[test]
fn padding_a_key_asks_for_past_the_expansion_limit_is_refused() {
    // A Hurray file that records a GGUF layout whose general.alignment is
    // 1 GiB: its one 16-byte tensor would be written as 2 GiB of padding.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("aligned.hurray");
    let mut w = hurray::Writer::create(&input).unwrap();
    w.set_metadata(
        "hurray.gguf",
        r#"{"version": 3, "kv": [["general.alignment", "uint32"]], "tensors": ["t"]}"#,
    );
    w.set_metadata("general.alignment", "1073741824");
    let t = hurray::TensorDescriptor::new("t", ElementType::Float32, hurray::shape(&[4]));
    w.add_tensor(&t, &[&[0u8; 16]]).unwrap();
    w.finish().unwrap();
    let out = dir.path().join("aligned.gguf");
    let err = convert_err(&input, &out);
    assert!(
        err.contains("general.alignment 1073741824") && err.contains("expansion"),
        "{err}"
    );
}
