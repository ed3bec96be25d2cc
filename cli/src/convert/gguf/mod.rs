//! GGUF files (llama.cpp's model format, versions 2 and 3) as a source of
//! `hurray convert model.gguf out.hurray`: the parser.
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
//! Block-quantized tensors are split into their fields ([`blocks`],
//! [`codec`]) without changing a bit of any scale or code, and joined
//! again when a Hurray file is written as GGUF ([`write`]).

mod blocks;
mod codec;
mod ggml_type;
mod source;
#[cfg(test)]
mod tests;
mod value;
mod write;

#[cfg(test)]
use ggml_type::GGML_TYPES;
pub(super) use ggml_type::GgmlType;
pub(super) use source::{Blocks, Part, source};
pub(super) use value::{GgufArray, GgufValue};
pub(super) use write::{from_hurray, write};

/// Every tensor of `bytes` held as codes and scales, split and joined: the
/// fuzz target's round-trip property. Panics if a block changes.
pub(super) fn blocks_round_trip(bytes: &[u8]) -> Result<usize> {
    let file = parse(bytes)?;
    let mut n = 0;
    for t in &file.tensors {
        if let Some(spec) = codec::spec(t.ggml_type.id()) {
            let parts = blocks::split(&t.name, spec, t.data)?;
            let back = blocks::join(&t.name, spec, t.data.len() / spec.bytes, &parts)?;
            assert_eq!(
                back, t.data,
                "tensor {:?}: split and join changed a block",
                t.name
            );
            n += 1;
        }
    }
    Ok(n)
}

use anyhow::{Context, Result, anyhow, bail};
use std::collections::HashSet;

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

/// One tensor of a GGUF file.
#[derive(Debug)]
pub(super) struct GgufTensor<'a> {
    pub(super) name: String,
    pub(super) ggml_type: GgmlType,
    /// Row-major dimensions (GGUF lists them fastest-varying first: this is
    /// that list reversed, as `gguf.GGUFReader` and NumPy shape it).
    pub(super) shape: Vec<u64>,
    /// The stored bytes: exactly the tensor's size for a type of known size,
    /// empty for [`GgmlType::Unknown`].
    pub(super) data: &'a [u8],
}

/// A parsed GGUF file: its metadata in file order and its tensors in file order.
#[derive(Debug)]
pub(super) struct GgufFile<'a> {
    /// Read by the tests; the conversion needs neither.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) version: u32,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) alignment: u64,
    pub(super) metadata: Vec<(String, GgufValue)>,
    pub(super) tensors: Vec<GgufTensor<'a>>,
}

impl GgufFile<'_> {
    /// The value of metadata key `key`.
    #[cfg(test)]
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
        let count = hurray::elements::element_count(&shape)
            .known()
            .with_context(|| {
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
