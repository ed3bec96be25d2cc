//! The format 1.4 quantization vectors: two-level scales and offsets (the
//! GGUF K-quants' form), code tables (IQ4_NL's levels; bitsandbytes' NF4
//! with double-quantized scales and a tensor offset), a group index (GPTQ's
//! activation order) and block formats (GGUF's lattice and ternary types).
//!
//! Expected values are computed here, from the schema's rule, by code of
//! their own: per element, `v` (the code, its table entry, or code minus
//! zero point) times the scale times the tensor scale, plus the offset, in
//! f64, rounded once to f32; then the tensor offset added and rounded
//! again; a quantized scale or offset first computed the same way. A block
//! format's values come from the runtime's decoder, which the Python suite
//! checks against `gguf.quants` (python/tests/test_vectors.py).

use super::Vector;
use super::build::{Spec, build};
use super::encode::{decode_all, encode, f32_codes, float_json, int_codes, ints_json};
use anyhow::Result;
use hurray::{
    ElementType as E, Quantization, TensorDescriptor,
    descriptor::{BlockFormat, QuantizationScheme},
    shape,
};
use serde_json::{Value, json};

fn f16(v: f32) -> u128 {
    u128::from(half::f16::from_f32(v).to_bits())
}

fn f16_value(code: u128) -> f64 {
    f64::from(half::f16::from_bits(code as u16).to_f32())
}

fn per_block(axis: u32, block_size: u64) -> QuantizationScheme {
    QuantizationScheme::PerBlock { axis, block_size }
}

/// The schema's rule for one element: `v * s * ts + o` in f64, rounded to
/// f32, then `+ tensor_offset` rounded again.
fn rule(v: f64, s: f64, ts: f64, o: Option<f64>, tensor_offset: f64) -> f32 {
    let x = match o {
        Some(o) => (v * s * ts + o) as f32,
        None => (v * s * ts) as f32,
    };
    if tensor_offset == 0.0 {
        x
    } else {
        (f64::from(x) + tensor_offset) as f32
    }
}

/// A deterministic byte stream (xorshift), for block contents.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// GGUF Q4_K's form: u4 codes [2, 64], per block 32 along axis 1; u6 scales
/// and u6 offsets, each quantized per block of 2 along axis 1 by an f16
/// super-scale (the offsets' with tensor scale -1: subtracted).
fn two_level() -> Result<Spec> {
    let dims = [2u64, 64];
    let codes: Vec<u128> = (0..128u128).map(|i| (i * 7 + 3) % 16).collect();
    let sc: [u128; 4] = [1, 63, 17, 0];
    let mn: [u128; 4] = [3, 60, 0, 33];
    let d = [f16(0.5), f16(0.0625)];
    let dmin = [f16(0.25), f16(-1.5)];
    let level = |tensor_scale: f64| {
        let mut l = Quantization::new(per_block(1, 2), E::Float32, E::Float16);
        l.tensor_scale = tensor_scale;
        Box::new(l)
    };
    let mut q = Quantization::new(per_block(1, 32), E::Float32, E::UInt6);
    q.offset_type = Some(E::UInt6);
    q.scale_quantization = Some(level(1.0));
    q.offset_quantization = Some(level(-1.0));
    let mut s =
        Spec::new(TensorDescriptor::new("q4_k", E::UInt4, shape(&dims)).with_quantization(q));
    s.buffers.push(encode(E::UInt4, &codes));
    s.buffers.push(encode(E::UInt6, &sc));
    s.buffers.push(Vec::new());
    s.buffers.push(encode(E::UInt6, &mn));
    s.buffers.push(encode(E::Float16, &d));
    s.buffers.push(encode(E::Float16, &dmin));
    let deq: Vec<Value> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (row, block) = (i / 64, (i % 64) / 32);
            let k = row * 2 + block;
            let scale = rule(sc[k] as f64, f16_value(d[row]), 1.0, None, 0.0);
            let offset = rule(mn[k] as f64, f16_value(dmin[row]), -1.0, None, 0.0);
            float_json(f64::from(rule(
                c as f64,
                f64::from(scale),
                1.0,
                Some(f64::from(offset)),
                0.0,
            )))
        })
        .collect();
    s.extra
        .insert("values".into(), decode_all(E::UInt4, &codes)?);
    s.extra.insert("scales".into(), decode_all(E::UInt6, &sc)?);
    s.extra.insert("zero_points".into(), json!([]));
    s.extra.insert("offsets".into(), decode_all(E::UInt6, &mn)?);
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}

/// IQ4_NL's form: u4 codes \[64\] standing for 16 i8 levels, f16 scales per block 32.
fn iq4_nl() -> Result<Spec> {
    let levels: [i128; 16] = [
        -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
    ];
    let codes: Vec<u128> = (0..64u128).map(|i| (i * 5 + 1) % 16).collect();
    let scales = [f16(0.015625), f16(-0.375)];
    let mut q = Quantization::new(per_block(0, 32), E::Float32, E::Float16);
    q.code_table_type = Some(E::Int8);
    let mut s =
        Spec::new(TensorDescriptor::new("iq4_nl", E::UInt4, shape(&[64])).with_quantization(q));
    s.buffers.push(encode(E::UInt4, &codes));
    s.buffers.push(encode(E::Float16, &scales));
    s.buffers.push(Vec::new());
    s.buffers
        .push(encode(E::Int8, &int_codes(E::Int8, &levels)));
    let deq: Vec<Value> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let v = levels[c as usize] as f64;
            float_json(f64::from(rule(
                v,
                f16_value(scales[i / 32]),
                1.0,
                None,
                0.0,
            )))
        })
        .collect();
    s.extra
        .insert("values".into(), decode_all(E::UInt4, &codes)?);
    s.extra
        .insert("scales".into(), decode_all(E::Float16, &scales)?);
    s.extra.insert("zero_points".into(), json!([]));
    s.extra.insert("code_table".into(), ints_json(&levels));
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}

/// bitsandbytes' NF4 with double quantization: u4 codes [2, 96] standing
/// for an f32 table of 16, per flat block of 64 (blocks run across rows);
/// the three block scales are u8 codes standing for an f32 table of 256,
/// times f32 super-scales per flat block of 2, plus a tensor offset.
fn nf4_double() -> Result<Spec> {
    let table: Vec<f32> = (0..16)
        .map(|i| (i as f32 - 7.5) / 7.5 * 0.987_654_3)
        .collect();
    let table2: Vec<f32> = (0..256)
        .map(|i| (i as f32 / 255.0 - 0.5) * 0.123_456_79)
        .collect();
    let codes: Vec<u128> = (0..192u128).map(|i| (i * 11 + 5) % 16).collect();
    let absmax_codes: [u128; 3] = [7, 250, 128];
    let absmax2 = [0.317_f32, -2.5];
    let tensor_offset = f64::from(0.041_666_668_f32);
    let flat = |block_size| QuantizationScheme::PerFlatBlock { block_size };
    let mut level = Quantization::new(flat(2), E::Float32, E::Float32);
    level.code_table_type = Some(E::Float32);
    level.tensor_offset = tensor_offset;
    let mut q = Quantization::new(flat(64), E::BFloat16, E::UInt8);
    q.code_table_type = Some(E::Float32);
    q.scale_quantization = Some(Box::new(level));
    let mut s =
        Spec::new(TensorDescriptor::new("nf4", E::UInt4, shape(&[2, 96])).with_quantization(q));
    s.buffers.push(encode(E::UInt4, &codes));
    s.buffers.push(encode(E::UInt8, &absmax_codes));
    s.buffers.push(Vec::new());
    s.buffers.push(encode(E::Float32, &f32_codes(&table)));
    s.buffers.push(encode(E::Float32, &f32_codes(&absmax2)));
    s.buffers.push(encode(E::Float32, &f32_codes(&table2)));
    let deq: Vec<Value> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let block = i / 64;
            let k = absmax_codes[block] as usize;
            let absmax = rule(
                f64::from(table2[k]),
                f64::from(absmax2[block / 2]),
                1.0,
                None,
                tensor_offset,
            );
            float_json(f64::from(rule(
                f64::from(table[c as usize]),
                f64::from(absmax),
                1.0,
                None,
                0.0,
            )))
        })
        .collect();
    s.extra
        .insert("values".into(), decode_all(E::UInt4, &codes)?);
    s.extra
        .insert("scales".into(), decode_all(E::UInt8, &absmax_codes)?);
    s.extra.insert("zero_points".into(), json!([]));
    s.extra.insert(
        "code_table".into(),
        decode_all(E::Float32, &f32_codes(&table))?,
    );
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}

/// GPTQ's activation order: u4 codes [3, 8], per block 4 along axis 1 (two
/// groups), u8 zero points and f16 scales [3, 2], and a group index naming
/// each column's group.
fn group_index() -> Result<Spec> {
    let codes: Vec<u128> = (0..24u128).map(|i| (i * 3 + 2) % 16).collect();
    let gidx: [i128; 8] = [1, 0, 1, 0, 0, 1, 1, 0];
    let scales: Vec<u128> = [0.5f32, -0.25, 2.0, 0.125, 1.5, -3.0]
        .iter()
        .map(|&v| f16(v))
        .collect();
    let zps: [i128; 6] = [8, 7, 0, 15, 9, 8];
    let mut q = Quantization::new(per_block(1, 4), E::Float32, E::Float16);
    q.zero_point_type = Some(E::UInt8);
    q.group_index_type = Some(E::Int32);
    let mut s =
        Spec::new(TensorDescriptor::new("gptq", E::UInt4, shape(&[3, 8])).with_quantization(q));
    s.buffers.push(encode(E::UInt4, &codes));
    s.buffers.push(encode(E::Float16, &scales));
    s.buffers.push(encode(E::UInt8, &int_codes(E::UInt8, &zps)));
    s.buffers
        .push(encode(E::Int32, &int_codes(E::Int32, &gidx)));
    let deq: Vec<Value> = codes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (row, col) = (i / 8, i % 8);
            let k = row * 2 + gidx[col] as usize;
            let v = c as f64 - zps[k] as f64;
            float_json(f64::from(rule(v, f16_value(scales[k]), 1.0, None, 0.0)))
        })
        .collect();
    s.extra
        .insert("values".into(), decode_all(E::UInt4, &codes)?);
    s.extra
        .insert("scales".into(), decode_all(E::Float16, &scales)?);
    s.extra.insert("zero_points".into(), ints_json(&zps));
    s.extra.insert("group_index".into(), ints_json(&gidx));
    s.extra.insert("dequantized".into(), Value::Array(deq));
    Ok(s)
}

/// One tensor of each block format: two rows of one block each, of bytes
/// from a fixed stream; the values as the runtime's decoder gives them.
fn block_formats() -> Result<Vec<Spec>> {
    let mut out = Vec::new();
    for (i, format) in BlockFormat::ALL.into_iter().enumerate() {
        let dims = [2, format.elements()];
        let raw = bytes(0x1400 + i as u64, 2 * format.bytes() as usize);
        let desc = TensorDescriptor::new(format.name(), E::UInt8, shape(&dims))
            .with_quantization(Quantization::blocks(format, 2));
        let mut file = Vec::new();
        let mut w = hurray::Writer::new(&mut file)?;
        w.add_tensor(&desc, &[&raw, &[], &[]])?;
        w.finish()?;
        let f = hurray::File::from_bytes(&file)?;
        let values = f.tensor(format.name())?.quantized()?.dequantize();
        let mut s = Spec::new(desc);
        s.buffers.push(raw.clone());
        s.buffers.push(Vec::new());
        s.buffers.push(Vec::new());
        let codes: Vec<u128> = raw.iter().map(|&b| u128::from(b)).collect();
        s.extra
            .insert("values".into(), decode_all(E::UInt8, &codes)?);
        s.extra.insert("scales".into(), json!([]));
        s.extra.insert("zero_points".into(), json!([]));
        s.extra.insert(
            "dequantized".into(),
            Value::Array(values.iter().map(|v| float_json(f64::from(*v))).collect()),
        );
        out.push(s);
    }
    Ok(out)
}

/// The format 1.4 quantization vectors.
pub(super) fn vectors() -> Result<Vec<Vector>> {
    Ok(vec![
        build(
            "quant_two_level",
            "format 1.4 two-level scales (GGUF Q4_K's form): u4 [2, 64] per block 32 along axis 1; u6 scales and u6 offsets, each quantized per block 2 along axis 1 by f16 super-scales (the offsets' tensor scale -1: subtracted); footer flag bit 2 set",
            None,
            &[],
            vec![two_level()?],
        )?,
        build(
            "quant_code_table",
            "format 1.4 code tables: IQ4_NL's form (u4 [64] standing for 16 i8 levels, f16 scales per block 32), and bitsandbytes' double-quantized NF4 (u4 [2, 96] standing for an f32 table of 16, per flat block of 64 across rows, expressed as bf16; u8 scale codes standing for an f32 table of 256 times f32 super-scales per flat block of 2, plus a tensor offset)",
            None,
            &[],
            vec![iq4_nl()?, nf4_double()?],
        )?,
        build(
            "quant_group_index",
            "format 1.4 group index (GPTQ's activation order): u4 [3, 8] per block 4 along axis 1 with u8 zero points and f16 scales [3, 2]; i32 group index [1, 0, 1, 0, 0, 1, 1, 0] names each column's group",
            None,
            &[],
            vec![group_index()?],
        )?,
        build(
            "quant_block_formats",
            "format 1.4 block formats: one u8 tensor [2, block] per format (GGUF's IQ1/IQ2/IQ3 lattices, TQ1_0, Q8_1, Q8_K, MXFP4, NVFP4, Q1_0), two blocks of fixed pseudo-random bytes each; values from the runtime's decoder, checked against gguf.quants by the Python suite",
            None,
            &[],
            block_formats()?,
        )?,
    ])
}
