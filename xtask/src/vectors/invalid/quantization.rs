//! Invalid vectors of quantization descriptors: schemes, expressed types,
//! scales, axes and blocks.

use super::{Bases, err, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::{field, patch};
use anyhow::Result;
use hurray::ElementType;

/// The invalid vectors of the quantization rules.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases {
        q_axis,
        q_block,
        q_tensor,
        ..
    } = *bases;
    out.push(invalid(
        "quant_scheme_unknown",
        "quantization scheme set to 7, a value this reader does not know",
        q_tensor,
        err("UnsupportedQuantization", "q", "quantization.scheme"),
        |b| patch(b, |n| n.quant_field(0, field::quant::SCHEME), 7u8),
    )?);
    out.push(invalid(
        "quant_scheme_invalid_zero",
        "quantization scheme set to 0 (Invalid)",
        q_tensor,
        err("InvalidField", "q", "quantization.scheme"),
        |b| patch(b, |n| n.quant_field(0, field::quant::SCHEME), 0u8),
    )?);
    out.push(invalid(
        "quant_expressed_not_float",
        "quantization expressed_type f32 changed to i8",
        q_tensor,
        err("InvalidField", "q", "quantization.expressed_type"),
        |b| {
            patch(
                b,
                |n| n.quant_field(0, field::quant::EXPRESSED_TYPE),
                ElementType::Int8.to_wire(),
            )
        },
    )?);
    out.push(invalid(
        "quant_scales_length_wrong",
        "per-axis scales of tensor asym: 12 bytes changed to 8 (2 scales for an axis of 3)",
        q_axis,
        err("BufferLength", "asym", "scales"),
        |b| patch(b, |n| n.scales_length(0), 8u64),
    )?);
    out.push(invalid(
        "quant_axis_out_of_range",
        "per-axis quantization axis 1 of a rank-2 tensor changed to 2",
        q_axis,
        err("InvalidField", "asym", "quantization.axis"),
        |b| patch(b, |n| n.quant_field(0, field::quant::AXIS), 2u32),
    )?);
    out.push(invalid(
        "quant_block_size_zero",
        "per-block block_size 4 changed to 0",
        q_block,
        err("InvalidField", "i4", "quantization.block_size"),
        |b| patch(b, |n| n.quant_field(0, field::quant::BLOCK_SIZE), 0u64),
    )?);
    Ok(())
}
