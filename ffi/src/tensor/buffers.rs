//! A tensor's bytes: its dense data, each buffer, the check of its sparse
//! index data, and its checksums.

use super::{HurrayTensor, with_tensor};
use crate::HurrayLayout::{HURRAY_LAYOUT_COO, HURRAY_LAYOUT_CSC, HURRAY_LAYOUT_CSR};
use crate::args::{check_out, put};
use crate::status::{Context, Failure, HurrayStatus};
use hurray::Error;
use std::ffi::{c_char, c_void};

/// The dense (or strided) values: `*data` points into the file (read-only,
/// valid until close) and `*len` is its byte length. An empty tensor gives
/// NULL and 0 (ADR-007). Sparse layouts give `HURRAY_ERR_UNSUPPORTED` (use
/// [`hurray_tensor_buffer_at`]); descriptor-only tensors `HURRAY_ERR_NO_DATA`.
///
/// # Safety
/// `tensor` is a live handle; `data` and `len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_data(
    tensor: *const HurrayTensor,
    data: *mut *const c_void,
    len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(data, "data")?;
        check_out(len, "len")?;
        let r = t.data_ref()?;
        let bytes = r
            .data()
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        let (p, n) = if bytes.is_empty() {
            (std::ptr::null(), 0)
        } else {
            (bytes.as_ptr().cast::<c_void>(), bytes.len())
        };
        // SAFETY: checked non-null; caller contract.
        unsafe { put(data, "data", p) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(len, "len", n) }
    })
}

/// The number of buffers: the layout's (values; indices and values;
/// pointers, indices and values), then scales and zero points if quantized;
/// 0 for a descriptor-only tensor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_buffer_count(
    tensor: *const HurrayTensor,
    out: *mut usize,
) -> HurrayStatus {
    // SAFETY: caller contract.
    with_tensor(tensor, |t| unsafe { put(out, "out", t.buffers.len()) })
}

/// Buffer `index`: its role (static NUL-terminated string: `values`,
/// `indices`, `pointers`, `scales`, `zero_points`), data and length. A
/// zero-length buffer gives NULL and 0 (ADR-007). The bytes are read-only
/// and valid until close. Sparse index data is not checked here: call
/// [`hurray_tensor_check`] first.
///
/// # Safety
/// `tensor` is a live handle; `role` is writable or NULL; `data` and `len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_buffer_at(
    tensor: *const HurrayTensor,
    index: usize,
    role: *mut *const c_char,
    data: *mut *const c_void,
    len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(data, "data")?;
        check_out(len, "len")?;
        let &(r, _) = t
            .buffers
            .get(index)
            .ok_or_else(|| Failure::index_out_of_range("buffer", index, t.buffers.len()))?;
        let (p, n) = t.buffer(r)?;
        if !role.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { put(role, "role", r.c_name().as_ptr()) }?;
        }
        // SAFETY: checked non-null; caller contract.
        unsafe { put(data, "data", p) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(len, "len", n) }
    })
}

/// Checks what opening does not: the index data of a sparse tensor
/// (COO coordinates in range; CSR/CSC pointers start at 0, never decrease,
/// end at nnz; indices in range). `HURRAY_OK` for dense tensors, empty
/// ones and descriptor-only ones; `HURRAY_ERR_INVALID_FILE` otherwise.
///
/// # Safety
/// `tensor` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_check(tensor: *const HurrayTensor) -> HurrayStatus {
    with_tensor(tensor, |t| {
        if t.descriptor_only {
            return Ok(());
        }
        let r = t.tensor_ref()?;
        let err = |e: Error| Failure::from_error(&e, Context::View);
        match t.layout {
            HURRAY_LAYOUT_COO => r.coo().map(|_| ()).map_err(err),
            HURRAY_LAYOUT_CSR => r.csr().map(|_| ()).map_err(err),
            HURRAY_LAYOUT_CSC => r.csc().map(|_| ()).map_err(err),
            _ => Ok(()),
        }
    })
}

/// Reads every buffer of the tensor and compares its checksum with the one
/// the file records (format 1.2; opening never reads data, so this is the
/// only place a flipped data byte is found). `*verified` is `true` when every
/// buffer matches, `false` when the file records no checksums (files before
/// 1.2, files written without, descriptor-only tensors). A mismatch returns
/// `HURRAY_ERR_CHECKSUM_MISMATCH`, kind `ChecksumMismatch`, with a message
/// naming the tensor, the buffer, the algorithm and both values.
///
/// # Safety
/// `tensor` is a live handle; `verified` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_verify_checksum(
    tensor: *const HurrayTensor,
    verified: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(verified, "verified")?;
        let ok = t
            .tensor_ref()?
            .verify_checksum()
            .map_err(|e| Failure::from_error(&e, Context::View))?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(verified, "verified", ok) }
    })
}

/// The checksum the file records for buffer `index` (in
/// [`hurray_tensor_buffer_at`] order): `*present` is `true` and `*out` the
/// value (CRC-32C in the low 32 bits), or `*present` is `false` and `*out` 0
/// when the file records no checksums. This reads no data; see
/// [`hurray_tensor_verify_checksum`]. `HURRAY_ERR_OUT_OF_RANGE` when `index`
/// is not below the buffer count.
///
/// # Safety
/// `tensor` is a live handle; `out` and `present` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_checksum_at(
    tensor: *const HurrayTensor,
    index: usize,
    out: *mut u64,
    present: *mut bool,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        check_out(out, "out")?;
        check_out(present, "present")?;
        if index >= t.buffers.len() {
            return Err(Failure::index_out_of_range(
                "buffer",
                index,
                t.buffers.len(),
            ));
        }
        let sum = t
            .tensor_ref()?
            .checksums()
            .and_then(|sums| sums.get(index).map(|&(_, sum)| sum));
        // SAFETY: checked non-null; caller contract.
        unsafe { put(out, "out", sum.unwrap_or(0)) }?;
        // SAFETY: checked non-null; caller contract.
        unsafe { put(present, "present", sum.is_some()) }
    })
}
