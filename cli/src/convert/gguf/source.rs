//! A GGUF file as a conversion source: each tensor as a Hurray entry.
//!
//! | GGUF type | Hurray tensor |
//! | --- | --- |
//! | F32, F16, BF16 | `f32`, `f16`, `bf16`, the bytes as stored |
//! | Q8_0 | `i8` quantized per block of 32 along the last axis, `f16` scales: x = d * q |
//! | Q4_0 | `u4`, the same blocks, `u8` zero points of 8: x = d * (q - 8) |
//! | Q4_1 | `u4`, the same blocks, `f16` offsets (the block minimum): x = d * q + m |
//!
//! Every code, scale and minimum keeps its bits; the block fields are only
//! de-interleaved into the quantization's buffers ([`super::split_blocks`]),
//! and that happens one tensor at a time, when the tensor is written, so a
//! conversion holds at most one tensor's fields in memory. The expressed
//! type is `f32`, what llama.cpp dequantizes to. Every other GGUF type is
//! refused up front, naming the tensor and the type. The key/value metadata
//! becomes the file's metadata, each value rendered as a string
//! ([`super::GgufValue::render`]).

use super::{GgmlType, GgufFile, Split, split_blocks};
use crate::convert::{Data, Entry, Quantized, Source};
use anyhow::{Context, Result, bail};
use hurray::{ElementType, Quantization, QuantizationScheme};
use std::cell::RefCell;

/// Elements per block of the GGUF block types read here.
const BLOCK: u64 = 32;
/// Q4_0's fixed zero point.
const Q4_0_ZERO_POINT: u8 = 8;

/// Which field of a block tensor a [`Data::Gguf`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::convert) enum Part {
    Codes,
    Scales,
    Mins,
    /// Q4_0's zero points: 8 for every block, one `u8` each.
    ZeroPoints,
}

/// The parsed file, and the fields of the tensor being written.
#[derive(Debug)]
pub(in crate::convert) struct Blocks<'a> {
    file: GgufFile<'a>,
    /// (tensor index, its split): computed once for all of a tensor's parts.
    current: RefCell<Option<(usize, Split)>>,
}

impl Blocks<'_> {
    /// The bytes of `part` of tensor `index`.
    pub(in crate::convert) fn part(&self, index: usize, part: Part) -> Result<Vec<u8>> {
        let t = self
            .file
            .tensors
            .get(index)
            .context("no such GGUF tensor")?;
        if part == Part::ZeroPoints {
            let blocks = t.data.len() as u64 / block_bytes(t.ggml_type)?;
            return Ok(vec![Q4_0_ZERO_POINT; blocks as usize]);
        }
        let mut current = self.current.borrow_mut();
        if current.as_ref().is_none_or(|(i, _)| *i != index) {
            *current = Some((index, split_blocks(t)?));
        }
        let (_, split) = current.as_ref().context("split just stored")?;
        Ok(match part {
            Part::Codes => split.codes.clone(),
            Part::Scales => split.scales.clone(),
            Part::Mins => split.mins.clone().unwrap_or_default(),
            Part::ZeroPoints => unreachable!("answered above"),
        })
    }
}

fn block_bytes(t: GgmlType) -> Result<u64> {
    Ok(t.block().context("a block type has a block size")?.1)
}

/// The tensors and metadata of the GGUF file `bytes`.
pub(in crate::convert) fn source(bytes: &[u8]) -> Result<Source<'_>> {
    let file = super::parse(bytes)?;
    let mut entries = Vec::with_capacity(file.tensors.len());
    let mut refused = Vec::new();
    for (index, t) in file.tensors.iter().enumerate() {
        let plain = |dtype| Entry::new(t.name.clone(), dtype, t.shape.clone(), Data::Slice(t.data));
        let entry = match t.ggml_type {
            GgmlType::F32 => plain(ElementType::Float32),
            GgmlType::F16 => plain(ElementType::Float16),
            GgmlType::BF16 => plain(ElementType::BFloat16),
            GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1 => block_entry(index, t)?,
            other => {
                refused.push(format!(
                    "tensor {:?}: GGUF type {other} has no Hurray form (F32, F16, BF16, Q8_0, \
                     Q4_0 and Q4_1 convert)",
                    t.name
                ));
                continue;
            }
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
    let metadata = file
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.render()))
        .collect();
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

/// The entry of a Q8_0, Q4_0 or Q4_1 tensor: stored codes plus the
/// quantization and its buffers, all read lazily.
fn block_entry<'a>(index: usize, t: &super::GgufTensor<'a>) -> Result<Entry<'a>> {
    let rank = t.shape.len();
    if rank == 0 {
        bail!("tensor {:?}: a block-quantized scalar", t.name);
    }
    let blocks = t.data.len() as u64 / block_bytes(t.ggml_type)?;
    let count = blocks * BLOCK;
    let data = |part, len| Data::Gguf { index, part, len };
    let scheme = QuantizationScheme::PerBlock {
        axis: (rank - 1) as u32,
        block_size: BLOCK,
    };
    let mut q = Quantization::new(scheme, ElementType::Float32, ElementType::Float16);
    let (dtype, codes_len, buffers) = match t.ggml_type {
        GgmlType::Q8_0 => (
            ElementType::Int8,
            count,
            vec![data(Part::Scales, blocks * 2), Data::None],
        ),
        GgmlType::Q4_0 => {
            q.zero_point_type = Some(ElementType::UInt8);
            (
                ElementType::UInt4,
                count / 2,
                vec![
                    data(Part::Scales, blocks * 2),
                    data(Part::ZeroPoints, blocks),
                ],
            )
        }
        _ => {
            q.offset_type = Some(ElementType::Float16);
            (
                ElementType::UInt4,
                count / 2,
                vec![
                    data(Part::Scales, blocks * 2),
                    Data::None,
                    data(Part::Mins, blocks * 2),
                ],
            )
        }
    };
    let mut e = Entry::new(
        t.name.clone(),
        dtype,
        t.shape.clone(),
        data(Part::Codes, codes_len),
    );
    e.quantized = Some(Quantized {
        quantization: q,
        buffers,
    });
    Ok(e)
}
