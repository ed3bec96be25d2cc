//! Checking the pointers and strings a C caller passes.

use crate::HurrayStatus::*;
use crate::status::*;
use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for this call.
pub(crate) unsafe fn arg_str<'a>(p: *const c_char, name: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| {
        Failure::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("argument `{name}` is not valid UTF-8"),
        )
    })
}

/// # Safety
/// `p` is NULL or a pointer this library returned that is still live.
pub(crate) unsafe fn arg_ref<'a, T>(p: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller passes NULL or a live handle of ours.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(name))
}

/// Runs `f` on the handle `h` (named `name` in a NULL error), inside
/// [`guard`]: how every `hurray_<handle>_*` call starts.
pub(crate) fn with_handle<T>(
    h: *const T,
    name: &str,
    f: impl FnOnce(&T) -> Result<(), Failure>,
) -> HurrayStatus {
    guard(|| {
        // SAFETY: the C caller passes NULL or a live handle of ours.
        let h = unsafe { arg_ref(h, name) }?;
        f(h)
    })
}

/// # Safety
/// `p` is NULL or valid for a write of one `T`.
pub(crate) unsafe fn put<T>(p: *mut T, name: &str, value: T) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-null, and the caller promises it is writable.
    unsafe { p.write(value) };
    Ok(())
}

pub(crate) fn check_out<T>(p: *mut T, name: &str) -> Result<(), Failure> {
    if p.is_null() {
        Err(Failure::null(name))
    } else {
        Ok(())
    }
}

/// Frees a handle (NULL is ignored); a panic in its destructor is caught.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` and is given up by the caller.
pub(crate) unsafe fn free_handle<T>(p: *mut T) {
    if !p.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: from `Box::into_raw` and given up (this fn's contract).
            drop(unsafe { Box::from_raw(p) });
        }));
    }
}

/// Writes metadata entry `entry` (number `index`, for the error when it
/// is absent) to the out pointers.
///
/// # Safety
/// The out pointers are NULL or writable.
pub(crate) unsafe fn metadata_out(
    entry: Option<(&str, &str)>,
    index: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const c_char,
    value_len: *mut usize,
) -> Result<(), Failure> {
    check_out(key, "key")?;
    check_out(key_len, "key_len")?;
    check_out(value, "value")?;
    check_out(value_len, "value_len")?;
    let (k, v) = entry.ok_or_else(|| {
        Failure::new(
            HURRAY_ERR_OUT_OF_RANGE,
            format!("metadata index {index} out of range"),
        )
    })?;
    // SAFETY: checked non-null; the caller promises these are writable.
    unsafe { put(key, "key", k.as_ptr().cast()) }?;
    // SAFETY: as above.
    unsafe { put(key_len, "key_len", k.len()) }?;
    // SAFETY: as above.
    unsafe { put(value, "value", v.as_ptr().cast()) }?;
    // SAFETY: as above.
    unsafe { put(value_len, "value_len", v.len()) }
}
