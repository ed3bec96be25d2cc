//! The `hurray` command as a library: each subcommand a module, called by
//! `main.rs` (and `convert::read_all` by the fuzz targets).

pub mod cat;
pub mod convert;
pub mod input;
pub mod inspect;
pub mod limits;
#[cfg(feature = "mlir")]
pub mod mlir_cmd;
pub mod onnx;
pub mod output;
pub mod sign;
pub mod view;
