//! GGUF files (llama.cpp's model format, versions 2 and 3) as a source: the
//! reader under the coming `hurray convert model.gguf out.hurray`.
//!
//! A GGUF file is a little-endian header (`GGUF`, version `u32`, tensor count
//! and metadata count `u64`), the metadata (key string, value type `u32`,
//! value), the tensor infos (name, `n_dims` `u32`, that many `u64`
//! dimensions fastest-varying first, ggml type `u32`, data offset `u64`), then
//! padding to `general.alignment` (default 32) and the data section. Strings
//! are a `u64` length and UTF-8 bytes. This is the layout `gguf.GGUFWriter`
//! writes and `gguf.GGUFReader` and ggml's `gguf_init_from_file` read.
//!
//! The input is hostile until parsed. Every read is bounds-checked, every
//! size and offset is computed with overflow checks, and nothing is allocated
//! at a size the file merely claims: a count or length is first bounded by
//! the bytes left (each item needs at least so many), so a claimed 2^60
//! tensors, keys, string bytes or array elements fails before any allocation.
//! Arrays may nest, at most [`MAX_ARRAY_DEPTH`] deep. What ggml refuses is
//! refused here too: versions other than 2 and 3, more than
//! [`GGML_MAX_DIMS`] dimensions, a row (`ne[0]`) that is not a whole number
//! of blocks, duplicate keys or tensor names, an alignment that is not a
//! `u32` power of two, and tensor offsets that are not exactly where ggml
//! lays the data out (each tensor right after the previous one, padded to the
//! alignment), which also rules out overlaps. A tensor of a type ggml no
//! longer (or does not yet) know is kept with no data and
//! [`GgmlType::Unknown`], so the converter can refuse it by name.
//!
//! Block-quantized tensors are split into their fields by [`split_blocks`]
//! without changing a bit of any scale or code.

use anyhow::{Context, Result, anyhow, bail};
use hurray::pack::Packer;
use std::collections::HashSet;
use std::fmt;

const MAGIC: &[u8; 4] = b"GGUF";
/// ggml's `GGML_MAX_DIMS`: tensor infos with more dimensions are refused.
pub(super) const GGML_MAX_DIMS: u32 = 4;
/// The data alignment when `general.alignment` is absent (`GGUF_DEFAULT_ALIGNMENT`).
pub(super) const DEFAULT_ALIGNMENT: u64 = 32;
/// The key that sets the data alignment.
const ALIGNMENT_KEY: &str = "general.alignment";
/// How deep metadata arrays may nest (an array of arrays is depth 2).
const MAX_ARRAY_DEPTH: usize = 8;
/// The fewest bytes one tensor info takes: name length, `n_dims`, type, offset.
const MIN_TENSOR_INFO: u64 = 8 + 4 + 4 + 8;
/// The fewest bytes one metadata pair takes: key length, value type, a 1-byte value.
const MIN_KV: u64 = 8 + 4 + 1;

/// Every ggml type with its name, elements per block and bytes per block, as
/// `gguf.constants.GGML_QUANT_SIZES` (gguf 0.19.0) lists them. Ids not here
/// (4 and 5 were Q4_2 and Q4_3, 31 to 33 the removed Q4_0_4_4 family) are
/// unknown.
const GGML_TYPES: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 40),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
    (40, "NVFP4", 64, 36),
    (41, "Q1_0", 128, 18),
];

/// A tensor's ggml type: the ones the converter handles by name, any other
/// type ggml knows (its size is known, so its data is sliced, but the
/// converter refuses it), and ids ggml does not know (no data).
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GgmlType {
    F32,
    F16,
    BF16,
    /// Blocks of 32: `f16 d`, `i8 qs[32]`; `x = d * q`.
    Q8_0,
    /// Blocks of 32: `f16 d`, `u8 qs[16]`, element `j` in the low nibble of
    /// `qs[j]` and element `j + 16` in its high nibble; `x = d * (q - 8)`.
    Q4_0,
    /// Blocks of 32: `f16 d`, `f16 m`, `u8 qs[16]` nibbles as Q4_0; `x = d * q + m`.
    Q4_1,
    /// Another type of [`GGML_TYPES`], by id.
    Other(u32),
    /// An id ggml does not know: its size is unknown.
    Unknown(u32),
}

impl GgmlType {
    pub(super) fn from_id(id: u32) -> GgmlType {
        match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            30 => GgmlType::BF16,
            8 => GgmlType::Q8_0,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            _ if GGML_TYPES.iter().any(|t| t.0 == id) => GgmlType::Other(id),
            _ => GgmlType::Unknown(id),
        }
    }

    /// The type's id in the file.
    pub(super) fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::BF16 => 30,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Other(id) | GgmlType::Unknown(id) => id,
        }
    }

    fn entry(self) -> Option<&'static (u32, &'static str, u64, u64)> {
        let id = self.id();
        GGML_TYPES.iter().find(|t| t.0 == id)
    }

    /// ggml's name of the type (`Q4_K`), `None` for an unknown id.
    pub(super) fn name(self) -> Option<&'static str> {
        self.entry().map(|t| t.1)
    }

    /// Elements per block and bytes per block (1 and the element size for
    /// plain types), `None` for an unknown id.
    pub(super) fn block(self) -> Option<(u64, u64)> {
        self.entry().map(|t| (t.2, t.3))
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown ggml type {}", self.id()),
        }
    }
}

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(GgufArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// A metadata array: elements of one type, kept typed so an array costs
/// about what its bytes in the file do (a `u8` array one byte an element).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum GgufArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Array(Vec<GgufArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl GgufValue {
    /// The value as a metadata string: a string as it is, an integer in
    /// decimal, a float in the shortest decimal that reads back to the same
    /// float, never in exponent form (`0.00001`, `10000`, `-0`; `NaN`, `inf`,
    /// `-inf`), a bool `true` or `false`, an array as compact JSON (strings
    /// JSON-escaped, non-finite floats as the JSON strings `"NaN"`, `"inf"`,
    /// `"-inf"`, since JSON has no such numbers).
    pub(super) fn render(&self) -> String {
        match self {
            GgufValue::U8(v) => v.to_string(),
            GgufValue::I8(v) => v.to_string(),
            GgufValue::U16(v) => v.to_string(),
            GgufValue::I16(v) => v.to_string(),
            GgufValue::U32(v) => v.to_string(),
            GgufValue::I32(v) => v.to_string(),
            GgufValue::U64(v) => v.to_string(),
            GgufValue::I64(v) => v.to_string(),
            GgufValue::F32(v) => v.to_string(),
            GgufValue::F64(v) => v.to_string(),
            GgufValue::Bool(v) => v.to_string(),
            GgufValue::String(s) => s.clone(),
            GgufValue::Array(a) => {
                let mut out = String::new();
                a.render_json(&mut out);
                out
            }
        }
    }

    /// The GGUF name of the value's type, for messages.
    fn type_name(&self) -> &'static str {
        match self {
            GgufValue::U8(_) => "uint8",
            GgufValue::I8(_) => "int8",
            GgufValue::U16(_) => "uint16",
            GgufValue::I16(_) => "int16",
            GgufValue::U32(_) => "uint32",
            GgufValue::I32(_) => "int32",
            GgufValue::F32(_) => "float32",
            GgufValue::Bool(_) => "bool",
            GgufValue::String(_) => "string",
            GgufValue::Array(_) => "array",
            GgufValue::U64(_) => "uint64",
            GgufValue::I64(_) => "int64",
            GgufValue::F64(_) => "float64",
        }
    }
}

/// A float as a JSON value: a number when finite, else a string.
fn json_float(out: &mut String, v: impl fmt::Display, finite: bool) {
    if finite {
        out.push_str(&v.to_string());
    } else {
        out.push('"');
        out.push_str(&v.to_string());
        out.push('"');
    }
}

impl GgufArray {
    fn render_json(&self, out: &mut String) {
        fn list<T>(out: &mut String, items: &[T], mut one: impl FnMut(&mut String, &T)) {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                one(out, item);
            }
            out.push(']');
        }
        fn num<T: fmt::Display>(out: &mut String, v: &T) {
            out.push_str(&v.to_string());
        }
        match self {
            GgufArray::U8(a) => list(out, a, num),
            GgufArray::I8(a) => list(out, a, num),
            GgufArray::U16(a) => list(out, a, num),
            GgufArray::I16(a) => list(out, a, num),
            GgufArray::U32(a) => list(out, a, num),
            GgufArray::I32(a) => list(out, a, num),
            GgufArray::U64(a) => list(out, a, num),
            GgufArray::I64(a) => list(out, a, num),
            GgufArray::Bool(a) => list(out, a, num),
            GgufArray::F32(a) => list(out, a, |o, v| json_float(o, v, v.is_finite())),
            GgufArray::F64(a) => list(out, a, |o, v| json_float(o, v, v.is_finite())),
            GgufArray::String(a) => list(out, a, |o, s| {
                o.push_str(&serde_json::Value::from(s.as_str()).to_string());
            }),
            GgufArray::Array(a) => list(out, a, |o, inner| inner.render_json(o)),
        }
    }
}

/// One tensor of a GGUF file.
#[derive(Debug)]
pub(super) struct GgufTensor<'a> {
    pub(super) name: String,
    pub(super) ggml_type: GgmlType,
    /// Row-major dimensions (GGUF lists them fastest-varying first: this is
    /// that list reversed, as `gguf.GGUFReader` and NumPy shape it).
    pub(super) shape: Vec<u64>,
    /// Offset of the data in the data section, as the file says.
    pub(super) offset: u64,
    /// The stored bytes: exactly the tensor's size for a type of known size,
    /// empty for [`GgmlType::Unknown`].
    pub(super) data: &'a [u8],
}

/// A parsed GGUF file: its metadata in file order and its tensors in file order.
#[derive(Debug)]
pub(super) struct GgufFile<'a> {
    pub(super) version: u32,
    pub(super) alignment: u64,
    pub(super) metadata: Vec<(String, GgufValue)>,
    pub(super) tensors: Vec<GgufTensor<'a>>,
}

impl GgufFile<'_> {
    /// The value of metadata key `key`.
    pub(super) fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// A bounds-checked little-endian reader over the file.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos.min(self.bytes.len())) as u64
    }

    /// The next `n` bytes; `what` names them when the file ends first.
    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        let left = self.remaining();
        if n > left {
            bail!(
                "{}: needs {n} bytes at byte {}, but the file has {left} left (truncated?)",
                what(),
                self.pos
            );
        }
        // n <= left <= usize::MAX, so neither conversion nor sum overflows.
        let start = self.pos;
        let end = start + n as usize;
        self.pos = end;
        self.bytes
            .get(start..end)
            .ok_or_else(|| anyhow!("{}: out of bounds", what()))
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let b = self.take(N as u64, what)?;
        b.try_into().map_err(|_| anyhow!("{}: short read", what()))
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A `u64` count of items each at least `min` bytes, bounded by the bytes left.
    fn count(&mut self, min: u64, what: &dyn Fn() -> String) -> Result<usize> {
        let n = self.u64(what)?;
        self.bound(n, min, what)
    }

    /// `n` items each at least `min` bytes, if the bytes left can hold them.
    fn bound(&self, n: u64, min: u64, what: &dyn Fn() -> String) -> Result<usize> {
        let left = self.remaining();
        if n > left / min {
            bail!(
                "{}: {n} claimed, but the {left} bytes left hold at most {} (each takes at least {min})",
                what(),
                left / min
            );
        }
        usize::try_from(n).with_context(|| format!("{}: {n} does not fit in memory", what()))
    }

    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let len = self.u64(&|| format!("{}: length", what()))?;
        let bytes = self.take(len, what)?;
        let s = std::str::from_utf8(bytes).map_err(|e| anyhow!("{}: not UTF-8 ({e})", what()))?;
        Ok(s.to_owned())
    }

    /// `n` fixed-size little-endian values.
    fn values<const N: usize, T>(
        &mut self,
        n: usize,
        from: fn([u8; N]) -> T,
        what: &dyn Fn() -> String,
    ) -> Result<Vec<T>> {
        let bytes = self.take((n as u64).saturating_mul(N as u64), what)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                from(a)
            })
            .collect())
    }
}

/// The fewest bytes one value of type `t` takes, `None` for an unknown type.
fn min_size(t: u32) -> Option<u64> {
    Some(match t {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 => 8,
        9 => 4 + 8,
        10..=12 => 8,
        _ => return None,
    })
}

fn bool_of(b: u8, what: &dyn Fn() -> String) -> Result<bool> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        _ => bail!("{}: bool byte {b} is neither 0 nor 1", what()),
    }
}

/// A value of type `t`; `depth` is how many arrays enclose it.
fn value(r: &mut Reader<'_>, t: u32, depth: usize, what: &dyn Fn() -> String) -> Result<GgufValue> {
    Ok(match t {
        0 => GgufValue::U8(u8::from_le_bytes(r.array(what)?)),
        1 => GgufValue::I8(i8::from_le_bytes(r.array(what)?)),
        2 => GgufValue::U16(u16::from_le_bytes(r.array(what)?)),
        3 => GgufValue::I16(i16::from_le_bytes(r.array(what)?)),
        4 => GgufValue::U32(u32::from_le_bytes(r.array(what)?)),
        5 => GgufValue::I32(i32::from_le_bytes(r.array(what)?)),
        6 => GgufValue::F32(f32::from_le_bytes(r.array(what)?)),
        7 => GgufValue::Bool(bool_of(r.array::<1>(what)?[0], what)?),
        8 => GgufValue::String(r.string(what)?),
        9 => GgufValue::Array(array(r, depth + 1, what)?),
        10 => GgufValue::U64(u64::from_le_bytes(r.array(what)?)),
        11 => GgufValue::I64(i64::from_le_bytes(r.array(what)?)),
        12 => GgufValue::F64(f64::from_le_bytes(r.array(what)?)),
        _ => bail!("{}: unknown value type {t}", what()),
    })
}

/// An array's element type, length and elements; `depth` counts this array.
fn array(r: &mut Reader<'_>, depth: usize, what: &dyn Fn() -> String) -> Result<GgufArray> {
    if depth > MAX_ARRAY_DEPTH {
        bail!("{}: arrays nested over {MAX_ARRAY_DEPTH} deep", what());
    }
    let t = r.u32(&|| format!("{}: array element type", what()))?;
    let min = min_size(t).ok_or_else(|| anyhow!("{}: unknown array element type {t}", what()))?;
    let n = r.count(min, &|| format!("{}: array length", what()))?;
    let item = |i: usize| move || format!("{}[{i}]", what());
    Ok(match t {
        0 => GgufArray::U8(r.values(n, u8::from_le_bytes, what)?),
        1 => GgufArray::I8(r.values(n, i8::from_le_bytes, what)?),
        2 => GgufArray::U16(r.values(n, u16::from_le_bytes, what)?),
        3 => GgufArray::I16(r.values(n, i16::from_le_bytes, what)?),
        4 => GgufArray::U32(r.values(n, u32::from_le_bytes, what)?),
        5 => GgufArray::I32(r.values(n, i32::from_le_bytes, what)?),
        6 => GgufArray::F32(r.values(n, f32::from_le_bytes, what)?),
        10 => GgufArray::U64(r.values(n, u64::from_le_bytes, what)?),
        11 => GgufArray::I64(r.values(n, i64::from_le_bytes, what)?),
        12 => GgufArray::F64(r.values(n, f64::from_le_bytes, what)?),
        7 => GgufArray::Bool(
            r.take(n as u64, what)?
                .iter()
                .enumerate()
                .map(|(i, &b)| bool_of(b, &item(i)))
                .collect::<Result<_>>()?,
        ),
        8 => {
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                v.push(r.string(&item(i))?);
            }
            GgufArray::String(v)
        }
        9 => {
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                v.push(array(r, depth + 1, &item(i))?);
            }
            GgufArray::Array(v)
        }
        _ => bail!("{}: unknown array element type {t}", what()),
    })
}

/// `x` rounded up to a multiple of `align` (a power of two), `None` on overflow.
fn align_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

/// A tensor info as stored, before its data is located.
struct Info {
    name: String,
    dims: Vec<u64>,
    type_id: u32,
    offset: u64,
}

/// Parses a whole GGUF file held in `bytes`; the tensors borrow their data from it.
pub(super) fn parse(bytes: &[u8]) -> Result<GgufFile<'_>> {
    let mut r = Reader { bytes, pos: 0 };
    let magic = r.take(4, &|| "the GGUF magic".into())?;
    if magic != MAGIC {
        bail!("not a GGUF file (it starts {magic:02x?}, not \"GGUF\")");
    }
    let version = r.u32(&|| "the GGUF version".into())?;
    match version {
        2 | 3 => {}
        1 => bail!(
            "GGUF version 1 (32-bit counts and lengths) is not supported; only versions 2 and 3 are"
        ),
        v if matches!(v.swap_bytes(), 2 | 3) => bail!(
            "this is a big-endian GGUF file (version {} byte-swapped); only little-endian GGUF is supported",
            v.swap_bytes()
        ),
        v => bail!("GGUF version {v} is not supported; only versions 2 and 3 are"),
    }
    let tensor_count = r.u64(&|| "the tensor count".into())?;
    let kv_count = r.count(MIN_KV, &|| "the metadata count".into())?;
    // The tensor infos follow the metadata, where their count is bounded
    // again; this early check fails at once what can never fit.
    r.bound(tensor_count, MIN_TENSOR_INFO, &|| "the tensor count".into())?;

    let mut metadata = Vec::with_capacity(kv_count);
    let mut keys = HashSet::with_capacity(kv_count);
    for i in 0..kv_count {
        let key = r.string(&|| format!("metadata key {i}"))?;
        let what = || format!("metadata key {key:?}");
        if !keys.insert(key.clone()) {
            bail!("{}: duplicate key", what());
        }
        let t = r.u32(&|| format!("{}: value type", what()))?;
        let v = value(&mut r, t, 0, &what)?;
        metadata.push((key, v));
    }

    let alignment = match metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY) {
        None => DEFAULT_ALIGNMENT,
        Some((_, GgufValue::U32(a))) if a.is_power_of_two() => u64::from(*a),
        Some((_, GgufValue::U32(a))) => {
            bail!("metadata {ALIGNMENT_KEY:?}: {a} is not a power of two above 0")
        }
        Some((_, v)) => bail!(
            "metadata {ALIGNMENT_KEY:?}: a {}, where ggml requires a uint32",
            v.type_name()
        ),
    };

    let tensor_count = r.bound(tensor_count, MIN_TENSOR_INFO, &|| "the tensor count".into())?;
    let mut infos = Vec::with_capacity(tensor_count);
    let mut names = HashSet::with_capacity(tensor_count);
    for i in 0..tensor_count {
        let name = r.string(&|| format!("tensor info {i}: name"))?;
        let what = || format!("tensor {name:?}");
        if !names.insert(name.clone()) {
            bail!("{}: duplicate tensor name", what());
        }
        let n_dims = r.u32(&|| format!("{}: n_dims", what()))?;
        if n_dims > GGML_MAX_DIMS {
            bail!(
                "{}: {n_dims} dimensions, over ggml's limit of {GGML_MAX_DIMS}",
                what()
            );
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for d in 0..n_dims {
            dims.push(r.u64(&|| format!("{}: dimension {d}", what()))?);
        }
        let type_id = r.u32(&|| format!("{}: ggml type", what()))?;
        let offset = r.u64(&|| format!("{}: data offset", what()))?;
        infos.push(Info {
            name,
            dims,
            type_id,
            offset,
        });
    }

    // The data section starts at the next multiple of the alignment.
    let header_end = r.pos as u64;
    let data_start = align_up(header_end, alignment)
        .filter(|&s| s <= bytes.len() as u64 || infos.is_empty())
        .with_context(|| {
            format!(
                "the data section (after {header_end} header bytes, aligned to {alignment}) starts past the end of the {}-byte file",
                bytes.len()
            )
        })?;
    let data = usize::try_from(data_start)
        .ok()
        .and_then(|s| bytes.get(s..))
        .unwrap_or(&[]);

    // ggml lays the tensors out back to back in info order, each padded to the
    // alignment, and refuses any other offset; after a tensor of unknown size
    // the next offset can't be predicted, so only its alignment is checked.
    let mut expected = Some(0u64);
    let mut tensors = Vec::with_capacity(infos.len());
    for info in infos {
        let what = || format!("tensor {:?}", info.name);
        let ggml_type = GgmlType::from_id(info.type_id);
        let shape: Vec<u64> = info.dims.iter().rev().copied().collect();
        if let Some(d) = info.dims.iter().find(|&&d| i64::try_from(d).is_err()) {
            bail!("{}: dimension {d} is over ggml's limit of 2^63 - 1", what());
        }
        let count = hurray::element_count(&shape).known().with_context(|| {
            format!(
                "{}: dimensions {:?} have no element count that fits 64 bits",
                what(),
                info.dims
            )
        })?;
        if i64::try_from(count).is_err() {
            bail!(
                "{}: {count} elements, over ggml's limit of 2^63 - 1",
                what()
            );
        }
        match expected {
            Some(e) if info.offset != e => bail!(
                "{}: data offset {}, where ggml lays it out at {e} (right after the previous tensor, aligned to {alignment})",
                what(),
                info.offset
            ),
            None if !info.offset.is_multiple_of(alignment) => bail!(
                "{}: data offset {} is not a multiple of the alignment {alignment}",
                what(),
                info.offset
            ),
            _ => {}
        }
        let Some((block, block_bytes)) = ggml_type.block() else {
            if info.offset > data.len() as u64 {
                bail!(
                    "{}: data offset {} is past the end of the {}-byte data section",
                    what(),
                    info.offset,
                    data.len()
                );
            }
            expected = None;
            tensors.push(GgufTensor {
                name: info.name,
                ggml_type,
                shape,
                offset: info.offset,
                data: &[],
            });
            continue;
        };
        let row = info.dims.first().copied().unwrap_or(1);
        if !row.is_multiple_of(block) {
            bail!(
                "{}: rows of {row} elements are not a whole number of {ggml_type} blocks of {block}",
                what()
            );
        }
        let size = (count / block).checked_mul(block_bytes).with_context(|| {
            format!(
                "{}: the byte size of {count} {ggml_type} elements overflows",
                what()
            )
        })?;
        let end = info.offset.checked_add(size);
        let slice = end
            .and_then(|end| {
                Some((
                    usize::try_from(info.offset).ok()?,
                    usize::try_from(end).ok()?,
                ))
            })
            .and_then(|(start, end)| data.get(start..end))
            .with_context(|| {
                format!(
                    "{}: {size} data bytes at offset {} run past the end of the {}-byte data section",
                    what(),
                    info.offset,
                    data.len()
                )
            })?;
        if let Some(e) = expected {
            let next = align_up(size, alignment).and_then(|padded| e.checked_add(padded));
            expected =
                Some(next.with_context(|| format!("{}: the data section size overflows", what()))?);
        }
        tensors.push(GgufTensor {
            name: info.name,
            ggml_type,
            shape,
            offset: info.offset,
            data: slice,
        });
    }

    Ok(GgufFile {
        version,
        alignment,
        metadata,
        tensors,
    })
}

/// A block-quantized tensor split into its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Split {
    /// Each block's `f16` scale `d`, little-endian, in block order.
    pub(super) scales: Vec<u8>,
    /// Q4_1's `f16` minimum `m` of each block, little-endian, in block order.
    pub(super) mins: Option<Vec<u8>>,
    /// The codes in element order: for Q8_0 the `i8` bytes as stored; for
    /// Q4_0 and Q4_1 the 4-bit codes packed as Hurray packs sub-byte
    /// elements (element `i` in byte `i / 2`, the low nibble for even `i`).
    pub(super) codes: Vec<u8>,
}

/// Splits a Q8_0, Q4_0 or Q4_1 tensor into its scales, mins and codes
/// without changing the bits of any of them.
///
/// A GGUF 4-bit block stores element `j` in the low nibble of byte `j` and
/// element `j + 16` in its high nibble; Hurray packs elements in order, two
/// a byte, low nibble first. So each 32-element block's 16 bytes are
/// rewritten with the same 32 codes in element order: every code is
/// unchanged, only where it sits in the bytes moves. Q8_0's codes are
/// already one byte each in element order and are copied as they are.
pub(super) fn split_blocks(t: &GgufTensor<'_>) -> Result<Split> {
    let (head, has_min) = match t.ggml_type {
        GgmlType::Q8_0 => (2, false),
        GgmlType::Q4_0 => (2, false),
        GgmlType::Q4_1 => (4, true),
        other => bail!(
            "tensor {:?}: {other} is not a block type split_blocks handles (Q8_0, Q4_0, Q4_1)",
            t.name
        ),
    };
    let (_, block_bytes) = t
        .ggml_type
        .block()
        .context("a handled type has a block size")?;
    let block_bytes = block_bytes as usize;
    if !t.data.len().is_multiple_of(block_bytes) {
        bail!(
            "tensor {:?}: {} data bytes are not a whole number of {}-byte {} blocks",
            t.name,
            t.data.len(),
            block_bytes,
            t.ggml_type
        );
    }
    let blocks = t.data.len() / block_bytes;
    let mut scales = Vec::with_capacity(blocks * 2);
    let mut mins = has_min.then(|| Vec::with_capacity(blocks * 2));
    let mut codes = Vec::with_capacity(blocks * (block_bytes - head));
    let mut packer = Packer::new(4);
    for b in t.data.chunks_exact(block_bytes) {
        let (h, qs) = b.split_at(head);
        scales.extend_from_slice(&h[..2]);
        if let Some(m) = mins.as_mut() {
            m.extend_from_slice(&h[2..4]);
        }
        if t.ggml_type == GgmlType::Q8_0 {
            codes.extend_from_slice(qs);
        } else {
            let mut ordered = [0u8; 32];
            let (low, high) = ordered.split_at_mut(16);
            for ((lo, hi), &q) in low.iter_mut().zip(high).zip(qs) {
                *lo = q & 0x0F;
                *hi = q >> 4;
            }
            packer.push(&ordered, &mut codes);
        }
    }
    // 32 codes are 16 whole bytes: nothing is left partial.
    packer.finish(&mut codes);
    Ok(Split {
        scales,
        mins,
        codes,
    })
}

#[cfg(test)]
mod tests {
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
            GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1 => {
                let s = split_blocks(t).unwrap();
                let d = f16s(&s.scales);
                let m = s.mins.as_deref().map(f16s);
                let n = d.len() * 32;
                (0..n)
                    .map(|i| {
                        let b = i / 32;
                        match t.ggml_type {
                            GgmlType::Q8_0 => f32::from(s.codes[i] as i8) * d[b],
                            GgmlType::Q4_0 => {
                                let q = hurray::pack::code_at(&s.codes, 4, i as u64).unwrap();
                                d[b] * f32::from(q as i8 - 8)
                            }
                            _ => {
                                let q = hurray::pack::code_at(&s.codes, 4, i as u64).unwrap();
                                d[b] * f32::from(q) + m.as_ref().unwrap()[b]
                            }
                        }
                    })
                    .collect()
            }
            other => panic!("no dequantizer for {other}"),
        }
    }

    #[test]
    fn reads_what_the_gguf_package_wrote() {
        let bytes = fixture("types.gguf");
        let json: serde_json::Value =
            serde_json::from_slice(&fixture("types.expected.json")).unwrap();
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
                assert!(split_blocks(t).is_err());
                continue;
            }
            let s = split_blocks(t).unwrap();
            let field = |f: &str| &expected[&format!("{}.{f}", t.name)].1;
            assert_eq!(&s.scales, field("scales"), "{}: scales", t.name);
            assert_eq!(
                s.mins.as_ref(),
                expected.get(&format!("{}.mins", t.name)).map(|m| &m.1)
            );
            if t.ggml_type == GgmlType::Q8_0 {
                assert_eq!(&s.codes, field("codes"), "{}: codes", t.name);
            } else {
                // One code a byte in the reference; two a byte, in order, here.
                let want = field("codes");
                assert_eq!(s.codes.len() * 2, want.len());
                let got: Vec<u8> =
                    hurray::pack::unpack_codes(&s.codes, 4, want.len() as u64).collect();
                assert_eq!(&got, want, "{}: codes", t.name);
                assert_eq!(s.codes, hurray::pack_codes(want.iter().copied(), 4));
            }
        }
    }

    #[test]
    fn other_ggml_types_get_their_data_but_no_split() {
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
            let e = split_blocks(t).unwrap_err().to_string();
            assert!(
                e.contains(&t.name) && e.contains(&t.ggml_type.to_string()),
                "{e}"
            );
        }
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
            offset: 0,
            data: &block,
        };
        let s = split_blocks(&tensor).unwrap();
        assert_eq!(s.scales, [0x00, 0x3c]);
        assert_eq!(s.mins, None);
        // Elements 0..16 are 0..15, elements 16..32 are 15..0.
        let codes: Vec<u8> = (0..16).chain((0..16).rev()).collect();
        assert_eq!(s.codes, hurray::pack_codes(codes, 4));
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
}
