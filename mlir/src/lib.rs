//! Hurray on the MLIR side: the `hurray` dialect, lowering of compiler IR to
//! Hurray files, and import of Hurray files back into IR.
//!
//! - [`Mlir`]: a context with every upstream dialect registered, the
//!   `hurray` dialect loaded from the IRDL that `cargo xtask codegen`
//!   generates from `schema/hurray.fbs` ([`HURRAY_IRDL`]), and other
//!   dialects (StableHLO, torch, TFLite, IREE) read as unregistered ops in
//!   the generic op form; what it cannot read gets an error with the remedy
//!   (`refusal`).
//! - [`lower_module`]: every tensor constant of a module (dense, splat,
//!   `dense_resource`, sparse, quantized; `hurray.tensor` entries), found by
//!   one rule whatever its dialect, becomes a tensor of a Hurray file;
//!   function signatures become descriptor-only tensors, dynamic dimensions
//!   kept dynamic.
//! - [`import_file`]: a Hurray file becomes a module of `hurray.tensor` ops
//!   (or `ml_program.global`s) whose payloads are `dense_resource` blobs that
//!   borrow the file's bytes; lowering that module gives the same tensors back.
//!
//! ```no_run
//! # fn main() -> Result<(), hurray_mlir::Error> {
//! let mlir = hurray_mlir::Mlir::new()?;
//! let module = mlir.parse_text(
//!     "func.func @f() -> tensor<3x0x5xf32> {
//!        %c = arith.constant dense<0.0> : tensor<3x0x5xf32>
//!        return %c : tensor<3x0x5xf32>
//!      }",
//! )?;
//! let mut bytes = Vec::new();
//! let lowered = hurray_mlir::lower_module(&module, &mut bytes, Default::default())?;
//! assert_eq!(lowered.tensors[1].descriptor.name, "f/0");
//! # Ok(()) }
//! ```

mod context;
mod error;
mod ffi;
mod import;
mod lower;
pub mod passes;
mod reference;
mod refusal;
mod typed;
mod types;
mod vocab;

pub use context::{HURRAY_IRDL, Mlir};
pub use error::{Error, Result};
pub use import::{ImportStyle, import_file, import_to_bytecode, import_to_text};
pub use lower::{
    LowerOptions, Lowered, LoweredTensor, NAME_ATTR, lower_module, lower_module_to_path,
    lower_module_to_writer,
};
pub use types::{hurray_type, mlir_type};
