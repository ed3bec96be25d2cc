//! The per-tensor checks' errors, built out of line and marked cold: built
//! inline they made every tensor's checks save and restore registers for
//! them.

use crate::error::Error;
use crate::quantization::QuantParams;

/// A 1.4 quantization field in a file without footer flag bit 2: a 1.3
/// reader would ignore the field and misread every value.
#[cold]
#[inline(never)]
pub(super) fn composite_without_flag(name: &str, field: &str, value: String) -> Error {
    Error::InvalidField {
        tensor: name.to_owned(),
        field: format!("quantization.{field}"),
        value,
        reason: "a file using it sets footer flag bit 2 (composite quantization)".into(),
    }
}

/// A 1.2 quantization field in a file without footer flag bit 0: a 1.1
/// reader would ignore the field and misread every value.
#[cold]
#[inline(never)]
pub(super) fn extended_without_flag(name: &str, params: &QuantParams) -> Error {
    let (field, value) = if params.offset_type != 0 {
        ("quantization.offset_type", params.offset_type.to_string())
    } else {
        ("quantization.tensor_scale", params.tensor_scale.to_string())
    };
    Error::InvalidField {
        tensor: name.to_owned(),
        field: field.into(),
        value,
        reason: "a file using it sets footer flag bit 0 (extended quantization)".into(),
    }
}

/// `Checks::tensor`'s errors of names and alignment.
#[cold]
#[inline(never)]
pub(super) fn names_not_sorted(previous: &str, name: &str) -> Error {
    Error::NamesNotSorted {
        previous: previous.to_owned(),
        name: name.to_owned(),
    }
}

#[cold]
#[inline(never)]
pub(super) fn buffer_count(
    name: &str,
    layout: &'static str,
    expected: usize,
    found: usize,
) -> Error {
    Error::BufferCount {
        tensor: name.to_owned(),
        layout,
        expected,
        found,
    }
}

/// `check_checksums`' error, out of line: building it inline made every
/// tensor's checks save and restore registers for it.
#[cold]
#[inline(never)]
pub(super) fn checksums_error(name: &str, found: usize, buffers: usize, in_file: bool) -> Error {
    Error::InvalidField {
        tensor: name.to_owned(),
        field: "checksums".into(),
        value: found.to_string(),
        reason: if in_file {
            format!("one checksum per buffer: the tensor has {buffers}")
        } else {
            "the header names no checksum algorithm".into()
        },
    }
}

/// `check_digests`' error, out of line as `checksums_error` is.
#[cold]
#[inline(never)]
pub(super) fn digests_error(name: &str, found: usize, buffers: usize, digest_len: usize) -> Error {
    Error::InvalidField {
        tensor: name.to_owned(),
        field: "digests".into(),
        value: format!("{found} byte(s)"),
        reason: if digest_len > 0 && found == 0 {
            format!(
                "absent: the header names a digest algorithm, so every tensor with buffers has one {digest_len}-byte digest per buffer ({buffers})"
            )
        } else if digest_len > 0 {
            format!("one {digest_len}-byte digest per buffer: the tensor has {buffers}")
        } else {
            "the header names no digest algorithm".into()
        },
    }
}
