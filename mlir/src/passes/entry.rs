//! The functions the C++ pass shells (`csrc/passes.cpp`) call: run the Rust
//! pass on the module, report an error as an MLIR diagnostic on it, and never
//! let a panic cross into C++.

use super::{ExportOptions, ImportOptions, export_constants, import_constants};
use crate::error::Result;
use melior::ir::operation::{OperationLike, OperationRefMut};
use mlir_sys::{MlirOperation, MlirStringRef};
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

fn run(module: MlirOperation, pass: impl FnOnce(OperationRefMut<'_, '_>) -> Result<()>) -> bool {
    // SAFETY: the pass manager hands the shell the live module it runs on,
    // which nothing else touches while the pass runs.
    let op = unsafe { OperationRefMut::from_raw(module) };
    let location = op.location();
    let message = match catch_unwind(AssertUnwindSafe(|| pass(op))) {
        Ok(Ok(())) => return true,
        Ok(Err(e)) => e.to_string(),
        Err(_) => "internal error: the pass panicked (please report it)".to_owned(),
    };
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: a live location and a NUL-terminated message MLIR copies.
    unsafe { mlir_sys::mlirEmitError(location.to_raw(), message.as_ptr()) };
    false
}

/// `hurray-export-constants` on `module`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn hurray_mlir_export_constants_run(
    module: MlirOperation,
    file: MlirStringRef,
    threshold: u64,
    inline_small: bool,
    checksums: bool,
    parameters: MlirStringRef,
) -> bool {
    // The shell passes views of its options' std::strings, alive for the call.
    let file = crate::ffi::string_ref(file);
    let parameters = crate::ffi::string_ref(parameters);
    run(module, |op| {
        if file.is_empty() {
            return Err(crate::Error::Unsupported {
                op: "hurray-export-constants".into(),
                what: "exporting without a file".into(),
                reason: "pass file=PATH".into(),
            });
        }
        let mut options = ExportOptions::new(&file)
            .threshold(threshold)
            .inline_small(inline_small)
            .checksums(checksums);
        if !parameters.is_empty() {
            options = options.parameters(parameters);
        }
        export_constants(op, &options).map(drop)
    })
}

/// `hurray-import-constants` on `module`.
#[unsafe(no_mangle)]
pub(crate) extern "C" fn hurray_mlir_import_constants_run(
    module: MlirOperation,
    file: MlirStringRef,
) -> bool {
    // The shell passes a view of its option's std::string, alive for the call.
    let file = crate::ffi::string_ref(file);
    run(module, |op| {
        let mut options = ImportOptions::new();
        if !file.is_empty() {
            options = options.file(&file);
        }
        import_constants(op, &options).map(drop)
    })
}
