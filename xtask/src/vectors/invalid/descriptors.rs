//! Invalid vectors of tensor descriptors: alignments, element types,
//! layouts, shapes and the sizes they imply, empty tensors.

use super::{Bases, Expect, at_open, err, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::{Nav, field, patch};
use anyhow::Result;
use hurray::ElementType;

/// The invalid vectors of the descriptors' rules.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases {
        dense,
        coo,
        csr,
        strided,
        align,
        align_t,
        empty,
        empty_csr,
        q_empty,
        ..
    } = *bases;
    out.push(invalid(
        "file_alignment_invalid",
        "file alignment 4096 changed to 100 (not a power of two)",
        align,
        Expect {
            field: Some("alignment"),
            ..at_open("InvalidAlignment")
        },
        |b| patch(b, |n| n.req(n.root(), field::header::ALIGNMENT), 100u64),
    )?);
    out.push(invalid(
        "tensor_alignment_too_small",
        "tensor wide's alignment 256 changed to 32 (below 64)",
        align_t,
        err("InvalidAlignment", "wide", "alignment"),
        |b| patch(b, |n| n.tensor_field(1, field::tensor::ALIGNMENT), 32u64),
    )?);
    out.push(invalid(
        "element_type_unknown",
        "tensor a's element_type set to 200, a value the schema does not define",
        dense,
        err("InvalidElementType", "a", "element_type"),
        |b| patch(b, |n| n.tensor_field(0, field::tensor::ELEMENT_TYPE), 200u8),
    )?);
    out.push(invalid(
        "element_type_invalid_zero",
        "tensor a's element_type set to 0 (Invalid)",
        dense,
        err("InvalidElementType", "a", "element_type"),
        |b| patch(b, |n| n.tensor_field(0, field::tensor::ELEMENT_TYPE), 0u8),
    )?);
    out.push(invalid(
        "layout_unknown",
        "tensor a's layout union type set to 9, a member this reader does not know",
        coo,
        err("UnsupportedLayout", "a", "layout"),
        |b| patch(b, |n| n.tensor_field(0, field::tensor::LAYOUT_TYPE), 9u8),
    )?);
    out.push(invalid(
        "index_type_not_integer",
        "CSR index_type set to i8 (only i32 and i64 are allowed)",
        csr,
        err("InvalidElementType", "m", "layout.index_type"),
        |b| {
            patch(
                b,
                |n| n.layout_field(0, field::layout::INDEX_TYPE),
                ElementType::Int8.to_wire(),
            )
        },
    )?);
    out.push(invalid(
        "nnz_exceeds_elements",
        "COO nnz set to 13 in a [3, 4] tensor",
        coo,
        err("InvalidField", "a", "layout.nnz"),
        |b| patch(b, |n| n.layout_field(0, field::layout::NNZ), 13u64),
    )?);
    out.push(invalid(
        "stride_negative",
        "first stride of column_major set to -1",
        strided,
        err("InvalidField", "column_major", "layout.strides[0]"),
        |b| {
            let stride0 =
                |n: &Nav<'_>| Ok(n.struct_at(n.layout_field(1, field::layout::STRIDES)?, 0, 8));
            patch(b, stride0, u64::MAX)
        },
    )?);
    out.push(invalid(
        "dynamic_dim_with_data",
        "shape[1] of tensor a set to the dynamic sentinel while it has data",
        dense,
        err("DynamicWithData", "a", "shape[1]"),
        |b| patch(b, |n| n.dim(0, 1), u64::MAX),
    )?);
    out.push(invalid(
        "shape_product_overflow",
        "shape [2, 3] of tensor a changed to [2^33, 2^33]: the element count overflows 64 bits",
        dense,
        err("SizeOverflow", "a", "shape"),
        |b| {
            patch(b, |n| n.dim(0, 0), 1u64 << 33)?;
            patch(b, |n| n.dim(0, 1), 1u64 << 33)
        },
    )?);
    out.push(invalid(
        "byte_length_overflow",
        "shape [2, 3] of tensor a (f32) changed to [2^62, 1]: 2^62 elements fit, their 2^64 bytes do not",
        dense,
        err("SizeOverflow", "a", "values"),
        |b| {
            patch(b, |n| n.dim(0, 0), 1u64 << 62)?;
            patch(b, |n| n.dim(0, 1), 1u64)
        },
    )?);
    out.push(invalid(
        "empty_becomes_nonempty",
        "shape [3, 0, 5] changed to [3, 1, 5]: the 0-byte buffer is now 60 bytes short",
        empty,
        err("BufferLength", "x", "values"),
        |b| patch(b, |n| n.dim(0, 1), 1u64),
    )?);
    out.push(invalid(
        "empty_csr_pointers_not_empty",
        "pointers of the empty CSR [0, 4] given length 8: an empty tensor has 0-byte buffers only",
        empty_csr,
        err("BufferLength", "csr_0x4", "pointers"),
        |b| patch(b, |n| n.buffer_length(0, 0), 8u64),
    )?);
    out.push(invalid(
        "empty_quantized_with_scales",
        "the per-tensor quantized empty i8 [0] given a 4-byte scale: an empty tensor has no scales",
        q_empty,
        err("BufferLength", "per_tensor_empty", "scales"),
        |b| patch(b, |n| n.scales_length(3), 4u64),
    )?);
    Ok(())
}
