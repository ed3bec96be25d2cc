//! Runtime errors as Python exceptions.

use pyo3::PyErr;
use pyo3::exceptions::{PyBufferError, PyIndexError, PyKeyError};

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

pyo3::create_exception!(
    _hurray,
    MemberMismatchError,
    ChecksumError,
    "A member file of a sharded checkpoint is not what its index records (its length, \
     its CRC-32C, or a piece's type and shape): replaced, truncated or corrupt."
);

pyo3::create_exception!(
    _hurray,
    SignatureError,
    HurrayError,
    "A signature does not verify, was made with another key, or signs another header than \
     the file's; or a file could not be signed (no digests, a key that is not an ed25519 key)."
);

/// A signing or checking failure: `SignatureError` for the signature's own
/// (a key, the signature file, a header that is not the one signed), the
/// runtime's exceptions for the rest (a digest that does not match is a
/// `ChecksumError`, a member unlike its index a `MemberMismatchError`).
pub(crate) fn sign_err(e: hurray_sign::Error) -> PyErr {
    match e {
        hurray_sign::Error::Hurray(e) => err(e),
        e => SignatureError::new_err(e.to_string()),
    }
}

/// `KeyError` for a missing tensor, `BufferError` for what an export cannot
/// do, `ChecksumError` for a checksum mismatch, `MemberMismatchError` for a
/// sharded checkpoint's member that differs from its index, `IndexError`
/// for a slice that does not fit, `HurrayError` with the runtime's message
/// for the rest.
pub(crate) fn err(e: hurray::Error) -> PyErr {
    match e {
        hurray::Error::NotFound { name } => PyKeyError::new_err(name),
        e @ (hurray::Error::ChecksumMismatch { .. } | hurray::Error::DigestMismatch { .. }) => {
            ChecksumError::new_err(e.to_string())
        }
        e @ hurray::Error::MemberMismatch { .. } => MemberMismatchError::new_err(e.to_string()),
        e @ hurray::Error::InvalidSlice { .. } => PyIndexError::new_err(e.to_string()),
        e @ hurray::Error::CopyRequired { .. } => PyBufferError::new_err(e.to_string()),
        e => HurrayError::new_err(e.to_string()),
    }
}
