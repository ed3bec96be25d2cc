//! The rules outside the buffer plan that the writer and the reader both
//! apply: a tensor's name is not empty, alignments are powers of two in
//! [64, 2^30].

use crate::error::{Error, Result};
use crate::format;

/// A tensor's name must not be empty; `index` is its position in the file.
#[inline]
pub(crate) fn tensor_name(index: usize, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::EmptyName { index });
    }
    Ok(())
}

/// The alignment of a tensor's buffers: `requested`, or the file's own
/// (`file`, already checked) when `requested` is 0, which is what a tensor
/// that asks for nothing records.
#[inline]
pub(crate) fn tensor_alignment(name: &str, requested: u64, file: u64) -> Result<u64> {
    match requested {
        0 => Ok(file),
        a if format::valid_alignment(a) => Ok(a),
        a => Err(invalid_alignment(format!("tensor {name:?}"), a)),
    }
}

/// The file's alignment, a power of two in [64, 2^30].
pub(crate) fn file_alignment(value: u64) -> Result<u64> {
    if !format::valid_alignment(value) {
        return Err(invalid_alignment("file".into(), value));
    }
    Ok(value)
}

/// Out of line: built inline, the error made the reader's per-tensor
/// checks save and restore registers for it.
#[cold]
#[inline(never)]
fn invalid_alignment(owner: String, value: u64) -> Error {
    Error::InvalidAlignment { owner, value }
}
