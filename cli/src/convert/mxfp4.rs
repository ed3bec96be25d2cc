//! The transformers MXFP4 convention (gpt-oss and the checkpoints quantized
//! like it) and Hurray's one-tensor form of the same bytes.
//!
//! transformers stores an MXFP4 weight `W` as two `U8` tensors:
//! - `W_blocks`, shape `[..., G, 16]`: G blocks of 32 FP4 E2M1 codes, two per
//!   byte, the first in the low nibble;
//! - `W_scales`, shape `[..., G]`: one E8M0 exponent per block, the block's
//!   scale being 2^(s - 127).
//!
//! That is exactly the OCP MX layout Hurray declares for one tensor: element
//! type `f4e2m1fn` of shape `[..., G * 32]` (packed LSB-first: element i in
//! byte i / 2, low nibble first), quantized per block of 32 along the last
//! axis with `f8e8m0fnu` scales. Folding a pair into that tensor, and
//! unfolding it back, moves no bit: the values are the blocks' bytes and the
//! scales are the scales' bytes. (gpt-oss's loader also transposes the expert
//! weights after dequantizing; that is the model's layout, not the format's,
//! and the Hurray tensor keeps the stored orientation.)

use super::{Data, Entry, Quantized};
use anyhow::{Result, bail};
use hurray::{
    ElementType, Quantization, TensorRef,
    descriptor::{BufferRole, QuantizationScheme},
};
use std::collections::BTreeMap;

/// Suffix of the tensor holding the packed FP4 codes.
pub(super) const BLOCKS: &str = "_blocks";
/// Suffix of the tensor holding the E8M0 block scales.
pub(super) const SCALES: &str = "_scales";
/// Elements per MX block (OCP MX specification: k = 32).
const BLOCK: u64 = 32;
/// Bytes of one block of FP4 codes.
const BLOCK_BYTES: u64 = BLOCK / 2;
/// The type transformers dequantizes MXFP4 weights to.
const EXPRESSED: ElementType = ElementType::BFloat16;

/// The quantization of an MXFP4 tensor of rank `rank` (at least 1).
pub(super) fn quantization(rank: usize) -> Quantization {
    Quantization::new(
        QuantizationScheme::PerBlock {
            axis: (rank - 1) as u32,
            block_size: BLOCK,
        },
        EXPRESSED,
        ElementType::Float8E8M0FNU,
    )
}

/// Whether `q` on a tensor of element type `t` and rank `rank` is MXFP4 as
/// transformers stores it (the expressed type aside: the pair cannot say it).
fn is_mxfp4(t: ElementType, rank: usize, q: &Quantization) -> bool {
    t == ElementType::Float4E2M1FN
        && rank >= 1
        && q.scheme
            == (QuantizationScheme::PerBlock {
                axis: (rank - 1) as u32,
                block_size: BLOCK,
            })
        && q.scale_type == ElementType::Float8E8M0FNU
        && q.zero_point_type.is_none()
        && q.tensor_scale == 1.0
        && q.offset_type.is_none()
}

/// Folds every `X_blocks` / `X_scales` pair of `entries` that follows the
/// convention into one quantized entry `X`, in the blocks' place. A pair
/// whose shapes or types don't fit is left as it is, with a warning.
pub(super) fn fold_pairs(entries: Vec<Entry<'_>>) -> Result<Vec<Entry<'_>>> {
    let index: BTreeMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.clone(), i))
        .collect();
    // blocks index -> scales index
    let mut pairs = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(prefix) = e.name.strip_suffix(BLOCKS) else {
            continue;
        };
        let Some(&j) = index.get(&format!("{prefix}{SCALES}")) else {
            continue;
        };
        match misfit(e, &entries[j]) {
            None => {
                if index.contains_key(prefix) {
                    bail!(
                        "tensors {:?} and {:?} form an MXFP4 weight, but a tensor {prefix:?} \
                         exists too",
                        e.name,
                        entries[j].name
                    );
                }
                pairs.insert(i, j);
            }
            Some(why) => eprintln!(
                "hurray: warning: {:?} and {:?} are kept as two tensors, not one MXFP4 \
                 weight: {why}",
                e.name, entries[j].name
            ),
        }
    }
    let scales: std::collections::BTreeSet<usize> = pairs.values().copied().collect();
    let mut slots: Vec<Option<Entry<'_>>> = entries.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len() - pairs.len());
    for i in 0..slots.len() {
        if scales.contains(&i) {
            continue;
        }
        let Some(e) = slots[i].take() else { continue };
        match pairs.get(&i) {
            None => out.push(e),
            Some(&j) => {
                let s = slots[j].take().expect("each scales tensor pairs once");
                out.push(fold(e, s));
            }
        }
    }
    Ok(out)
}

/// Why `blocks` and `scales` are not an MXFP4 pair, if they are not.
fn misfit(blocks: &Entry<'_>, scales: &Entry<'_>) -> Option<String> {
    if blocks.dtype != ElementType::UInt8 || scales.dtype != ElementType::UInt8 {
        return Some(format!(
            "both are U8 in the convention, not {} and {}",
            blocks.dtype.name(),
            scales.dtype.name()
        ));
    }
    let b = &blocks.shape;
    if b.len() < 2 || b[b.len() - 1] != BLOCK_BYTES {
        return Some(format!(
            "the blocks' shape {b:?} does not end in {BLOCK_BYTES} bytes per block"
        ));
    }
    if b[b.len() - 2].checked_mul(BLOCK).is_none() {
        // Possible only with another dimension 0: nothing is stored then.
        return Some(format!(
            "{} blocks of {BLOCK} elements overflow 64 bits",
            b[b.len() - 2]
        ));
    }
    if scales.shape[..] != b[..b.len() - 1] {
        return Some(format!(
            "the scales' shape {:?} is not the blocks' shape {b:?} without its last dimension",
            scales.shape
        ));
    }
    if blocks.strides.is_some() || scales.strides.is_some() || blocks.quantized.is_some() {
        return Some("they are not plain row-major tensors".into());
    }
    None
}

fn fold<'a>(blocks: Entry<'a>, scales: Entry<'a>) -> Entry<'a> {
    let name = blocks.name[..blocks.name.len() - BLOCKS.len()].to_owned();
    let rank = blocks.shape.len() - 1;
    let mut shape = blocks.shape[..rank].to_vec();
    // G blocks of 32 (`misfit` checked the product fits).
    shape[rank - 1] *= BLOCK;
    let mut e = Entry::new(name, ElementType::Float4E2M1FN, shape, blocks.data);
    e.quantized = Some(Quantized {
        quantization: quantization(rank),
        // Scales, then the (empty) zero points of a symmetric quantization.
        buffers: vec![scales.data, Data::None],
    });
    e
}

/// The `X_blocks` / `X_scales` entries of an MXFP4 tensor `X`, or `None`
/// when `t` is not one.
pub(super) fn unfold<'a>(t: &TensorRef<'a>) -> Result<Option<(Entry<'a>, Entry<'a>)>> {
    let Some(q) = t.quantization() else {
        return Ok(None);
    };
    let shape = t.shape().to_wire();
    if t.is_descriptor_only()
        || !is_mxfp4(t.element_type(), shape.len(), &q)
        || !shape[shape.len() - 1].is_multiple_of(BLOCK)
        || !matches!(t.layout(), hurray::Layout::Dense)
    {
        return Ok(None);
    }
    let last = shape.len() - 1;
    let mut scales_shape = shape.clone();
    scales_shape[last] /= BLOCK;
    let mut blocks_shape = scales_shape.clone();
    blocks_shape.push(BLOCK_BYTES);
    let values = t.data()?;
    let scales = t.buffer(BufferRole::Scales).unwrap_or(&[]);
    let entry = |suffix: &str, shape: Vec<u64>, bytes: &'a [u8]| {
        Entry::new(
            format!("{}{suffix}", t.name()),
            ElementType::UInt8,
            shape,
            Data::Slice(bytes),
        )
    };
    Ok(Some((
        entry(BLOCKS, blocks_shape, values),
        entry(SCALES, scales_shape, scales),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u8_entry(name: &str, shape: &[u64]) -> Entry<'static> {
        Entry::new(name.into(), ElementType::UInt8, shape.to_vec(), Data::None)
    }

    #[test]
    fn pairs_fold_into_one_tensor_in_the_blocks_place() {
        let entries = vec![
            u8_entry("a", &[3]),
            u8_entry("w_blocks", &[2, 5, 3, 16]),
            u8_entry("b", &[1]),
            u8_entry("w_scales", &[2, 5, 3]),
        ];
        let out = fold_pairs(entries).unwrap();
        let names: Vec<_> = out.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "w", "b"]);
        let w = &out[1];
        assert_eq!(w.dtype, ElementType::Float4E2M1FN);
        assert_eq!(w.shape, [2, 5, 96]);
        let q = &w.quantized.as_ref().unwrap().quantization;
        assert_eq!(
            q.scheme,
            QuantizationScheme::PerBlock {
                axis: 2,
                block_size: 32
            }
        );
        assert!(is_mxfp4(w.dtype, 3, q));
    }

    #[test]
    fn misfits_stay_two_tensors() {
        for (blocks, scales) in [
            (&[5, 3, 8][..], &[5, 3][..]),
            (&[5, 3, 16], &[5, 4]),
            (&[16], &[]),
            // Empty, so nothing is stored, but 2^59 blocks of 32 overflow.
            (&[0, 1 << 59, 16], &[0, 1 << 59]),
        ] {
            let out = fold_pairs(vec![
                u8_entry("w_blocks", blocks),
                u8_entry("w_scales", scales),
            ])
            .unwrap();
            assert_eq!(out.len(), 2, "{blocks:?} {scales:?}");
        }
        let err = fold_pairs(vec![
            u8_entry("w_blocks", &[1, 16]),
            u8_entry("w_scales", &[1]),
            u8_entry("w", &[1]),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("\"w\" exists too"), "{err}");
    }
}
