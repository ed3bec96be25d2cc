//! The GGUF reader against files written by the `gguf` package, and hostile input.

use super::*;
use std::collections::BTreeMap;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/gguf/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The members of the fixture's `.npz` (stored, so read in place), by name.
fn expected_arrays(npz: &[u8]) -> BTreeMap<String, (Vec<u64>, Vec<u8>)> {
    let source = super::super::npz::source(npz).unwrap();
    source
        .entries
        .iter()
        .map(|e| {
            let super::super::Data::Slice(bytes) = e.data else {
                panic!("{}: not a stored member", e.name)
            };
            (e.name.clone(), (e.shape.clone(), bytes.to_vec()))
        })
        .collect()
}

/// IEEE binary16 to binary32, exactly (every f16 is an f32).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    match exp {
        0 => sign * man as f32 * 2f32.powi(-24),
        0x1f => f32::from_bits((u32::from(h & 0x8000) << 16) | 0x7f80_0000 | (man << 13)),
        _ => f32::from_bits((u32::from(h & 0x8000) << 16) | ((exp + 112) << 23) | (man << 13)),
    }
}

fn f16s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// Dequantizes as gguf.quants does it: the f16 fields widened to f32,
/// then one f32 multiply (and for Q4_1 a separate f32 add: numpy rounds
/// `d * q` before it adds `m`, no fused multiply-add).
fn dequantize(t: &GgufTensor<'_>) -> Vec<f32> {
    match t.ggml_type {
        GgmlType::F32 => t
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        GgmlType::F16 => f16s(t.data),
        GgmlType::BF16 => t
            .data
            .chunks_exact(2)
            .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
            .collect(),
        // Block types: the runtime's dequantization, through a converted
        // file (cli/tests/gguf.rs checks them against the reference).
        GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1 => dequantize_via_hurray(t),
        other => panic!("no dequantizer for {other}"),
    }
}

#[test]
fn reads_what_the_gguf_package_wrote() {
    let bytes = fixture("types.gguf");
    let json: serde_json::Value = serde_json::from_slice(&fixture("types.expected.json")).unwrap();
    let f = parse(&bytes).unwrap();
    assert_eq!(f.version, 3);
    assert_eq!(f.alignment, 32);

    // Metadata, in file order, rendered as the fixture script says.
    let got: Vec<(&str, String)> = f
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.render()))
        .collect();
    let want: Vec<(&str, String)> = json["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| (kv[0].as_str().unwrap(), kv[1].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        f.get("general.architecture"),
        Some(&GgufValue::String("llama".into()))
    );
    assert_eq!(f.get("llama.context_length"), Some(&GgufValue::U32(2048)));
    // The token array's render is JSON that reads back to the strings.
    let tokens: Vec<String> =
        serde_json::from_str(&f.get("tokenizer.ggml.tokens").unwrap().render()).unwrap();
    assert_eq!(tokens, ["<s>", "</s>", "hello", "a\"b"]);

    // Tensors: names, types and row-major shapes.
    let want = json["tensors"].as_array().unwrap();
    assert_eq!(f.tensors.len(), want.len());
    for (t, w) in f.tensors.iter().zip(want) {
        assert_eq!(t.name, w["name"].as_str().unwrap());
        assert_eq!(t.ggml_type.name(), w["type"].as_str());
        let shape: Vec<u64> = w["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(t.shape, shape, "{}", t.name);
    }
    let types: Vec<GgmlType> = f.tensors.iter().map(|t| t.ggml_type).collect();
    for t in [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
    ] {
        assert!(types.contains(&t), "{t}");
    }
}

#[test]
fn values_and_block_fields_match_the_reference_bit_for_bit() {
    let bytes = fixture("types.gguf");
    let expected = expected_arrays(&fixture("types.expected.npz"));
    let f = parse(&bytes).unwrap();
    for t in &f.tensors {
        // gguf.quants.dequantize, float32, in the tensor's shape.
        let (shape, want) = &expected[&t.name];
        assert_eq!(shape, &t.shape, "{}", t.name);
        let got: Vec<u8> = dequantize(t).iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(&got, want, "{}: dequantized values", t.name);
        if !matches!(
            t.ggml_type,
            GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1
        ) {
            continue;
        }
        let spec = codec::spec(t.ggml_type.id()).unwrap();
        let s = blocks::split(&t.name, spec, t.data).unwrap();
        let field = |f: &str| &expected[&format!("{}.{f}", t.name)].1;
        assert_eq!(&s.scales, field("scales"), "{}: scales", t.name);
        let mins = expected.get(&format!("{}.mins", t.name)).map(|m| &m.1);
        assert_eq!((!s.offsets.is_empty()).then_some(&s.offsets), mins);
        if t.ggml_type == GgmlType::Q8_0 {
            assert_eq!(&s.codes, field("codes"), "{}: codes", t.name);
        } else {
            // One code a byte in the reference; two a byte, in order, here.
            let want = field("codes");
            assert_eq!(s.codes.len() * 2, want.len());
            let got: Vec<u8> = hurray::pack::unpack_codes(&s.codes, 4, want.len() as u64).collect();
            assert_eq!(&got, want, "{}: codes", t.name);
        }
        // And back: the blocks as they were.
        let back = blocks::join(&t.name, spec, t.data.len() / spec.bytes, &s).unwrap();
        assert_eq!(back, t.data, "{}: joined blocks", t.name);
    }
}

/// `t` dequantized by the runtime, from a Hurray file written by the converter.
fn dequantize_via_hurray(t: &GgufTensor<'_>) -> Vec<f32> {
    let spec = codec::spec(t.ggml_type.id()).unwrap();
    let p = blocks::split(&t.name, spec, t.data).unwrap();
    let q = spec.quantization(t.shape.len());
    let desc = hurray::TensorDescriptor::new(&t.name, spec.codes, hurray::shape(&t.shape))
        .with_quantization(q.clone());
    let mut bytes = Vec::new();
    let mut w = hurray::Writer::new(&mut bytes).unwrap();
    let mut buffers: Vec<&[u8]> = vec![&p.codes];
    for role in q.buffer_roles() {
        buffers.push(match role {
            hurray::descriptor::BufferRole::Scales => &p.scales,
            hurray::descriptor::BufferRole::ZeroPoints => &p.zero_points,
            hurray::descriptor::BufferRole::Offsets => &p.offsets,
            _ => &[],
        });
    }
    w.add_tensor(&desc, &buffers).unwrap();
    w.finish().unwrap();
    let f = hurray::File::from_bytes(&bytes).unwrap();
    f.tensor(&t.name).unwrap().quantized().unwrap().dequantize()
}

#[test]
fn other_ggml_types_get_their_data_and_a_form() {
    let bytes = fixture("unsupported.gguf");
    let f = parse(&bytes).unwrap();
    let got: Vec<(&str, String, &[u64], usize)> = f
        .tensors
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.ggml_type.to_string(),
                &t.shape[..],
                t.data.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("q5_0", "Q5_0".to_owned(), &[2, 32][..], 2 * 22),
            ("q4_k", "Q4_K".to_owned(), &[1, 256][..], 144)
        ]
    );
    for t in &f.tensors {
        assert!(matches!(t.ggml_type, GgmlType::Other(_)));
        let spec = codec::spec(t.ggml_type.id()).unwrap();
        let p = blocks::split(&t.name, spec, t.data).unwrap();
        assert_eq!(
            blocks::join(&t.name, spec, t.data.len() / spec.bytes, &p).unwrap(),
            t.data
        );
        // Not whole blocks: refused with the tensor's name and type.
        let e = blocks::split(&t.name, spec, &t.data[1..])
            .unwrap_err()
            .to_string();
        assert!(e.contains(&t.name) && e.contains(spec.name), "{e}");
    }
    // Every type gguf 0.19 lists has a form.
    assert_eq!(source::every_type_is_handled(), []);
}

#[test]
fn split_reorders_the_nibbles_of_a_block() {
    // Q4_0 block: d = 1.0, byte j = element j (low) | element j + 16 (high).
    let mut block = vec![0x00, 0x3c];
    block.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let t = GgmlType::Q4_0;
    let tensor = GgufTensor {
        name: "t".into(),
        ggml_type: t,
        shape: vec![32],
        data: &block,
    };
    let spec = codec::spec(t.id()).unwrap();
    let s = blocks::split(&tensor.name, spec, tensor.data).unwrap();
    assert_eq!(s.scales, [0x00, 0x3c]);
    assert_eq!(s.zero_points, [8]);
    // Elements 0..16 are 0..15, elements 16..32 are 15..0.
    let codes: Vec<u8> = (0..16).chain((0..16).rev()).collect();
    assert_eq!(s.codes, hurray::pack::pack_codes(codes, 4));
    assert_eq!(s.codes[0], 0x10);
    assert_eq!(s.codes[8], 0xef);
}

/// Builds GGUF files by hand.
struct Gguf(Vec<u8>);

impl Gguf {
    fn new(version: u32, tensors: u64, kvs: u64) -> Self {
        let mut g = Gguf(b"GGUF".to_vec());
        g.u32(version).u64(tensors).u64(kvs);
        g
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend(s.as_bytes());
        self
    }
    fn info(&mut self, name: &str, dims: &[u64], t: u32, offset: u64) -> &mut Self {
        self.str(name).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u32(t).u64(offset)
    }
    /// Pads to `align` and appends `data`.
    fn data(&mut self, align: usize, data: &[u8]) -> &mut Self {
        while !self.0.len().is_multiple_of(align) {
            self.0.push(0);
        }
        self.0.extend(data);
        self
    }
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

fn err(bytes: &[u8]) -> String {
    format!("{:#}", parse(bytes).unwrap_err())
}

#[test]
fn every_truncation_fails_and_no_byte_flip_panics() {
    let bytes = fixture("types.gguf");
    for n in 0..bytes.len() {
        assert!(parse(&bytes[..n]).is_err(), "prefix of {n} bytes parsed");
    }
    let mut b = bytes.clone();
    for i in 0..b.len() {
        for flip in [0xff, 0x80, 0x01] {
            b[i] ^= flip;
            let _ = parse(&b);
            b[i] ^= flip;
        }
    }
}

#[test]
fn claimed_counts_and_lengths_fail_before_allocating() {
    let huge = 1u64 << 60;
    assert!(err(Gguf::new(3, huge, 0).bytes()).contains("tensor count"));
    assert!(err(Gguf::new(3, 0, huge).bytes()).contains("metadata count"));
    assert!(err(Gguf::new(3, u64::MAX, u64::MAX).bytes()).contains("count"));
    // A key of 2^60 bytes.
    let mut g = Gguf::new(3, 0, 1);
    g.u64(huge).u32(4).u32(0);
    assert!(
        err(g.bytes()).contains("metadata key 0"),
        "{}",
        err(g.bytes())
    );
    // A string value of 2^60 bytes.
    let mut g = Gguf::new(3, 0, 1);
    g.str("k").u32(8).u64(huge).u64(0);
    assert!(err(g.bytes()).contains("\"k\""));
    // Arrays of 2^60 u8s, strings and arrays.
    for t in [0u32, 8, 9, 12] {
        let mut g = Gguf::new(3, 0, 1);
        g.str("a").u32(9).u32(t).u64(huge).u64(0);
        let e = err(g.bytes());
        assert!(e.contains("array length") && e.contains("\"a\""), "{e}");
    }
    // A tensor name of 2^60 bytes.
    let mut g = Gguf::new(3, 1, 0);
    g.u64(huge).u64(0).u64(0).u64(0);
    assert!(err(g.bytes()).contains("tensor info 0"));
}

#[test]
fn refuses_what_ggml_refuses() {
    // Versions.
    let e = err(Gguf::new(1, 0, 0).bytes());
    assert!(e.contains("version 1"), "{e}");
    assert!(err(Gguf::new(4, 0, 0).bytes()).contains("version 4"));
    assert!(err(Gguf::new(3u32.swap_bytes(), 0, 0).bytes()).contains("big-endian"));
    assert!(parse(Gguf::new(2, 0, 0).bytes()).is_ok());
    assert!(err(b"GGML\x03\0\0\0").contains("not a GGUF file"));
    // Five dimensions.
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[1, 1, 1, 1, 1], 0, 0).data(32, &[0; 4]);
    let e = err(g.bytes());
    assert!(e.contains("\"t\"") && e.contains("5 dimensions"), "{e}");
    // Duplicate tensor names and keys.
    let mut g = Gguf::new(3, 2, 0);
    g.info("t", &[1], 0, 0)
        .info("t", &[1], 0, 32)
        .data(32, &[0; 36]);
    assert!(err(g.bytes()).contains("duplicate tensor name"));
    let mut g = Gguf::new(3, 0, 2);
    g.str("k").u32(4).u32(1).str("k").u32(4).u32(2);
    assert!(err(g.bytes()).contains("duplicate key"));
    // Offsets: past the end, and not where ggml lays the data out.
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[4], 0, 0).data(32, &[0; 15]);
    assert!(err(g.bytes()).contains("run past the end"));
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[4], 0, u64::MAX - 3).data(32, &[0; 16]);
    assert!(err(g.bytes()).contains("\"t\": data offset 18446744073709551612"));
    // Past an unknown type only alignment is checked, and the range still is.
    for offset in [64, 1 << 40, u64::MAX - 31] {
        let mut g = Gguf::new(3, 2, 0);
        g.info("u", &[4], 99, 0)
            .info("t", &[4], 0, offset)
            .data(32, &[0; 64]);
        let e = err(g.bytes());
        assert!(e.contains("\"t\"") && e.contains("run past the end"), "{e}");
    }
    let mut g = Gguf::new(3, 2, 0);
    g.info("u", &[4], 99, 0)
        .info("v", &[4], 99, 64)
        .data(32, &[0; 32]);
    assert!(err(g.bytes()).contains("past the end of the 32-byte data section"));
    let mut g = Gguf::new(3, 2, 0);
    g.info("a", &[4], 0, 0)
        .info("b", &[4], 0, 16)
        .data(32, &[0; 64]);
    let e = err(g.bytes());
    assert!(
        e.contains("\"b\"") && e.contains("offset 16") && e.contains("at 32"),
        "{e}"
    );
    // Element counts and byte sizes that overflow.
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[1 << 32, 1 << 32, 2], 0, 0).data(32, &[]);
    assert!(err(g.bytes()).contains("\"t\""));
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[1 << 62], 0, 0).data(32, &[]);
    assert!(err(g.bytes()).contains("overflows"));
    let mut g = Gguf::new(3, 1, 0);
    g.info("t", &[1 << 63, 0], 0, 0).data(32, &[]);
    assert!(err(g.bytes()).contains("dimension 9223372036854775808"));
    // A quantized row that is not a whole number of blocks.
    let mut g = Gguf::new(3, 1, 0);
    g.info("q", &[33, 2], 8, 0).data(32, &[0; 136]);
    let e = err(g.bytes());
    assert!(
        e.contains("\"q\"") && e.contains("Q8_0 blocks of 32"),
        "{e}"
    );
    // Alignment: a uint32 power of two.
    let mut g = Gguf::new(3, 0, 1);
    g.str(ALIGNMENT_KEY).u32(4).u32(24);
    assert!(err(g.bytes()).contains("power of two"));
    let mut g = Gguf::new(3, 0, 1);
    g.str(ALIGNMENT_KEY).u32(10).u64(32);
    assert!(err(g.bytes()).contains("uint32"));
    // Metadata values.
    let mut g = Gguf::new(3, 0, 1);
    g.str("b").u32(7).0.push(2);
    assert!(err(g.bytes()).contains("neither 0 nor 1"));
    let mut g = Gguf::new(3, 0, 1);
    g.str("s").u32(8).u64(1).0.push(0xff);
    assert!(err(g.bytes()).contains("UTF-8"));
    let mut g = Gguf::new(3, 0, 1);
    g.str("x").u32(13).u32(0);
    assert!(err(g.bytes()).contains("unknown value type 13"));
    let mut g = Gguf::new(3, 0, 1);
    g.str("deep").u32(9);
    for _ in 0..MAX_ARRAY_DEPTH {
        g.u32(9).u64(1);
    }
    g.u32(0).u64(0);
    assert!(err(g.bytes()).contains("nested"));
}

#[test]
fn accepts_what_ggml_accepts() {
    // Empty and scalar tensors, an unknown type (no data, and offsets only
    // aligned after it), a custom alignment, nested arrays.
    let mut g = Gguf::new(3, 5, 3);
    g.str(ALIGNMENT_KEY).u32(4).u32(64);
    g.str("nested").u32(9).u32(9).u64(2);
    g.u32(5).u64(2).u32(1).u32(u32::MAX);
    g.u32(8).u64(0);
    g.str("f").u32(9).u32(6).u64(3);
    for v in [f32::NAN, f32::INFINITY, -1.5] {
        g.0.extend(v.to_le_bytes());
    }
    g.info("empty", &[32, 0], 2, 0)
        .info("scalar", &[], 0, 0)
        .info("mystery", &[7], 99, 64)
        .info("after", &[2], 1, 128)
        .info("q", &[32], 3, 192);
    let mut data = vec![0u8; 192 + 20];
    data[0..4].copy_from_slice(&2.5f32.to_le_bytes());
    g.data(64, &data);
    let f = parse(g.bytes()).unwrap();
    assert_eq!(f.alignment, 64);
    assert_eq!(f.get("nested").unwrap().render(), "[[1,-1],[]]");
    assert_eq!(f.get("f").unwrap().render(), "[\"NaN\",\"inf\",-1.5]");
    let t = &f.tensors;
    assert_eq!((t[0].shape.as_slice(), t[0].data.len()), (&[0, 32][..], 0));
    assert_eq!(t[0].ggml_type, GgmlType::Q4_0);
    assert_eq!(
        (t[1].shape.as_slice(), t[1].data),
        (&[][..], &2.5f32.to_le_bytes()[..])
    );
    assert_eq!(t[2].ggml_type, GgmlType::Unknown(99));
    assert_eq!(t[2].ggml_type.to_string(), "unknown ggml type 99");
    assert!(t[2].data.is_empty());
    assert_eq!(t[3].data.len(), 4);
    assert_eq!(t[4].data.len(), 20);
    // After a tensor of unknown size, offsets must still be aligned.
    let mut g = Gguf::new(3, 2, 0);
    g.info("mystery", &[7], 99, 0)
        .info("after", &[2], 1, 40)
        .data(32, &[0; 64]);
    assert!(err(g.bytes()).contains("multiple of the alignment"));
}

#[test]
fn scalars_render_in_decimal() {
    assert_eq!(GgufValue::F32(1e-5).render(), "0.00001");
    assert_eq!(GgufValue::F32(-0.0).render(), "-0");
    assert_eq!(GgufValue::F32(f32::NEG_INFINITY).render(), "-inf");
    assert_eq!(GgufValue::F64(1e300).render().len(), 301);
    assert_eq!(GgufValue::I64(i64::MIN).render(), "-9223372036854775808");
    assert_eq!(GgufValue::Bool(false).render(), "false");
    assert_eq!(GgufValue::String("a\"b".into()).render(), "a\"b");
    assert_eq!(
        GgufValue::Array(GgufArray::String(vec!["a\"b".into(), "\n".into()])).render(),
        r#"["a\"b","\n"]"#
    );
}
