//! Invalid vectors of sparse index data, found by the sparse views and
//! `hurray validate` rather than at open.

use super::{Bases, in_view, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::patch;
use anyhow::Result;

/// The invalid vectors of sparse index data.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases { csr, csc, coo, .. } = *bases;
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
    Ok(())
}
