//! What can go wrong reading an ONNX model or pointing it at a Hurray file.

use std::path::PathBuf;

/// An error of this crate: each names the file, message or tensor at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The model is not valid protobuf where this crate reads it.
    #[error("malformed ONNX {message} at byte {at}: {reason}")]
    Malformed {
        message: &'static str,
        at: usize,
        reason: &'static str,
    },
    /// The model is larger than protobuf allows (its weights belong in
    /// external data).
    #[error("{}: {size} bytes is over the {limit}-byte limit of a protobuf message", path.display())]
    ModelTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    /// A tensor field holds a value this crate cannot accept.
    #[error("initializer {tensor:?}: {field} = {value}: {reason}")]
    Tensor {
        tensor: String,
        field: &'static str,
        value: String,
        reason: String,
    },
    /// An argument cannot be honoured (never reinterpreted).
    #[error("{0}")]
    Argument(String),
    /// The Hurray runtime refused a tensor or file.
    #[error(transparent)]
    Hurray(#[from] hurray::Error),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    /// A `Malformed` error found in a message at offset `by` of the model,
    /// with its offset made the model's; other errors as they are.
    pub(crate) fn shifted(self, by: usize) -> Error {
        match self {
            Error::Malformed {
                message,
                at,
                reason,
            } => Error::Malformed {
                message,
                at: at + by,
                reason,
            },
            e => e,
        }
    }

    pub(crate) fn tensor(
        tensor: &str,
        field: &'static str,
        value: impl ToString,
        reason: impl Into<String>,
    ) -> Error {
        Error::Tensor {
            tensor: tensor.to_owned(),
            field,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
