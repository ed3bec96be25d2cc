//! What signing and checking a signature can fail with, each naming what
//! failed.

/// A signing or checking failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A key that could not be read.
    #[error("{what}: {reason}")]
    Key { what: String, reason: String },
    /// A signature file that is not one.
    #[error("signature {location}: {field}: {reason}")]
    Format {
        location: String,
        field: &'static str,
        reason: String,
    },
    /// The file records no digests, so no header digest commits to its
    /// data: signing it would sign its header alone.
    #[error(
        "{location}: the file records no digests, so a signature over its header would not cover its data; write it with digests (format 1.4)"
    )]
    NoDigests { location: String },
    /// Signed with another key than the one given.
    #[error(
        "{location}: signed with the ed25519 key {signed_by}, not with the key given ({given})"
    )]
    WrongKey {
        location: String,
        signed_by: String,
        given: String,
    },
    /// The signature does not verify: it, or the digest it signs, was
    /// changed.
    #[error(
        "{location}: the ed25519 signature does not verify with key {key}: the signature file was changed"
    )]
    BadSignature { location: String, key: String },
    /// The signature is good, but the file's header is not the one signed.
    #[error(
        "{location}: the header's {algorithm} digest is {found}, the signature signs {expected}: the file was changed after it was signed"
    )]
    HeaderChanged {
        location: String,
        algorithm: &'static str,
        expected: String,
        found: String,
    },
    /// The signature signs another kind of file (a single file's signature
    /// beside an index, or the reverse).
    #[error("{location}: the signature is of {signed}, the file is {found}")]
    KindMismatch {
        location: String,
        signed: &'static str,
        found: &'static str,
    },
    /// A failure of the runtime's: opening, reading, or a checksum, digest
    /// or member that does not match.
    #[error(transparent)]
    Hurray(#[from] hurray::Error),
    /// Reading or writing a key or a signature file.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
}

impl Error {
    /// The variant's name, for front doors that map errors to types.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Key { .. } => "Key",
            Error::Format { .. } => "Format",
            Error::NoDigests { .. } => "NoDigests",
            Error::WrongKey { .. } => "WrongKey",
            Error::BadSignature { .. } => "BadSignature",
            Error::HeaderChanged { .. } => "HeaderChanged",
            Error::KindMismatch { .. } => "KindMismatch",
            Error::Hurray(e) => e.kind(),
            Error::Io { .. } => "Io",
        }
    }
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
