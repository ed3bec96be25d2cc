//! Element types by wire value and name.

use crate::HurrayStatus::*;
use crate::args::*;
use crate::status::*;
use hurray::ElementType;
use std::ffi::{CString, c_char};
use std::panic::catch_unwind;
use std::sync::OnceLock;

/// The canonical short name of an element type wire value (`"f32"`, `"i4"`,
/// `"bf16"`, ...), static; NULL for a value that is no element type.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_dtype_name(dtype: u8) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        ElementType::ALL
            .iter()
            .map(|t| CString::new(t.name()).unwrap_or_default())
            .collect()
    });
    catch_unwind(|| {
        ElementType::ALL
            .iter()
            .position(|t| t.to_wire() == dtype)
            .map_or(std::ptr::null(), |i| names[i].as_ptr())
    })
    .unwrap_or(std::ptr::null())
}

/// The wire value of the element type named `name` (`"f32"`, `"u4"`, ...).
///
/// # Safety
/// `name` is NUL-terminated; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_dtype_from_name(name: *const c_char, out: *mut u8) -> HurrayStatus {
    guard(|| {
        // SAFETY: caller contract.
        let name = unsafe { arg_str(name, "name") }?;
        let t = ElementType::from_name(name).ok_or_else(|| {
            Failure::new(
                HURRAY_ERR_INVALID_ARGUMENT,
                format!("{name:?} is not an element type name"),
            )
        })?;
        // SAFETY: caller contract.
        unsafe { put(out, "out", t.to_wire()) }
    })
}

/// The storage width in bits of one element of `dtype`; 0 if it is no element type.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_dtype_bits(dtype: u8) -> u32 {
    ElementType::from_wire(dtype).map_or(0, ElementType::bits)
}
