//! GGUF block-quantized tensors split into their fields.

use super::{GgmlType, GgufTensor};
use anyhow::{Context, Result, bail};
use hurray::pack::Packer;

/// A block-quantized tensor split into its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::convert) struct Split {
    /// Each block's `f16` scale `d`, little-endian, in block order.
    pub(in crate::convert) scales: Vec<u8>,
    /// Q4_1's `f16` minimum `m` of each block, little-endian, in block order.
    pub(in crate::convert) mins: Option<Vec<u8>>,
    /// The codes in element order: for Q8_0 the `i8` bytes as stored; for
    /// Q4_0 and Q4_1 the 4-bit codes packed as Hurray packs sub-byte
    /// elements (element `i` in byte `i / 2`, the low nibble for even `i`).
    pub(in crate::convert) codes: Vec<u8>,
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
pub(in crate::convert) fn split_blocks(t: &GgufTensor<'_>) -> Result<Split> {
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
