//! A GGUF file as a conversion source: each tensor as a Hurray entry, in
//! the form [ADR-0013](../../../../docs/adr/ADR-0013-quantized-checkpoints.md)
//! gives its type:
//!
//! * F32, F16, BF16, F64, I8, I16, I32, I64: the Hurray type, the bytes as
//!   stored;
//! * the types held as codes and scales ([`super::codec`]): the codes in
//!   element order, the scales, zero points, minimums, code table and
//!   super-block scales as the quantization's buffers, every field's bits
//!   unchanged, de-interleaved one tensor at a time when it is written;
//! * the other block types (the IQ1/IQ2/IQ3 lattices, TQ1_0, Q8_1, Q8_K,
//!   MXFP4, NVFP4, Q1_0): a `u8` tensor of the logical shape whose values are
//!   the blocks as stored, with the quantization's block format.
//!
//! The expressed type is `f32`, what llama.cpp dequantizes to. The
//! key/value metadata becomes the file's metadata, each value rendered as a
//! string ([`super::GgufValue::render`]); the entry [`LAYOUT_KEY`] records
//! what `hurray convert m.hurray m.gguf` needs to write the same file
//! again: the GGUF version, each key's type in file order, and the tensors'
//! order.

use super::GgufFile;
use super::blocks::{self, Parts};
use super::codec::{self, IQ4_LEVELS};
use crate::convert::{Data, Entry, Quantized, Source};
use anyhow::{Context, Result, bail};
use hurray::{ElementType, Quantization, descriptor::BlockFormat};
use std::cell::RefCell;

/// The file metadata entry that records a GGUF file's layout.
pub(in crate::convert) const LAYOUT_KEY: &str = "hurray.gguf";

/// Which buffer of a block tensor a [`Data::Gguf`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::convert) enum Part {
    Codes,
    Scales,
    ZeroPoints,
    Offsets,
    CodeTable,
    ScaleScales,
    OffsetScales,
}

/// The parsed file, and the parts of the tensor being written.
#[derive(Debug)]
pub(in crate::convert) struct Blocks<'a> {
    file: GgufFile<'a>,
    /// (tensor index, its parts): computed once for all of a tensor's parts.
    current: RefCell<Option<(usize, Parts)>>,
}

impl Blocks<'_> {
    /// The bytes of `part` of tensor `index`.
    pub(in crate::convert) fn part(&self, index: usize, part: Part) -> Result<Vec<u8>> {
        let t = self
            .file
            .tensors
            .get(index)
            .context("no such GGUF tensor")?;
        let spec = codec::spec(t.ggml_type.id()).context("a split type")?;
        if part == Part::CodeTable {
            return Ok(IQ4_LEVELS.iter().map(|&v| v as u8).collect());
        }
        let mut current = self.current.borrow_mut();
        if current.as_ref().is_none_or(|(i, _)| *i != index) {
            *current = Some((index, blocks::split(&t.name, spec, t.data)?));
        }
        let (_, p) = current.as_ref().context("parts just stored")?;
        Ok(match part {
            Part::Codes => p.codes.clone(),
            Part::Scales => p.scales.clone(),
            Part::ZeroPoints => p.zero_points.clone(),
            Part::Offsets => p.offsets.clone(),
            Part::ScaleScales => p.scale_scales.clone(),
            Part::OffsetScales => p.offset_scales.clone(),
            Part::CodeTable => unreachable!("answered above"),
        })
    }
}

/// The plain GGUF types and their Hurray element types.
pub(in crate::convert) const PLAIN: [(u32, ElementType); 8] = [
    (0, ElementType::Float32),
    (1, ElementType::Float16),
    (30, ElementType::BFloat16),
    (28, ElementType::Float64),
    (24, ElementType::Int8),
    (25, ElementType::Int16),
    (26, ElementType::Int32),
    (27, ElementType::Int64),
];

/// The GGUF types held as a block format.
pub(in crate::convert) const BLOCK_FORMATS: [(u32, BlockFormat); 13] = [
    (9, BlockFormat::GgmlQ8_1),
    (15, BlockFormat::GgmlQ8_K),
    (34, BlockFormat::GgmlTq1_0),
    (16, BlockFormat::GgmlIq2Xxs),
    (17, BlockFormat::GgmlIq2Xs),
    (22, BlockFormat::GgmlIq2S),
    (18, BlockFormat::GgmlIq3Xxs),
    (21, BlockFormat::GgmlIq3S),
    (19, BlockFormat::GgmlIq1S),
    (29, BlockFormat::GgmlIq1M),
    (39, BlockFormat::GgmlMxfp4),
    (40, BlockFormat::GgmlNvfp4),
    (41, BlockFormat::GgmlQ1_0),
];

/// The tensors and metadata of the GGUF file `bytes`.
pub(in crate::convert) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let file = super::parse(bytes)?;
    let mut entries = Vec::with_capacity(file.tensors.len());
    let mut refused = Vec::new();
    for (index, t) in file.tensors.iter().enumerate() {
        let id = t.ggml_type.id();
        let plain = PLAIN.iter().find(|p| p.0 == id).map(|p| p.1);
        let format = BLOCK_FORMATS.iter().find(|f| f.0 == id).map(|f| f.1);
        let entry = if let Some(dtype) = plain {
            Entry::new(t.name.clone(), dtype, t.shape.clone(), Data::Slice(t.data))
        } else if let Some(format) = format {
            block_format_entry(t, format)?
        } else if let Some(spec) = codec::spec(id) {
            split_entry(index, t, spec)?
        } else {
            refused.push(format!(
                "tensor {:?}: {} is not a type gguf 0.19 lists",
                t.name, t.ggml_type
            ));
            continue;
        };
        entries.push(entry);
    }
    match refused.len() {
        0 => {}
        1 => bail!("{}", refused[0]),
        n => bail!(
            "{n} tensors can't be converted:\n  {}",
            refused.join("\n  ")
        ),
    }
    let mut metadata: std::collections::BTreeMap<String, String> = file
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.render()))
        .collect();
    if metadata.contains_key(LAYOUT_KEY) {
        bail!("the GGUF file has a key {LAYOUT_KEY:?}, which the conversion records itself");
    }
    metadata.insert(LAYOUT_KEY.to_owned(), layout(&file));
    Ok(Source {
        entries,
        metadata,
        zip: None,
        gguf: Some(Blocks {
            file,
            current: RefCell::new(None),
        }),
    })
}

/// The [`LAYOUT_KEY`] entry: `{"version": 3, "kv": [[key, type], ...],
/// "tensors": [name, ...]}`, keys and tensors in file order.
fn layout(file: &GgufFile<'_>) -> String {
    let kv: Vec<(String, String)> = file
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.type_spec()))
        .collect();
    let tensors: Vec<&str> = file.tensors.iter().map(|t| t.name.as_str()).collect();
    serde_json::json!({ "version": file.version, "kv": kv, "tensors": tensors }).to_string()
}

fn check_rank(t: &super::GgufTensor<'_>) -> Result<()> {
    if t.shape.is_empty() {
        bail!("tensor {:?}: a block-quantized scalar", t.name);
    }
    Ok(())
}

/// A tensor held in its blocks as stored.
fn block_format_entry<'a>(t: &super::GgufTensor<'a>, format: BlockFormat) -> Result<Entry<'a>> {
    check_rank(t)?;
    let mut e = Entry::new(
        t.name.clone(),
        ElementType::UInt8,
        t.shape.clone(),
        Data::Slice(t.data),
    );
    e.quantized = Some(Quantized {
        quantization: Quantization::blocks(format, t.shape.len()),
        buffers: vec![Data::None, Data::None],
    });
    Ok(e)
}

/// A tensor held as codes and scales: stored codes plus the quantization
/// and its buffers, all read lazily.
fn split_entry<'a>(
    index: usize,
    t: &super::GgufTensor<'a>,
    spec: &codec::Spec,
) -> Result<Entry<'a>> {
    check_rank(t)?;
    let row = *t.shape.last().context("rank checked")?;
    codec::check_row(&t.name, spec, row)?;
    let blocks = (t.data.len() / spec.bytes) as u64;
    let count = blocks * spec.elements as u64;
    let scales = blocks * spec.scales_per_block() as u64;
    let bytes = |n: u64, t: ElementType| t.byte_len(n).context("a block tensor's size");
    let data = |part, len| Data::Gguf { index, part, len };
    let q = spec.quantization(t.shape.len());
    let mut buffers = Vec::new();
    for role in q.buffer_roles() {
        use hurray::descriptor::BufferRole as R;
        buffers.push(match role {
            R::Scales => data(Part::Scales, bytes(scales, spec.scales)?),
            R::ZeroPoints if spec.zero_point.is_some() => data(Part::ZeroPoints, scales),
            R::ZeroPoints => Data::None,
            R::Offsets => data(
                Part::Offsets,
                bytes(scales, spec.offsets.context("offsets")?)?,
            ),
            R::CodeTable => data(Part::CodeTable, IQ4_LEVELS.len() as u64),
            R::ScaleScales => data(Part::ScaleScales, blocks * 2),
            R::OffsetScales => data(Part::OffsetScales, blocks * 2),
            other => bail!("tensor {:?}: no GGUF part for {other}", t.name),
        });
    }
    let mut e = Entry::new(
        t.name.clone(),
        spec.codes,
        t.shape.clone(),
        data(Part::Codes, bytes(count, spec.codes)?),
    );
    e.quantized = Some(Quantized {
        quantization: q,
        buffers,
    });
    Ok(e)
}

/// The GGUF types none of the tables above handles (none, as the tests check).
#[cfg(test)]
pub(super) fn every_type_is_handled() -> Vec<(u32, &'static str)> {
    super::GGML_TYPES
        .iter()
        .filter(|(id, ..)| {
            !PLAIN.iter().any(|p| p.0 == *id)
                && !BLOCK_FORMATS.iter().any(|f| f.0 == *id)
                && codec::spec(*id).is_none()
        })
        .map(|t| (t.0, t.1))
        .collect()
}
