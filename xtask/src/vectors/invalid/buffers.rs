//! Invalid vectors of the buffer list: counts, lengths, offsets, alignment
//! and overlaps.

use super::{Bases, Expect, err, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::{Nav, field, patch};
use anyhow::Result;

/// The invalid vectors of the buffers' rules.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases {
        dense, csr, align, ..
    } = *bases;
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
        "digests_length_wrong",
        "tensor a's digests (format 1.4) are 31 bytes, not one 32-byte BLAKE3 digest per buffer",
        dense,
        err("InvalidField", "a", "digests"),
        |b| {
            let digests = |n: &Nav<'_>| Ok(n.follow(n.tensor_field(0, field::tensor::DIGESTS)?));
            patch(b, digests, 31u32)
        },
    )?);
    out.push(invalid(
        "digests_absent_with_algorithm",
        "tensor a's digests removed (its vtable slot zeroed) while the header names BLAKE3 (format 1.4): every tensor with buffers then has digests, or a signature would not cover it",
        dense,
        err("InvalidField", "a", "digests"),
        |b| patch(b, |n| n.vtable_slot(n.tensor(0)?, field::tensor::DIGESTS), 0u16),
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
    Ok(())
}
