//! Hurray inside compiler pipelines: two MLIR passes over a `builtin.module`.
//!
//! - `hurray-export-constants{file=PATH threshold=256 inline-small=true checksums=true}`
//!   ([`export_constants`]): every tensor constant the lowering finds (the
//!   one rule of [`crate::lower_module`], whatever the dialect) holding at
//!   least `threshold` bytes of IR is written to a Hurray file in one
//!   streaming pass, together with the functions' signatures
//!   (descriptor-only, dynamic dimensions kept dynamic). Each such constant
//!   keeps its op and type; only its elements attribute becomes a reference,
//!   `dense_resource<"hurray.dense:NAME">` or
//!   `dense_resource<"hurray.resource:NAME">` without data (the form says
//!   what to restore), and the module gets `hurray.file = "PATH"`. The IR
//!   keeps verifying. Splats (one element of IR) and sparse constants stay
//!   inline; with `inline-small=false` every other constant is exported,
//!   empty ones as 0-byte tensors.
//! - `hurray-import-constants{file=PATH}` ([`import_constants`]): the
//!   inverse. Each reference is checked against the file's tensor (element
//!   type, shape, layout) and restored: a `resource` one by giving its
//!   resource the file's bytes in place (the mapping stays alive until MLIR
//!   drops the blob), a `dense` one as the `dense` attribute it was.
//!
//! The passes are registered with MLIR as C++ pass shells (`csrc/passes.cpp`,
//! options and registry only) that call `entry`'s functions, so the same
//! code runs from a Rust [`melior::pass::PassManager`] ([`export_pass`],
//! [`import_pass`], or a textual pipeline: [`run_pipeline`]), from
//! `hurray opt`, and from stock `mlir-opt-22 --load-pass-plugin` with the
//! `hurray-mlir-plugin` library.

mod compare;
mod entry;
mod export;
mod import;
mod parameters;
mod pipeline;
mod resource;

pub use crate::reference::{FILE_ATTR, Form};
pub use compare::canonical_resource_names;
pub use export::{ExportOptions, Exported, export_constants, export_constants_into};
pub use import::{ImportOptions, Imported, import_constants};
pub use pipeline::run_pipeline;

use melior::pass::Pass;
use mlir_sys::{MlirPass, MlirStringRef};

unsafe extern "C" {
    fn hurray_mlir_register_passes();
    fn hurray_mlir_create_export_constants(
        file: MlirStringRef,
        threshold: u64,
        inline_small: bool,
        checksums: bool,
        parameters: MlirStringRef,
    ) -> MlirPass;
    fn hurray_mlir_create_import_constants(file: MlirStringRef) -> MlirPass;
}

/// Registers `hurray-export-constants` and `hurray-import-constants` in
/// MLIR's global pass registry (once per process), so textual pipelines
/// ([`melior::utility::parse_pass_pipeline`]) name them.
pub fn register() {
    // SAFETY: the shim registers two pass classes under a std::call_once.
    unsafe { hurray_mlir_register_passes() }
}

/// The read-only view of `op` (melior has no safe conversion).
fn read_only<'c, 'a>(
    op: melior::ir::operation::OperationRefMut<'c, 'a>,
) -> melior::ir::OperationRef<'c, 'a> {
    // SAFETY: the same live operation, borrowed for the same lifetime;
    // reading through it while `op` is not used to write is sound.
    unsafe { melior::ir::OperationRef::from_raw(op.to_raw()) }
}

/// `hurray-export-constants` with `options`, for a [`melior::pass::PassManager`]
/// (nested under `builtin.module`).
pub fn export_pass(options: &ExportOptions) -> Pass {
    let file = options.file.to_string_lossy();
    let parameters = options.parameters.as_deref().unwrap_or_default();
    // SAFETY: the shim copies the strings into the new pass's options and
    // returns an owned pass.
    let raw = unsafe {
        hurray_mlir_create_export_constants(
            melior::StringRef::new(&file).to_raw(),
            options.threshold,
            options.inline_small,
            options.checksums,
            melior::StringRef::new(parameters).to_raw(),
        )
    };
    // SAFETY: a pass just created, owned by nobody else; the pass manager
    // it is added to takes it.
    unsafe { Pass::from_raw(raw) }
}

/// `hurray-import-constants` with `options`, for a [`melior::pass::PassManager`].
pub fn import_pass(options: &ImportOptions) -> Pass {
    let file = options
        .file
        .as_deref()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    // SAFETY: as in `export_pass`.
    let raw =
        unsafe { hurray_mlir_create_import_constants(melior::StringRef::new(&file).to_raw()) };
    // SAFETY: as in `export_pass`.
    unsafe { Pass::from_raw(raw) }
}
