//! `hurray convert model.hurray model.gguf`: a Hurray file written as
//! GGUF, every tensor in the GGUF type whose Hurray form it has (ADR-0013),
//! its blocks joined again bit for bit ([`super::blocks::join`]).
//!
//! A file converted from GGUF carries the original's layout (the
//! [`LAYOUT_KEY`] entry: version, each key's type in file order, tensor
//! order), so it is written back as the same bytes: the key/values parsed
//! back from their renderings in their recorded types, the tensor infos in
//! the original order, the data laid out as ggml lays it out (each tensor
//! at the next multiple of `general.alignment`, 32 by default, padding
//! zeros, after the last tensor too, as the `gguf` package writes). Any
//! other Hurray file is written with its metadata as string keys and its
//! tensors in name order. What GGUF cannot hold is refused by name before a
//! byte is written: an element type GGUF lacks, a quantization no GGUF type
//! has, a sparse, strided or descriptor-only tensor, more than 4 dimensions.

use super::blocks::{self, Parts};
use super::codec::{self, IQ4_LEVELS};
use super::source::{BLOCK_FORMATS, LAYOUT_KEY, PLAIN};
use super::value::encode_string;
use super::{DEFAULT_ALIGNMENT, GGML_MAX_DIMS, GgufValue};
use anyhow::{Context, Result, anyhow, bail};
use hurray::{File, Layout, TensorRef, descriptor::BufferRole};
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

/// The layout recorded when the file was converted from GGUF.
#[derive(serde::Deserialize)]
struct Recorded {
    version: u32,
    kv: Vec<(String, String)>,
    tensors: Vec<String>,
}

/// One tensor as GGUF will hold it.
struct Planned<'a> {
    name: String,
    type_id: u32,
    /// GGUF's dimension order: fastest-varying first.
    dims: Vec<u64>,
    bytes: Cow<'a, [u8]>,
}

/// Writes `file` to `output` as GGUF, atomically; `allow_expansion` lifts
/// the expansion limit on the padding (`--allow-expansion`).
pub(in crate::convert) fn from_hurray(
    file: &File,
    output: &Path,
    allow_expansion: bool,
) -> Result<()> {
    let (out_file, mut out) = crate::convert::atomic_output(output)?;
    write(file, &mut out, allow_expansion)?;
    crate::convert::commit(out_file, out)
}

/// Writes `file` as GGUF to `out`; nothing is written when a tensor or key
/// cannot be, or (unless `allow_expansion`) when the padding the file's
/// `general.alignment` asks for would pass the expansion limit.
pub(in crate::convert) fn write(
    file: &File,
    out: &mut impl Write,
    allow_expansion: bool,
) -> Result<()> {
    let meta = file.reader().metadata().to_map();
    let recorded: Option<Recorded> = meta
        .get(LAYOUT_KEY)
        .map(|v| serde_json::from_str(v).with_context(|| format!("metadata {LAYOUT_KEY:?}")))
        .transpose()?;
    // Keys: the recorded ones in their order and types, then any other as a string.
    let mut kv: Vec<(String, GgufValue)> = Vec::new();
    if let Some(r) = &recorded {
        for (key, spec) in &r.kv {
            let text = meta.get(key).with_context(|| {
                format!("GGUF key {key:?} is recorded but not in the file's metadata")
            })?;
            let value =
                GgufValue::parse(spec, text).with_context(|| format!("GGUF key {key:?}"))?;
            kv.push((key.clone(), value));
        }
    }
    for (key, value) in &meta {
        if key != LAYOUT_KEY && !kv.iter().any(|(k, _)| k == key) {
            kv.push((key.clone(), GgufValue::String(value.clone())));
        }
    }
    let alignment = match kv.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, GgufValue::U32(a))) if a.is_power_of_two() => u64::from(*a),
        Some((_, v)) => bail!("general.alignment {} is not a u32 power of two", v.render()),
    };
    // Tensors: the recorded order, then the rest by name.
    let mut names: Vec<String> = recorded
        .as_ref()
        .map(|r| r.tensors.clone())
        .unwrap_or_default();
    for t in file.tensors() {
        if !names.iter().any(|n| n == t.name()) {
            names.push(t.name().to_owned());
        }
    }
    let mut problems = Vec::new();
    let mut planned = Vec::with_capacity(names.len());
    for name in &names {
        let t = file.tensor(name).map_err(|_| {
            anyhow!("tensor {name:?} is recorded in {LAYOUT_KEY:?} but not in the file")
        })?;
        match plan(&t) {
            Ok(p) => planned.push(p),
            Err(e) => problems.push(format!("tensor {name:?}: {e}")),
        }
    }
    match problems.len() {
        0 => {}
        1 => bail!("{}", problems[0]),
        n => bail!(
            "{n} tensors can't be written as GGUF:\n  {}",
            problems.join("\n  ")
        ),
    }
    let version = recorded.as_ref().map_or(3, |r| r.version);
    let mut head = Vec::new();
    head.extend_from_slice(super::MAGIC);
    head.extend_from_slice(&version.to_le_bytes());
    head.extend_from_slice(&(planned.len() as u64).to_le_bytes());
    head.extend_from_slice(&(kv.len() as u64).to_le_bytes());
    for (key, value) in &kv {
        encode_string(key, &mut head);
        value
            .encode(&mut head)
            .with_context(|| format!("GGUF key {key:?}"))?;
    }
    let mut offset = 0u64;
    for p in &planned {
        encode_string(&p.name, &mut head);
        head.extend_from_slice(&(p.dims.len() as u32).to_le_bytes());
        for d in &p.dims {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&p.type_id.to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        offset = pad(offset + p.bytes.len() as u64, alignment);
    }
    // The alignment is a key's value: padding past the expansion limit
    // would be bytes the input only claims.
    let bytes: u64 = head.len() as u64 + planned.iter().map(|p| p.bytes.len() as u64).sum::<u64>();
    if !allow_expansion {
        hurray::limits::check_expansion(
            &format!("(every tensor, padded to general.alignment {alignment})"),
            bytes,
            pad(head.len() as u64, alignment).saturating_add(offset),
        )?;
    }
    out.write_all(&head)?;
    write_padding(out, head.len() as u64, alignment)?;
    for p in &planned {
        out.write_all(&p.bytes)?;
        write_padding(out, p.bytes.len() as u64, alignment)?;
    }
    Ok(())
}

fn pad(x: u64, align: u64) -> u64 {
    x.div_ceil(align) * align
}

/// Zeros from `len` to the next multiple of `align`, from a fixed buffer:
/// the alignment is a key's value (up to 2^31), never an allocation's size.
fn write_padding(out: &mut impl Write, len: u64, align: u64) -> Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    let mut n = pad(len, align) - len;
    while n > 0 {
        let k = n.min(ZEROS.len() as u64);
        out.write_all(&ZEROS[..k as usize])?;
        n -= k;
    }
    Ok(())
}

/// How `t` is written, or why it cannot be.
fn plan<'a>(t: &TensorRef<'a>) -> Result<Planned<'a>> {
    if t.is_descriptor_only() {
        bail!("it has no data (descriptor-only)");
    }
    if !matches!(t.layout(), Layout::Dense) {
        bail!(
            "GGUF holds dense row-major tensors, and it is {}",
            t.layout().name()
        );
    }
    let shape = t.shape().to_wire();
    if shape.len() > GGML_MAX_DIMS as usize {
        bail!(
            "GGUF tensors have at most {GGML_MAX_DIMS} dimensions, and it has {}",
            shape.len()
        );
    }
    let dims: Vec<u64> = shape.iter().rev().copied().collect();
    let name = t.name().to_owned();
    let Some(q) = t.quantization() else {
        let et = t.element_type();
        let Some(&(type_id, _)) = PLAIN.iter().find(|p| p.1 == et) else {
            bail!("element type {} has no GGUF type", et.name());
        };
        return Ok(Planned {
            name,
            type_id,
            dims,
            bytes: Cow::Borrowed(t.data()?),
        });
    };
    if let Some(format) = q.block_format {
        let &(type_id, _) = BLOCK_FORMATS
            .iter()
            .find(|f| f.1 == format)
            .with_context(|| format!("block format {format} has no GGUF type"))?;
        return Ok(Planned {
            name,
            type_id,
            dims,
            bytes: Cow::Borrowed(t.data()?),
        });
    }
    let spec = codec::spec_of(t.element_type(), &q, shape.len())
        .context("its quantization is the form of no GGUF type (ADR-0013 lists them)")?;
    codec::check_row(&name, spec, *shape.last().unwrap_or(&0))?;
    // The buffers as the file holds them: join reads them in place.
    let buffer = |role| t.buffer(role).unwrap_or(&[]);
    if spec.table.is_some() {
        let table = buffer(BufferRole::CodeTable);
        if table.iter().map(|&b| b as i8).ne(IQ4_LEVELS) {
            bail!("its code table is not {}'s levels", spec.name);
        }
    }
    let parts = Parts {
        codes: t.data()?,
        scales: buffer(BufferRole::Scales),
        zero_points: buffer(BufferRole::ZeroPoints),
        offsets: buffer(BufferRole::Offsets),
        scale_scales: buffer(BufferRole::ScaleScales),
        offset_scales: buffer(BufferRole::OffsetScales),
    };
    let count = t.element_count().unwrap_or(0) as usize;
    let bytes = blocks::join(&name, spec, count / spec.elements, &parts)?;
    Ok(Planned {
        name,
        type_id: spec.id,
        dims,
        bytes: Cow::Owned(bytes),
    })
}
