//! Runtime errors as Python exceptions.

use pyo3::PyErr;
use pyo3::exceptions::{PyBufferError, PyKeyError};

pyo3::create_exception!(
    _hurray,
    HurrayError,
    pyo3::exceptions::PyException,
    "A Hurray file could not be opened, verified, read or written."
);

pyo3::create_exception!(
    _hurray,
    ChecksumError,
    HurrayError,
    "A buffer's bytes do not match the checksum the file records: the data is corrupt."
);

/// `KeyError` for a missing tensor, `BufferError` for what an export cannot
/// do, `ChecksumError` for a checksum mismatch, `HurrayError` with the
/// runtime's message for the rest.
pub(crate) fn err(e: hurray::Error) -> PyErr {
    match e {
        hurray::Error::NotFound { name } => PyKeyError::new_err(name),
        e @ hurray::Error::ChecksumMismatch { .. } => ChecksumError::new_err(e.to_string()),
        e @ hurray::Error::CopyRequired { .. } => PyBufferError::new_err(e.to_string()),
        e => HurrayError::new_err(e.to_string()),
    }
}
