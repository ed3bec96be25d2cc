//! The invalid vectors: a valid vector corrupted in one targeted place each
//! (found with [`Nav`]), and the error, tensor and field a reader must report
//! for it, at open or when the sparse data is checked.

use super::Vector;
use super::nav::{Nav, field, patch};
use anyhow::{Context, Result, ensure};
use hurray::ElementType;
use serde_json::{Value, json};

/// What an invalid vector must be reported as.
struct Expect {
    variant: &'static str,
    /// `open` (File::open / Reader::new) or `view` (the sparse views and `hurray validate`).
    stage: &'static str,
    tensor: Option<&'static str>,
    field: Option<&'static str>,
    /// For `BuffersOverlap`: the other buffer of the pair, (tensor, role).
    /// Which of the two is `tensor`/`field` and which is `with` is unspecified.
    with: Option<(&'static str, &'static str)>,
}

const fn at_open(variant: &'static str) -> Expect {
    Expect {
        variant,
        stage: "open",
        tensor: None,
        field: None,
        with: None,
    }
}

const fn err(variant: &'static str, tensor: &'static str, field: &'static str) -> Expect {
    Expect {
        variant,
        stage: "open",
        tensor: Some(tensor),
        field: Some(field),
        with: None,
    }
}

const fn in_view(variant: &'static str, tensor: &'static str, field: &'static str) -> Expect {
    Expect {
        variant,
        stage: "view",
        tensor: Some(tensor),
        field: Some(field),
        with: None,
    }
}

fn invalid(
    name: &str,
    description: &str,
    base: &Vector,
    expect: Expect,
    patch: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<Vector> {
    let mut bytes = base.bytes.clone();
    patch(&mut bytes).with_context(|| format!("crafting invalid vector {name}"))?;
    ensure!(bytes != base.bytes, "invalid vector {name} is unchanged");
    let mut e = json!({
        "variant": expect.variant,
        "stage": expect.stage,
    });
    e["tensor"] = expect.tensor.map_or(Value::Null, |t| json!(t));
    e["field"] = expect.field.map_or(Value::Null, |f| json!(f));
    if let Some((t, f)) = expect.with {
        e["with"] = json!({ "tensor": t, "field": f });
    }
    Ok(Vector {
        name: format!("invalid_{name}"),
        description: format!("{description} (from {})", base.name),
        bytes,
        json: json!({ "valid": false, "derived_from": base.name, "error": e }),
    })
}

/// The invalid vectors, each a patch of one of the `valid` ones.
pub(super) fn vectors(valid: &[Vector]) -> Result<Vec<Vector>> {
    let find = |name: &str| -> Result<&Vector> {
        valid
            .iter()
            .find(|v| v.name == name)
            .with_context(|| format!("no valid vector {name}"))
    };
    let dense = find("layout_dense")?; // tensors a (f32 [2,3], offset 64), b (i16 [2,2,2], offset 128)
    let coo = find("layout_coo")?;
    let csr = find("layout_csr")?;
    let csc = find("layout_csc")?;
    let strided = find("layout_strided")?;
    let meta = find("metadata")?;
    let q_axis = find("quant_per_axis")?;
    let q_block = find("quant_per_block")?;
    let q_tensor = find("quant_per_tensor")?;
    let align = find("alignment_4096")?;
    let align_t = find("alignment_per_tensor")?;
    let empty = find("empty_shape_3_0_5")?;
    let empty_csr = find("empty_csr_nnz_0")?;
    let q_empty = find("quant_empty")?;
    let mut out = Vec::new();

    // --- prefix and footer ---------------------------------------------------
    out.push(invalid(
        "bad_magic",
        "first byte of the magic changed",
        dense,
        at_open("BadMagic"),
        |b| {
            b[0] = b'H';
            Ok(())
        },
    )?);
    out.push(invalid(
        "unsupported_version",
        "major version 2 in the prefix",
        dense,
        at_open("UnsupportedVersion"),
        |b| {
            b[8] = 2;
            Ok(())
        },
    )?);
    out.push(invalid(
        "too_short",
        "only the first 80 bytes (less than prefix + footer)",
        dense,
        at_open("TooShort"),
        |b| {
            b.truncate(80);
            Ok(())
        },
    )?);
    out.push(invalid(
        "truncated",
        "last 16 bytes cut off: the footer magic is gone",
        dense,
        at_open("BadFooterMagic"),
        |b| {
            b.truncate(b.len() - 16);
            Ok(())
        },
    )?);
    out.push(invalid(
        "footer_offset_misaligned",
        "footer header_offset moved by 4 (not a multiple of 8)",
        dense,
        Expect {
            field: Some("header_offset"),
            ..at_open("BadFooter")
        },
        |b| {
            let n = Nav { b };
            let offset = n.u64(n.footer());
            patch(b, |n| Ok(n.footer()), offset + 4)
        },
    )?);
    out.push(invalid(
        "footer_offset_in_prefix",
        "footer header_offset 8, inside the prefix",
        dense,
        Expect {
            field: Some("header_offset"),
            ..at_open("BadFooter")
        },
        |b| patch(b, |n| Ok(n.footer()), 8u64),
    )?);
    out.push(invalid(
        "footer_length_wrong",
        "footer header_length one more than the header: it would overlap the footer",
        dense,
        Expect {
            field: Some("header_length"),
            ..at_open("BadFooter")
        },
        |b| {
            let n = Nav { b };
            let length = n.u64(n.footer() + 8);
            patch(b, |n| Ok(n.footer() + 8), length + 8)
        },
    )?);

    out.push(invalid(
        "footer_flags_set",
        "footer flags (bytes 16..24) set to 4, a bit no version defines",
        dense,
        Expect {
            field: Some("flags"),
            ..at_open("BadFooter")
        },
        |b| patch(b, |n| Ok(n.footer() + 16), 4u64),
    )?);
    out.push(invalid(
        "shard_index_flag_without_index",
        "footer flag bit 1 (format 1.3: the file is a sharded checkpoint's index) on a file whose header has no shard_index",
        dense,
        Expect {
            field: Some("shard_index"),
            ..at_open("InvalidField")
        },
        |b| patch(b, |n| Ok(n.footer() + 16), 2u64),
    )?);
    out.push(invalid(
        "extended_quantization_without_flag",
        "offsets (format 1.2) in a file whose footer flag bit 0 is cleared: a 1.1 reader would ignore them and misread every value",
        find("quant_offsets")?,
        err("InvalidField", "q4_1", "quantization.offset_type"),
        |b| patch(b, |n| Ok(n.footer() + 16), 0u64),
    )?);

    // --- the FlatBuffer itself --------------------------------------------------
    out.push(invalid(
        "bad_file_identifier",
        "FlatBuffers file identifier \"HRRY\" changed to \"XRRY\"",
        dense,
        at_open("InvalidHeader"),
        |b| patch(b, |n| Ok(n.header_start() + 4), b'X'),
    )?);
    out.push(invalid(
        "root_offset_out_of_bounds",
        "FlatBuffers root offset points past the header",
        dense,
        at_open("InvalidHeader"),
        |b| patch(b, |n| Ok(n.header_start()), 0x7fff_fff0u32),
    )?);
    out.push(invalid(
        "shape_vector_out_of_bounds",
        "length of tensor a's shape vector set to 2^30: the vector runs past the header",
        dense,
        at_open("InvalidHeader"),
        |b| {
            let shape = |n: &Nav<'_>| Ok(n.follow(n.tensor_field(0, field::tensor::SHAPE)?));
            patch(b, shape, 1u32 << 30)
        },
    )?);
    out.push(invalid(
        "name_not_terminated",
        "the NUL terminator of tensor a's name overwritten",
        dense,
        at_open("InvalidHeader"),
        |b| {
            let nul = |n: &Nav<'_>| {
                let s = n.name(0)?;
                Ok(s + n.u32(s - 4))
            };
            patch(b, nul, b'!')
        },
    )?);

    // --- semantic rules --------------------------------------------------------
    out.push(invalid(
        "names_unsorted",
        "tensor a renamed c, so the list reads c, b",
        dense,
        Expect {
            tensor: Some("b"),
            ..at_open("NamesNotSorted")
        },
        |b| patch(b, |n| n.name(0), b'c'),
    )?);
    out.push(invalid(
        "names_duplicate",
        "tensor b renamed a: two tensors named a",
        dense,
        Expect {
            tensor: Some("a"),
            ..at_open("NamesNotSorted")
        },
        |b| patch(b, |n| n.name(1), b'a'),
    )?);
    out.push(invalid(
        "name_empty",
        "tensor a's name set to the empty string",
        dense,
        at_open("EmptyName"),
        |b| {
            patch(b, |n| Ok(n.name(0)? - 4), 0u32)?;
            patch(b, |n| n.name(0), 0u8)
        },
    )?);
    out.push(invalid(
        "metadata_unsorted",
        "file metadata key \"created_by\" renamed \"zreated_by\": keys no longer sorted",
        meta,
        Expect {
            field: Some("license"),
            ..at_open("MetadataNotSorted")
        },
        |b| {
            let key = |n: &Nav<'_>| {
                let kv = n.table_at(n.req(n.root(), field::header::METADATA)?, 0);
                Ok(n.string(n.req(kv, field::kv::KEY)?))
            };
            patch(b, key, b'z')
        },
    )?);
    out.push(invalid(
        "name_index_entry_out_of_range",
        "a used slot of the header's name index (format 1.1) set to 3 in a file of 2 tensors",
        dense,
        Expect {
            field: Some("name_index"),
            ..at_open("InvalidField")
        },
        |b| {
            let used_slot = |n: &Nav<'_>| {
                let v = n.follow(n.req(n.root(), field::header::NAME_INDEX)?);
                let len = n.u32(v);
                let used = (0..len)
                    .find(|&i| n.u32(v + 4 + 4 * i) != 0)
                    .context("an empty name index")?;
                Ok(v + 4 + 4 * used)
            };
            patch(b, used_slot, 3u32)
        },
    )?);
    out.push(invalid(
        "name_index_length_not_power_of_two",
        "the header's name index shortened from 4 to 3 slots",
        dense,
        Expect {
            field: Some("name_index"),
            ..at_open("InvalidField")
        },
        |b| {
            let index = |n: &Nav<'_>| {
                let v = n.follow(n.req(n.root(), field::header::NAME_INDEX)?);
                ensure!(n.u32(v) == 4, "expected a 4-slot index");
                Ok(v)
            };
            patch(b, index, 3u32)
        },
    )?);
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
    out.push(invalid(
        "buffer_count_wrong",
        "tensor m (CSR) lists 2 buffers instead of 3",
        csr,
        err("BufferCount", "m", "buffers"),
        |b| {
            let buffers = |n: &Nav<'_>| Ok(n.follow(n.tensor_field(0, field::tensor::BUFFERS)?));
            patch(b, buffers, 2u32)
        },
    )?);
    out.push(invalid(
        "buffer_length_wrong",
        "tensor a's values length 24 changed to 28",
        dense,
        err("BufferLength", "a", "values"),
        |b| patch(b, |n| n.buffer_length(0, 0), 28u64),
    )?);
    out.push(invalid(
        "buffer_out_of_bounds",
        "tensor b's values offset moved past the data region (into the header)",
        dense,
        err("BufferOutOfBounds", "b", "values"),
        |b| {
            let h = Nav { b }.header_start() as u64;
            patch(b, |n| n.buffer_offset(1, 0), h.next_multiple_of(64))
        },
    )?);
    out.push(invalid(
        "buffer_offset_overflow",
        "tensor b's values offset near 2^64: offset + length overflows",
        dense,
        err("BufferOutOfBounds", "b", "values"),
        |b| patch(b, |n| n.buffer_offset(1, 0), u64::MAX - 63),
    )?);
    out.push(invalid(
        "buffer_in_prefix",
        "tensor a's values offset 0: inside the prefix",
        dense,
        err("BufferOutOfBounds", "a", "values"),
        |b| patch(b, |n| n.buffer_offset(0, 0), 0u64),
    )?);
    out.push(invalid(
        "buffer_misaligned",
        "tensor a's values offset 64 moved to 72 (still inside the data region)",
        dense,
        err("BufferMisaligned", "a", "values"),
        |b| patch(b, |n| n.buffer_offset(0, 0), 72u64),
    )?);
    out.push(invalid(
        "buffer_misaligned_4096",
        "tensor b's values moved from 8192 to 4096 + 64: 64-aligned but not 4096-aligned",
        align,
        err("BufferMisaligned", "b", "values"),
        |b| patch(b, |n| n.buffer_offset(1, 0), 4096u64 + 64),
    )?);
    out.push(invalid(
        "buffers_overlap",
        "tensor b's values moved onto tensor a's",
        dense,
        Expect {
            with: Some(("b", "values")),
            ..err("BuffersOverlap", "a", "values")
        },
        |b| patch(b, |n| n.buffer_offset(1, 0), 64u64),
    )?);
    out.push(invalid(
        "buffers_overlap_within_tensor",
        "CSR indices moved onto its own pointers",
        csr,
        Expect {
            with: Some(("m", "indices")),
            ..err("BuffersOverlap", "m", "pointers")
        },
        |b| {
            let n = Nav { b };
            let pointers = n.u64(n.buffer_offset(0, 0)?);
            patch(b, |n| n.buffer_offset(0, 1), pointers)
        },
    )?);
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

    // --- sparse index data (checked by the sparse views and `hurray validate`) ---
    let data_i32 = |b: &mut Vec<u8>, buffer: usize, i: usize, v: i32| {
        patch(b, |n| Ok(n.buffer_data(0, buffer)? + 4 * i), v)
    };
    out.push(invalid(
        "csr_pointers_decreasing",
        "CSR pointers [0, 2, 2, 4] changed to [0, 2, 1, 4]",
        csr,
        in_view("InvalidSparseIndex", "m", "pointers"),
        |b| data_i32(b, 0, 2, 1),
    )?);
    out.push(invalid(
        "csr_last_pointer_not_nnz",
        "CSR pointers [0, 2, 2, 4] changed to [0, 2, 2, 3] (nnz is 4)",
        csr,
        in_view("InvalidSparseIndex", "m", "pointers"),
        |b| data_i32(b, 0, 3, 3),
    )?);
    out.push(invalid(
        "csr_first_pointer_not_zero",
        "CSR pointers [0, 2, 2, 4] changed to [1, 2, 2, 4]",
        csr,
        in_view("InvalidSparseIndex", "m", "pointers"),
        |b| data_i32(b, 0, 0, 1),
    )?);
    out.push(invalid(
        "csr_index_out_of_range",
        "CSR column index 3 changed to 4 in a tensor of 4 columns",
        csr,
        in_view("InvalidSparseIndex", "m", "indices"),
        |b| data_i32(b, 1, 1, 4),
    )?);
    out.push(invalid(
        "csc_index_negative",
        "CSC row index changed to -1",
        csc,
        in_view("InvalidSparseIndex", "m", "indices"),
        |b| patch(b, |n| n.buffer_data(0, 1), -1i64),
    )?);
    out.push(invalid(
        "coo_index_out_of_range",
        "COO coordinate (2, 0) changed to (3, 0) in a [3, 4] tensor",
        coo,
        in_view("InvalidSparseIndex", "a", "indices"),
        |b| patch(b, |n| Ok(n.buffer_data(0, 0)? + 8 * 4), 3i64),
    )?);
    out.push(invalid(
        "coo_not_canonical",
        "COO flagged canonical whose coordinate (1, 3) became (0, 1), a duplicate of the first",
        coo,
        in_view("InvalidSparseIndex", "a", "indices"),
        |b| {
            patch(b, |n| Ok(n.buffer_data(0, 0)? + 8 * 2), 0i64)?;
            patch(b, |n| Ok(n.buffer_data(0, 0)? + 8 * 3), 1i64)
        },
    )?);
    Ok(out)
}
