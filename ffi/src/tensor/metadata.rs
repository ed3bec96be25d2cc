//! A tensor's metadata entries.

use super::{HurrayTensor, with_tensor};
use crate::args::metadata_out;
use crate::args::put;
use crate::status::HurrayStatus;
use std::ffi::c_char;

/// The number of metadata entries of the tensor.
///
/// # Safety
/// `tensor` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_metadata_count(
    tensor: *const HurrayTensor,
    out: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        let n = t.tensor_ref()?.metadata().count();
        // SAFETY: caller contract.
        unsafe { put(out, "out", n) }
    })
}

/// Tensor metadata entry `index` (sorted by key); as `hurray_file_metadata_at`.
///
/// # Safety
/// `tensor` is a live handle; the four out pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_metadata_at(
    tensor: *const HurrayTensor,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> HurrayStatus {
    with_tensor(tensor, |t| {
        let entry = t.tensor_ref()?.metadata().nth(index);
        // SAFETY: caller contract for the out pointers.
        unsafe { metadata_out(entry, index, key, key_len, value, value_len) }
    })
}
