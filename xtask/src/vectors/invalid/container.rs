//! Invalid vectors of the file's framing: the prefix, the footer and the
//! FlatBuffer the header is.

use super::{Bases, Expect, at_open, err, find, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::{Nav, field, patch};
use anyhow::Result;

/// The invalid vectors of the prefix, the footer and the FlatBuffer itself.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases { valid, dense, .. } = *bases;
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
        "file_id_length_wrong",
        "the file's identity (format 1.5) is 15 bytes, not 16",
        dense,
        Expect {
            field: Some("file_id"),
            ..at_open("InvalidField")
        },
        |b| {
            let file_id = |n: &Nav<'_>| Ok(n.follow(n.req(n.root(), field::header::FILE_ID)?));
            patch(b, file_id, 15u32)
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
        "footer flags (bytes 16..24) set to 8, a bit no version defines",
        dense,
        Expect {
            field: Some("flags"),
            ..at_open("BadFooter")
        },
        |b| patch(b, |n| Ok(n.footer() + 16), 8u64),
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
        find(valid, "quant_offsets")?,
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
    Ok(())
}
