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
    quantization_1_4(bases, out)?;
    out.push(invalid(
        "quant_block_size_zero",
        "per-block block_size 4 changed to 0",
        q_block,
        err("InvalidField", "i4", "quantization.block_size"),
        |b| patch(b, |n| n.quant_field(0, field::quant::BLOCK_SIZE), 0u64),
    )?);
    Ok(())
}

/// Format 1.4's quantization fields, each broken in one place.
fn quantization_1_4(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let base = |name| super::find(bases.valid, name);
    let two_level = base("quant_two_level")?;
    let tables = base("quant_code_table")?;
    let groups = base("quant_group_index")?;
    let blocks = base("quant_block_formats")?;
    out.push(invalid(
        "quant_composite_without_flag",
        "quant_two_level with footer flag bit 2 cleared: a 1.3 reader would ignore the quantized scales and misread every value",
        two_level,
        err("InvalidField", "q4_k", "quantization.scale_quantization"),
        |b| patch(b, |n| Ok(n.footer() + 16), 0u64),
    )?);
    out.push(invalid(
        "quant_code_table_type_not_allowed",
        "the i8 code table of tensor iq4_nl given type u8, not a code table type",
        tables,
        err(
            "InvalidElementType",
            "iq4_nl",
            "quantization.code_table_type",
        ),
        |b| {
            patch(
                b,
                |n| n.quant_field(0, field::quant::CODE_TABLE_TYPE),
                ElementType::UInt8.to_wire(),
            )
        },
    )?);
    out.push(invalid(
        "quant_code_table_length_wrong",
        "the code table of iq4_nl (16 i8 levels for u4 codes) given length 15: a code could index past it",
        tables,
        err("BufferLength", "iq4_nl", "code_table"),
        |b| {
            patch(
                b,
                |n| Ok(n.quant_field(0, field::quant::CODE_TABLE)? + 8),
                15u64,
            )
        },
    )?);
    out.push(invalid(
        "quant_second_level_axis_out_of_range",
        "the scales' own quantization of q4_k: axis 1 of its rank-2 scale array changed to 2",
        two_level,
        err(
            "InvalidField",
            "q4_k",
            "quantization.scale_quantization.axis",
        ),
        |b| patch(b, |n| n.scale_level_field(0, field::quant::AXIS), 2u32),
    )?);
    out.push(invalid(
        "quant_group_index_length_wrong",
        "the group index of gptq (8 i32, 32 bytes) given length 28",
        groups,
        err("BufferLength", "gptq", "group_index"),
        |b| {
            patch(
                b,
                |n| Ok(n.quant_field(0, field::quant::GROUP_INDEX)? + 8),
                28u64,
            )
        },
    )?);
    out.push(invalid(
        "quant_block_format_values_length_wrong",
        "the values of ggml_iq1_m (two 56-byte IQ1_M blocks, 112 bytes) given length 111: not whole blocks",
        blocks,
        err("BufferLength", "ggml_iq1_m", "values"),
        |b| patch(b, |n| n.buffer_length(0, 0), 111u64),
    )?);
    out.push(invalid(
        "quant_block_format_unknown",
        "the block format of the first tensor (ggml_iq1_m) set to 99, a value no version defines",
        blocks,
        err("InvalidField", "ggml_iq1_m", "quantization.block_format"),
        |b| patch(b, |n| n.quant_field(0, field::quant::BLOCK_FORMAT), 99u8),
    )?);
    Ok(())
}
