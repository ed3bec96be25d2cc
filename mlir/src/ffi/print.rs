//! Printing: types, attributes, locations, diagnostics and operations as
//! MLIR prints them, with bytes that are not UTF-8 replaced.
//!
//! melior's `Display` impls fail (and `to_string` then panics) when MLIR
//! prints bytes that are not UTF-8, which malformed input can cause (a mangled
//! file name in a location, a mangled string attribute). A panic inside the
//! diagnostic callback would abort. Everything is printed here, lossily.

use melior::ir::{Attribute, AttributeLike, Type, TypeLike};
use mlir_sys as sys;

unsafe extern "C" fn collect_bytes(s: sys::MlirStringRef, data: *mut std::ffi::c_void) {
    if s.data.is_null() || s.length == 0 || data.is_null() {
        return;
    }
    // SAFETY: `data` is the `&mut Vec<u8>` passed by `printed` below, alive for
    // the duration of the print call; `s` points at `length` bytes from MLIR.
    let (out, bytes) = unsafe {
        (
            &mut *data.cast::<Vec<u8>>(),
            std::slice::from_raw_parts(s.data.cast::<u8>(), s.length),
        )
    };
    out.extend_from_slice(bytes);
}

type Printer = unsafe extern "C" fn(sys::MlirStringRef, *mut std::ffi::c_void);

/// Runs an MLIR print function with a callback collecting its bytes.
fn printed(print: impl FnOnce(Printer, *mut std::ffi::c_void)) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    print(collect_bytes, (&mut out as *mut Vec<u8>).cast());
    out
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A type for messages.
pub(crate) fn describe(ty: Type<'_>) -> String {
    type_str(ty)
}

/// An MLIR type as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn type_str(ty: Type<'_>) -> String {
    // SAFETY: prints a valid type through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirTypePrint(ty.to_raw(), Some(cb), data)
    }))
}

/// An MLIR attribute as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn attr_str(attr: Attribute<'_>) -> String {
    // SAFETY: prints a valid attribute through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirAttributePrint(attr.to_raw(), Some(cb), data)
    }))
}

/// A location as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn location_str(loc: melior::ir::Location<'_>) -> String {
    // SAFETY: prints a valid location through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirLocationPrint(loc.to_raw(), Some(cb), data)
    }))
}

/// A diagnostic as `location: message`, with its notes (non-UTF-8 bytes
/// replaced).
///
/// # Safety
/// `d` must be a diagnostic being handled (valid for the handler call).
pub(crate) unsafe fn diagnostic_str(d: sys::MlirDiagnostic) -> String {
    // SAFETY: `d` is valid (caller contract); its location and notes are
    // owned by it; every print goes through `collect_bytes` into a live Vec.
    unsafe {
        let loc = sys::mlirDiagnosticGetLocation(d);
        let mut text = lossy(printed(|cb, data| {
            sys::mlirLocationPrint(loc, Some(cb), data)
        }));
        text.push_str(": ");
        text.push_str(&lossy(printed(|cb, data| {
            sys::mlirDiagnosticPrint(d, Some(cb), data)
        })));
        for i in 0..sys::mlirDiagnosticGetNumNotes(d) {
            let note = sys::mlirDiagnosticGetNote(d, i);
            text.push_str("\n  note: ");
            text.push_str(&lossy(printed(|cb, data| {
                sys::mlirDiagnosticPrint(note, Some(cb), data)
            })));
        }
        text
    }
}

/// An operation (with its regions, and resources for a top-level module)
/// as MLIR prints it.
pub(crate) fn operation_bytes(op: melior::ir::OperationRef<'_, '_>) -> Vec<u8> {
    // SAFETY: prints a valid operation through `collect_bytes` into a live Vec.
    printed(|cb, data| unsafe { sys::mlirOperationPrint(op.to_raw(), Some(cb), data) })
}
