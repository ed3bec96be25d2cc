//! The one error type of the crate.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong loading the dialect, parsing, lowering or
/// importing. Every variant about IR names the operation (`op`, with its
/// location) and, where one is at fault, the MLIR type or attribute.
/// The bytecode versions MLIR 22's reader accepts (`bytecode::Version`:
/// `kMinSupportedVersion` ..= `kVersion`).
pub(crate) const BYTECODE_VERSIONS: std::ops::RangeInclusive<u64> = 0..=6;

/// How to get the generic op form out of the common producers; quoted by
/// both errors.
pub(crate) const GENERIC_FORM_REMEDY: &str = "print the IR in the generic op form, which any MLIR \
     reads: from Python `module.operation.get_asm(print_generic_op_form=True)` (JAX: \
     `hurray.jax.save_lowered(jax.jit(f).lower(x), path)` writes the file from a `Lowered` or a \
     `jax.export.Exported` directly, or \
     `jax.jit(f).lower(x).compiler_ir('stablehlo').operation.get_asm(print_generic_op_form=True)`; \
     torch-mlir: the module `torch_mlir.fx.export_and_import` returns), or \
     `--mlir-print-op-generic` with the producer's own tool (`stablehlo-opt`, `torch-mlir-opt`, \
     `iree-opt`, `mlir-opt-22 --allow-unregistered-dialect` for IR it reads)";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source is not valid MLIR (text or bytecode); `diagnostics` holds
    /// what MLIR's parser and verifier reported.
    #[error("{source_name}: not valid MLIR:\n{diagnostics}")]
    Parse {
        source_name: String,
        diagnostics: String,
    },
    /// Text in the custom (pretty) syntax of a dialect MLIR 22 does not have
    /// (`stablehlo`, `torch`, `tfl`, ...): only that dialect can read it.
    #[error(
        "{source_name}: `{dialect}` is not a dialect of MLIR 22, so its custom (pretty) syntax \
         cannot be read; {remedy}\n{diagnostics}",
        remedy = GENERIC_FORM_REMEDY
    )]
    ForeignSyntax {
        source_name: String,
        dialect: String,
        diagnostics: String,
    },
    /// MLIR bytecode that MLIR 22 could not read: written by a newer MLIR, or
    /// by a dialect MLIR 22 does not have with that dialect's own encoding.
    #[error(
        "{source_name}: MLIR bytecode version {version} written by {producer:?} could not be \
         read by MLIR 22 (it reads bytecode versions {min}..={max}, and a dialect it does not \
         have only where the producer used builtin encodings). Bytecode is tied to its \
         producer's MLIR; text is the portable form: {remedy}\n{diagnostics}",
        min = BYTECODE_VERSIONS.start(),
        max = BYTECODE_VERSIONS.end(),
        remedy = GENERIC_FORM_REMEDY
    )]
    Bytecode {
        source_name: String,
        producer: String,
        version: u64,
        diagnostics: String,
    },
    /// The generated `hurray` IRDL dialect failed to load.
    #[error("loading the hurray IRDL dialect failed:\n{diagnostics}")]
    Dialect { diagnostics: String },
    /// An element type (or storage type) with no Hurray element type.
    #[error("{op}: MLIR type `{ty}` has no Hurray element type (in `{context}`){hint}")]
    UnsupportedType {
        op: String,
        ty: String,
        context: String,
        hint: &'static str,
    },
    /// A `dense_resource` whose blob is absent: elided when printed, or
    /// missing from the file's `dialect_resources` section.
    #[error(
        "{op}: tensor {tensor:?} references dense_resource<{resource}>, whose data is not in the \
         module (elided or missing from `dialect_resources`); re-emit the IR with its resources"
    )]
    MissingResourceData {
        op: String,
        tensor: String,
        resource: String,
    },
    /// A construct Hurray cannot represent or the lowering does not handle.
    #[error("{op}: {what} is not supported: {reason}")]
    Unsupported {
        op: String,
        what: String,
        reason: String,
    },
    /// IR that is valid MLIR but inconsistent for Hurray (a blob of the wrong
    /// size, a malformed `hurray.tensor`, ...).
    #[error("{op}: {reason}")]
    Malformed { op: String, reason: String },
    /// A reference `hurray-import-constants` cannot resolve: the tensor is
    /// not in the file, or not what the IR expects.
    #[error("{op}: the reference to tensor {tensor:?} in {file}: {reason}", file = file.display())]
    Reference {
        op: String,
        tensor: String,
        file: PathBuf,
        reason: String,
    },
    /// A pass pipeline that did not parse or failed.
    #[error("pass pipeline {pipeline:?} failed:\n{diagnostics}")]
    Pipeline {
        pipeline: String,
        diagnostics: String,
    },
    /// Two entries would get the same tensor name.
    #[error("tensor name {name:?} is produced twice: by {first} and by {second}")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
    /// The Hurray runtime rejected a descriptor or a write. (The runtime
    /// error is part of the message, not a `source()`, so error chains do not
    /// print it twice.)
    #[error("tensor {tensor:?} from {op}: {error}")]
    Tensor {
        tensor: String,
        op: String,
        error: Box<hurray::Error>,
    },
    /// Any other Hurray runtime error (opening, finishing a file).
    #[error(transparent)]
    Hurray(Box<hurray::Error>),
    /// An error reported by melior.
    #[error(transparent)]
    Melior(#[from] melior::Error),
    /// Reading or writing a file.
    #[error("{op} {path}: {error}")]
    Io {
        op: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
}

impl From<hurray::Error> for Error {
    fn from(e: hurray::Error) -> Self {
        Error::Hurray(Box::new(e))
    }
}
