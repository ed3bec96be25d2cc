//! The one error type of the crate. Every variant that concerns a tensor
//! names it, the field at fault and the offending value.

use crate::ElementType;
use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading, verifying, viewing or writing a
/// Hurray file.
///
/// [`Error::kind`] names the variant (`"BufferLength"`, `"NotFound"`, ...):
/// the stable, machine-readable kind that the C API, the Python extension
/// and the compliance vectors report.
///
/// Every message is complete, the underlying I/O or FlatBuffers error
/// included, and no variant chains a `source()`: a front door that prints
/// an error with its causes prints each cause once.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{op} {path}: {cause}")]
    Io {
        op: &'static str,
        path: PathBuf,
        // Printed in the message, so not also chained as a `source()`: a
        // front door that prints the chain would print it twice. (thiserror
        // chains a field named `source`, hence the name.)
        cause: std::io::Error,
    },
    /// An I/O error on a stream that has no path.
    #[error("I/O error: {0}")]
    Stream(std::io::Error),
    /// The input is shorter than a prefix plus a footer.
    #[error("file is {len} bytes, shorter than the {min} bytes of an empty Hurray file")]
    TooShort { len: u64, min: u64 },
    /// The first eight bytes are not the Hurray magic.
    #[error("not a Hurray file: magic is {found:02x?}")]
    BadMagic { found: [u8; 8] },
    /// The last eight bytes are not the footer magic (truncated file?).
    #[error("footer magic is {found:02x?}: file truncated or not a Hurray file")]
    BadFooterMagic { found: [u8; 8] },
    /// The major version is not one this build reads.
    #[error(
        "format version {major}.{minor} is not supported (this build reads {}.x)",
        crate::format::VERSION_MAJOR
    )]
    UnsupportedVersion { major: u16, minor: u16 },
    /// The footer locates the header outside the file or misaligned.
    #[error("footer field {field} = {value} is invalid: {reason}")]
    BadFooter {
        field: &'static str,
        value: u64,
        reason: &'static str,
    },
    /// The FlatBuffers verifier rejected the header.
    #[error("header is not a valid FlatBuffer: {0}")]
    InvalidHeader(flatbuffers::InvalidFlatbuffer),
    /// A tensor name is empty.
    #[error("tensor #{index} has an empty name")]
    EmptyName { index: usize },
    /// Tensor names are not strictly ascending (the lookup index would be wrong).
    #[error("tensor {name:?} follows {previous:?}: names must be unique and sorted")]
    NamesNotSorted { previous: String, name: String },
    /// Two tensors share a name (writer).
    #[error("tensor {name:?} is written twice")]
    DuplicateName { name: String },
    /// Metadata keys are not strictly ascending.
    #[error(
        "metadata of {owner}: key {key:?} follows {previous:?}: keys must be unique and sorted"
    )]
    MetadataNotSorted {
        owner: String,
        previous: String,
        key: String,
    },
    /// A field holds an element type this build does not know, or one not allowed there.
    #[error(
        "tensor {tensor:?}: {field} = {value} is not a valid element type here{}",
        allowed_suffix(allowed)
    )]
    InvalidElementType {
        tensor: String,
        field: &'static str,
        value: u8,
        allowed: &'static [ElementType],
    },
    /// The layout is not one this build knows (a newer writer): never guessed at.
    #[error("tensor {tensor:?}: layout type {value} is not supported by this reader")]
    UnsupportedLayout { tensor: String, value: u8 },
    /// The quantization scheme is not one this build knows.
    #[error("tensor {tensor:?}: quantization scheme {value} is not supported by this reader")]
    UnsupportedQuantization { tensor: String, value: u8 },
    /// A requested or recorded alignment is not a power of two in [64, 2^30].
    #[error("{owner}: alignment {value} is not a power of two between 64 and 2^30")]
    InvalidAlignment { owner: String, value: u64 },
    /// A dynamic dimension on a tensor that carries data.
    #[error("tensor {tensor:?}: shape[{dim}] is dynamic, so the tensor must be descriptor-only")]
    DynamicWithData { tensor: String, dim: usize },
    /// A descriptor-only tensor lists buffers.
    #[error("tensor {tensor:?}: descriptor-only but {field} holds {value} byte(s)")]
    DescriptorOnlyWithData {
        tensor: String,
        field: String,
        value: u64,
    },
    /// A field violates a layout or quantization rule.
    /// (`tensor` is empty for a field of the header itself, such as `name_index`.)
    #[error("{}{field} = {value}: {reason}", owner_prefix(tensor))]
    InvalidField {
        tensor: String,
        field: String,
        value: String,
        reason: String,
    },
    /// Size arithmetic (elements x bits, offsets) overflows 64 bits.
    #[error("tensor {tensor:?}: size of {field} overflows 64 bits")]
    SizeOverflow { tensor: String, field: &'static str },
    /// The tensor lists the wrong number of buffers for its layout.
    #[error("tensor {tensor:?}: layout {layout} needs {expected} buffer(s), found {found}")]
    BufferCount {
        tensor: String,
        layout: &'static str,
        expected: usize,
        found: usize,
    },
    /// A buffer's byte length differs from what shape, type and layout imply.
    #[error("tensor {tensor:?}: buffer {buffer} is {found} bytes, expected {expected}")]
    BufferLength {
        tensor: String,
        buffer: &'static str,
        expected: u64,
        found: u64,
    },
    /// A buffer lies (partly) outside the data region.
    #[error(
        "tensor {tensor:?}: buffer {buffer} [{offset}, +{length}) lies outside the data region [{start}, {end})"
    )]
    BufferOutOfBounds {
        tensor: String,
        buffer: &'static str,
        offset: u64,
        length: u64,
        start: u64,
        end: u64,
    },
    /// A non-empty buffer does not start on its alignment.
    #[error("tensor {tensor:?}: buffer {buffer} offset {offset} is not a multiple of {alignment}")]
    BufferMisaligned {
        tensor: String,
        buffer: &'static str,
        offset: u64,
        alignment: u64,
    },
    /// Two buffers share bytes.
    #[error(
        "tensor {first:?} buffer {first_buffer} overlaps tensor {second:?} buffer {second_buffer}"
    )]
    BuffersOverlap {
        first: String,
        first_buffer: &'static str,
        second: String,
        second_buffer: &'static str,
    },
    /// Sparse index data is inconsistent (checked before any sparse view is returned).
    #[error("tensor {tensor:?}: {buffer}[{position}] = {value}: {reason}")]
    InvalidSparseIndex {
        tensor: String,
        buffer: &'static str,
        position: u64,
        value: i64,
        reason: &'static str,
    },
    /// The tensor has no buffer of that role (its layout or quantization has none).
    #[error("tensor {tensor:?} has no {buffer} buffer")]
    NoBuffer {
        tensor: String,
        buffer: &'static str,
    },
    /// The file is now shorter than when it was opened: another process
    /// truncated it ([`File::fetch`](crate::File::fetch)).
    #[error(
        "tensor {tensor:?}: buffer {buffer} ends at byte {end}, but the file is now {file_len} bytes (truncated since it was opened)"
    )]
    Truncated {
        tensor: String,
        buffer: &'static str,
        end: u64,
        file_len: u64,
    },
    /// A buffer's bytes do not have the checksum the header records
    /// ([`TensorRef::verify_checksum`](crate::TensorRef::verify_checksum)).
    #[error(
        "tensor {tensor:?}: buffer {buffer} has {algorithm} checksum {found:#010x}, the header records {expected:#010x}: the data is corrupt"
    )]
    ChecksumMismatch {
        tensor: String,
        buffer: &'static str,
        algorithm: &'static str,
        expected: u64,
        found: u64,
    },
    /// A buffer's bytes do not have the digest the header records (format
    /// 1.4): changed since the file was written
    /// ([`TensorRef::verify_checksum`](crate::TensorRef::verify_checksum)).
    #[error(
        "tensor {tensor:?}: buffer {buffer} has {algorithm} digest {found}, the header records {expected}: the data was changed"
    )]
    DigestMismatch {
        tensor: String,
        buffer: &'static str,
        algorithm: &'static str,
        expected: String,
        found: String,
    },
    /// No tensor of that name.
    #[error("no tensor named {name:?}")]
    NotFound { name: String },
    /// A slice's range does not fit the tensor.
    #[error("tensor {tensor:?}: slice {range:?} of dimension {dim}: {reason}")]
    InvalidSlice {
        tensor: String,
        dim: usize,
        range: String,
        reason: &'static str,
    },
    /// A whole tensor was asked of a sharded tensor stored in pieces
    /// ([`ShardedFile::get`](crate::ShardedFile::get)).
    #[error(
        "tensor {tensor:?} is stored in {pieces} pieces across the checkpoint's files; assemble it (`assemble`) or read a slice (`slice`)"
    )]
    Chunked { tensor: String, pieces: usize },
    /// A member file of a sharded checkpoint is not what its index records.
    #[error("member {member:?} of the index: {field} is {found}, the index records {expected}")]
    MemberMismatch {
        member: String,
        field: &'static str,
        expected: String,
        found: String,
    },
    /// A typed view asked for another element type than the tensor has.
    #[error("tensor {tensor:?} holds {found:?}, not {requested:?}")]
    TypeMismatch {
        tensor: String,
        requested: ElementType,
        found: ElementType,
    },
    /// The operation needs another layout.
    #[error("tensor {tensor:?} has layout {found}; {operation} needs {needed}")]
    LayoutMismatch {
        tensor: String,
        found: &'static str,
        needed: &'static str,
        operation: &'static str,
    },
    /// The tensor carries no data (descriptor-only).
    #[error("tensor {tensor:?} is descriptor-only: it carries no data")]
    NoData { tensor: String },
    /// The data of a tensor of a file read through a source was asked of a
    /// handle that does not read ([`File::get`](crate::File::get),
    /// [`File::tensors`](crate::File::tensors)) before anything read it.
    #[error("tensor {tensor:?} has not been read from its source: File::tensor reads it")]
    NotRead { tensor: String },
    /// An export in place was asked for (DLPack `copy=False`) of a tensor
    /// that has no in-place form the consumer reads.
    #[error("tensor {tensor:?} cannot be exported without copying: {reason}")]
    CopyRequired {
        tensor: String,
        reason: &'static str,
    },
    /// A contiguous view was asked of a strided tensor.
    #[error("tensor {tensor:?} is strided ({strides:?}); use the strided accessor or copy it")]
    NotContiguous { tensor: String, strides: Vec<i64> },
    /// The bytes are not aligned in memory for the requested type (a borrowed input buffer).
    #[error(
        "tensor {tensor:?}: data at address {address:#x} is not aligned to {required} for a typed view"
    )]
    UnalignedMemory {
        tensor: String,
        address: usize,
        required: usize,
    },
    /// A resolution of dynamic dimensions was refused.
    #[error("tensor {tensor:?}: cannot resolve shape[{dim}] = {current} to {requested}: {reason}")]
    Resolve {
        tensor: String,
        dim: usize,
        current: String,
        requested: String,
        reason: &'static str,
    },
    /// The writer was used after a failed write left it unusable.
    #[error("the writer failed earlier and cannot continue: {reason}")]
    WriterPoisoned { reason: String },
    /// Streamed tensor data did not match the descriptor.
    #[error("tensor {tensor:?}: {reason}")]
    WriteMismatch { tensor: String, reason: String },
    /// An output would be far larger than the input bytes it is made from
    /// (`limits::check_expansion`); writing it needs an explicit opt-in. The
    /// message spells the limit's rule, which a test in `limits` holds to
    /// `EXPANSION_RATIO` and `EXPANSION_ALLOWANCE` (the numbers are not read
    /// from there: an error carries no more than it needs).
    #[error(
        "tensor {tensor:?}: would expand {stored} stored bytes to {output} bytes, over the \
         {limit}-byte limit (16x the stored bytes, or 64 MiB); expanding it needs an explicit opt-in \
         (`--allow-expansion` on the command line)"
    )]
    Expansion {
        tensor: String,
        stored: u64,
        output: u64,
        limit: u64,
    },
    /// Memory for a buffer the file describes could not be allocated (the
    /// size was verified against the file; the machine has less).
    #[error("tensor {tensor:?}: could not allocate {bytes} bytes for buffer {buffer:?}")]
    OutOfMemory {
        tensor: String,
        buffer: &'static str,
        bytes: u64,
    },
}

/// `tensor "w": `, or nothing for a field that belongs to no tensor.
fn owner_prefix(tensor: &str) -> String {
    if tensor.is_empty() {
        "header: ".to_owned()
    } else {
        format!("tensor {tensor:?}: ")
    }
}

fn allowed_suffix(allowed: &[ElementType]) -> String {
    if allowed.is_empty() {
        String::new()
    } else {
        let names: Vec<_> = allowed.iter().map(|t| t.name()).collect();
        format!(" (allowed: {})", names.join(", "))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Stream(e)
    }
}

impl From<flatbuffers::InvalidFlatbuffer> for Error {
    fn from(e: flatbuffers::InvalidFlatbuffer) -> Self {
        Error::InvalidHeader(e)
    }
}

impl Error {
    /// The variant's name, e.g. `"BufferLength"`.
    pub fn kind(&self) -> &'static str {
        self.into()
    }

    /// Every kind [`kind`](Self::kind) can return.
    pub const KINDS: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;

    /// [`Error::Io`]: `op` (such as `"reading"`) on `path` (a path or URL) failed.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            cause: source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_variant_names_and_causes_print_once() {
        let e = Error::NotFound { name: "w".into() };
        assert_eq!(e.kind(), "NotFound");
        assert!(Error::KINDS.contains(&"BufferLength"));
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = Error::io("opening", "/x", io);
        assert_eq!(e.kind(), "Io");
        assert_eq!(e.to_string(), "opening /x: gone");
        assert!(std::error::Error::source(&e).is_none());
        let e = Error::InvalidField {
            tensor: String::new(),
            field: "name_index".into(),
            value: "3 slots".into(),
            reason: "r".into(),
        };
        assert_eq!(e.to_string(), "header: name_index = 3 slots: r");
        let e = Error::from(std::io::Error::other("disk"));
        assert_eq!(e.kind(), "Stream");
        assert!(std::error::Error::source(&e).is_none());
    }
}
