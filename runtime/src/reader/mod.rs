//! Opening and verifying a Hurray file, and the borrowed tensor handle.
//!
//! [`Reader::new`] is the one verifying constructor: after it returns, every
//! descriptor has passed the FlatBuffers verifier and the semantic rules of
//! the descriptor rules (`validate`), every buffer lies in the data region, is aligned and
//! overlaps no other. Opening touches only the prefix, footer and header, so
//! its cost does not depend on the size of the data.

use crate::checksum::Algorithms;
use crate::error::{Error, Result};
use crate::format::{self, FOOTER_LEN, PREFIX_LEN, VERSION_MAJOR};
use crate::generated::fb;
use crate::structure::{self, Structural};
use names::NameTable;
use tensor::FileData;

mod fetch;
mod file;
mod iter;
mod metadata;
pub(crate) mod names;
mod quant;
mod semantics;
mod shape;
mod storage;
mod stream_map;
mod tensor;
mod touch;
// The two verifiers side by side, for differential tests and fuzz targets:
// a test hook, not part of the documented API.
#[doc(hidden)]
pub mod verifiers;

pub use crate::aligned::AlignedBytes;
pub use fetch::Fetched;
pub use file::{File, Validation};
pub use iter::Tensors;
pub use metadata::Metadata;
pub use shape::Shape;
pub use storage::MapMode;
pub use tensor::TensorRef;

/// Why one of the two verifiers refused a header.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The structural checks (FlatBuffers offsets, vtables, strings, limits).
    Structure(Structural),
    /// Everything else: the footer, the identifier, the semantic rules.
    Rule(Error),
    /// Two buffers overlap; the reference path names them.
    Overlap,
    /// What cannot happen after a walk that passed (the header's fields
    /// missing, or unlike the ones read before the walk): the reference
    /// path decides.
    Unexpected(&'static str),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Rule(e)
    }
}

/// A verified view of a Hurray file's bytes.
///
/// Cheap to clone: the index of names it builds while verifying is shared.
#[derive(Clone)]
pub struct Reader<'a> {
    data: FileData<'a>,
    /// The header, over the header's bytes (names are read from them).
    header: fb::Header<'a>,
    version: (u16, u16),
    names: Names<'a>,
    /// What every look-up needs from the header, read once.
    tensors: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Tensor<'a>>>>,
    alignment: u64,
    sums: Algorithms,
}

/// Where a reader's index of names is.
#[derive(Clone, Debug)]
enum Names<'a> {
    /// None: look-ups use the file's own name index, then binary search.
    None,
    /// Its owner's (a [`File`]).
    Borrowed(&'a NameTable),
    /// Its own, built by [`Reader::new`].
    Owned(NameTable),
}

impl Names<'_> {
    fn table(&self) -> Option<&NameTable> {
        match self {
            Names::None => None,
            Names::Borrowed(t) => Some(t),
            Names::Owned(t) => Some(t),
        }
    }

    fn owned(self) -> Option<NameTable> {
        match self {
            Names::Owned(t) => Some(t),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("version", &self.version)
            .field("tensors", &self.len())
            .finish()
    }
}

/// Where the header is, as the prefix and footer say, before any trust.
/// The header's byte range, the format version and the footer flags.
pub(crate) type Located = (std::ops::Range<u64>, (u16, u16), u64);

pub(super) fn locate(bytes: &[u8]) -> Result<(std::ops::Range<usize>, (u16, u16), u64)> {
    let len = bytes.len() as u64;
    let min = PREFIX_LEN + FOOTER_LEN;
    if len < min {
        return Err(Error::TooShort { len, min });
    }
    let footer_at = bytes.len() - FOOTER_LEN as usize;
    let (range, version, flags) = locate_parts(&bytes[..8 + 4], &bytes[footer_at..], len)?;
    // Both ends are below `len`, a `usize`.
    Ok((range.start as usize..range.end as usize, version, flags))
}

/// [`locate`] from the file's first 12 bytes (magic and version), its last
/// 32 (the footer) and its length: what a positioned reader fetches first.
pub(crate) fn locate_parts(prefix: &[u8], footer: &[u8], len: u64) -> Result<Located> {
    let min = PREFIX_LEN + FOOTER_LEN;
    let (Some(prefix), Ok(footer)) = (prefix.first_chunk::<12>(), <&[u8; 32]>::try_from(footer))
    else {
        return Err(Error::TooShort { len, min });
    };
    if len < min {
        return Err(Error::TooShort { len, min });
    }
    let version = format::decode_prefix(prefix).map_err(|found| Error::BadMagic { found })?;
    if version.0 != VERSION_MAJOR {
        return Err(Error::UnsupportedVersion {
            major: version.0,
            minor: version.1,
        });
    }
    let footer_at = len - FOOTER_LEN;
    let format::Footer {
        header_offset,
        header_length,
        flags,
    } = format::Footer::decode(footer).map_err(|found| Error::BadFooterMagic { found })?;
    let bad = |field, value, reason| Error::BadFooter {
        field,
        value,
        reason,
    };
    if header_offset < PREFIX_LEN || !header_offset.is_multiple_of(8) {
        return Err(bad(
            "header_offset",
            header_offset,
            "must be a multiple of 8 after the prefix",
        ));
    }
    if header_length < 8 {
        // Root offset and file identifier: anything shorter is no FlatBuffer.
        return Err(bad(
            "header_length",
            header_length,
            "shorter than a FlatBuffer's 8-byte start",
        ));
    }
    if flags & !format::KNOWN_FLAGS != 0 {
        // Flags are for features a reader must understand (1.2 defines one).
        return Err(bad(
            "flags",
            flags,
            "unknown flags: the file needs a newer reader",
        ));
    }
    if header_offset.checked_add(header_length) != Some(footer_at) {
        return Err(bad(
            "header_length",
            header_length,
            "the header must end where the footer starts",
        ));
    }
    Ok((header_offset..footer_at, version, flags))
}

/// The place of the first tensor whose name is not below `name`, by binary
/// search: names are sorted (verified at open).
fn first_not_below(
    tensors: flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::Tensor<'_>>>,
    name: &str,
) -> usize {
    let (mut lo, mut hi) = (0, tensors.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if tensors.get(mid).name() < name {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl<'a> Reader<'a> {
    /// Verifies `bytes` as a Hurray file: prefix, footer, the FlatBuffers
    /// header, and every descriptor and buffer (see the module docs).
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let (range, version, flags) = locate(bytes)?;
        Reader::verify(
            bytes,
            &bytes[range.clone()],
            range.start as u64,
            version,
            flags,
        )
    }

    /// Verifies `header_bytes` (the file's header, in place or a copy of it)
    /// against the file `bytes` whose data region ends at `data_end`. A
    /// [`File`] read through a source passes no bytes: the checks need only
    /// `data_end`.
    ///
    /// The generated verifier runs first; when it finds a structural
    /// failure, the generic one runs for the error and its path.
    pub(crate) fn verify(
        bytes: &'a [u8],
        header_bytes: &'a [u8],
        data_end: u64,
        version: (u16, u16),
        flags: u64,
    ) -> Result<Self> {
        match Reader::verify_generated(bytes, header_bytes, data_end, version, flags) {
            Ok(reader) => Ok(reader),
            Err(Failure::Rule(e)) => Err(e),
            Err(Failure::Structure(_) | Failure::Overlap | Failure::Unexpected(_)) => {
                Reader::verify_reference(bytes, header_bytes, data_end, version, flags)
            }
        }
    }

    /// The options of the generic verifier, whose limits the generated one shares.
    fn verifier_options(header_bytes: &[u8]) -> flatbuffers::VerifierOptions {
        flatbuffers::VerifierOptions {
            max_depth: crate::limits::MAX_HEADER_DEPTH,
            max_tables: header_bytes.len() / 4 + 1,
            max_apparent_size: header_bytes.len().saturating_mul(2).max(1 << 16),
            ignore_missing_null_terminator: false,
        }
    }

    fn check_identifier(header_bytes: &[u8]) -> Result<()> {
        if !fb::header_buffer_has_identifier(header_bytes) {
            return Err(Error::InvalidHeader(
                flatbuffers::InvalidFlatbuffer::MissingRequiredField {
                    required: "file_identifier \"HRRY\"".into(),
                    error_trace: Default::default(),
                },
            ));
        }
        Ok(())
    }

    /// The generated verifier (`gen/verifier.rs`) with the semantic checks
    /// fused into it, each tensor checked as soon as its table passed.
    pub(crate) fn verify_generated(
        bytes: &'a [u8],
        header_bytes: &'a [u8],
        data_end: u64,
        version: (u16, u16),
        flags: u64,
    ) -> std::result::Result<Self, Failure> {
        Reader::check_identifier(header_bytes)?;
        let opts = Reader::verifier_options(header_bytes);
        // The file's alignment and checksum algorithm, which every tensor's
        // checks need before the walk reaches the header's own fields: read
        // without trust here, compared with the verified header below.
        let peek = |voffset: flatbuffers::VOffsetT, size: usize| {
            structure::peek_root_field(header_bytes, usize::from(voffset))
                .and_then(|at| header_bytes.get(at..at.checked_add(size)?))
        };
        let alignment = peek(fb::Header::VT_ALIGNMENT, 8).map_or(64, |b| format::read_u64(b, 0));
        let sums = Algorithms {
            checksum: peek(fb::Header::VT_CHECKSUM_ALGORITHM, 1)
                .map_or(fb::ChecksumAlgorithm::None, |b| fb::ChecksumAlgorithm(b[0])),
            digest: peek(fb::Header::VT_DIGEST_ALGORITHM, 1)
                .map_or(fb::DigestAlgorithm::None, |b| fb::DigestAlgorithm(b[0])),
        };
        let mut fused = semantics::Fused::new(
            semantics::Checks::new(
                data_end,
                flags,
                alignment,
                sums,
                header_bytes.len() / 64,
                true,
            ),
            header_bytes,
        );
        let mut cursor = structure::Cursor::new(header_bytes, &opts);
        let header = crate::generated::verifier::verify_root(&mut cursor, &mut fused)
            .map_err(Failure::Structure)?;
        // The walk passed, so it saw the header table: its fields.
        let Some(&fields) = fused.header() else {
            return Err(Failure::Unexpected("the walk gave no header fields"));
        };
        if fields.alignment != alignment
            || fields.checksum_algorithm != sums.checksum.0
            || fields.digest_algorithm != sums.digest.0
        {
            // The peek reads the bytes the walk read.
            return Err(Failure::Unexpected(
                "the header's scalars differ from the peek",
            ));
        }
        let names = match fused.finish(&fields, flags) {
            // The fused pass only finds an overlap; the reference names it.
            Err(Error::BuffersOverlap { .. }) => return Err(Failure::Overlap),
            other => other?,
        };
        Ok(Reader {
            data: FileData::Resident(bytes),
            header,
            version,
            names: Names::Owned(names),
            tensors: fields.tensors,
            alignment: fields.alignment,
            sums,
        })
    }

    /// The reference verifier: the generic FlatBuffers verifier, then the
    /// semantic checks. [`Reader::verify`] runs it for the error once the
    /// generated verifier failed; the differential tests compare the two.
    pub(crate) fn verify_reference(
        bytes: &'a [u8],
        header_bytes: &'a [u8],
        data_end: u64,
        version: (u16, u16),
        flags: u64,
    ) -> Result<Self> {
        Reader::check_identifier(header_bytes)?;
        let opts = Reader::verifier_options(header_bytes);
        let header = fb::root_as_header_with_opts(&opts, header_bytes)?;
        let reader = Reader::from_parts(FileData::Resident(bytes), header, version, Names::None);
        reader.check_semantics(data_end, flags)?;
        Ok(reader)
    }

    /// A reader over a file and header already verified together.
    ///
    /// # Safety
    /// `header_bytes` and `bytes` must be exactly what `Reader::verify`
    /// accepted together, with the `version` it was given.
    pub(crate) unsafe fn new_unchecked(
        data: FileData<'a>,
        header_bytes: &'a [u8],
        version: (u16, u16),
    ) -> Self {
        // SAFETY: the caller guarantees these header bytes passed the
        // FlatBuffers verifier (and the semantic checks) in `Reader::verify`.
        let header = unsafe { flatbuffers::root_unchecked::<fb::Header<'a>>(header_bytes) };
        Reader::from_parts(data, header, version, Names::None)
    }

    fn from_parts(
        data: FileData<'a>,
        header: fb::Header<'a>,
        version: (u16, u16),
        names: Names<'a>,
    ) -> Self {
        Reader {
            data,
            header,
            version,
            names,
            tensors: header.tensors(),
            alignment: header.alignment(),
            sums: Algorithms::of(&header),
        }
    }

    /// The header's bytes: the buffer its table is read from (a reader
    /// keeps no second copy of the slice, which would take it past the
    /// size the compiler copies without a call).
    #[inline]
    fn header_bytes(&self) -> &'a [u8] {
        self.header._tab.buf()
    }

    /// The index of names this reader built while verifying, for its
    /// owner to keep ([`Reader::with_names`]).
    pub(crate) fn into_names(self) -> Option<NameTable> {
        self.names.owned()
    }

    /// This reader with the index of names its owner kept.
    pub(crate) fn with_names(self, names: Option<&'a NameTable>) -> Self {
        Reader {
            names: names.map_or(Names::None, Names::Borrowed),
            ..self
        }
    }

    pub(crate) fn header(&self) -> fb::Header<'a> {
        self.header
    }

    /// Checks what opening leaves for later: the index contents of every
    /// sparse tensor (ADR-0003). Returns every problem found; empty when the
    /// whole file is valid. This is what `hurray validate` runs.
    pub fn check_sparse_indices(&self) -> Vec<Error> {
        self.tensors()
            .filter_map(|t| t.check_sparse_index().err())
            .collect()
    }

    /// Whether the file is the index of a sharded checkpoint (format 1.3),
    /// to open with [`ShardedFile`](crate::ShardedFile): it holds no
    /// tensors of its own.
    pub fn is_shard_index(&self) -> bool {
        self.header.shard_index().is_some()
    }

    /// The format version of the file (major, minor).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Default buffer alignment of the file.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.map_or(0, |t| t.len())
    }

    /// Whether the file holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All tensors in file order (sorted by name).
    pub fn tensors(&self) -> Tensors<'a> {
        Tensors {
            data: self.data,
            inner: self.tensors,
            file_alignment: self.alignment,
            sums: self.sums,
            next: 0,
        }
    }

    /// The tensor named `name`: through the index of names built while
    /// verifying, or the file's own hash index (O(1) expected), else by
    /// binary search (O(log n)).
    #[inline]
    pub fn get(&self, name: &str) -> Option<TensorRef<'a>> {
        // Inlined into the caller, so that the tensor it returns is built in
        // registers rather than returned through memory and read back.
        let tensors = self.tensors?;
        if let Some(table) = self.names.table() {
            match table.find(name, self.header_bytes()) {
                names::Found::At(i, e) => {
                    return Some(TensorRef::with_facts(
                        self.data.of(i),
                        tensors.get(i),
                        e.element_type,
                        e.alignment,
                        self.alignment,
                        self.sums,
                        e.first_is_values.then_some(e.first),
                    ));
                }
                names::Found::Absent => return None,
                names::Found::Unknown => {}
            }
        }
        let (i, t) = self.get_without_table(name)?;
        Some(TensorRef::new(
            self.data.of(i),
            t,
            self.alignment,
            self.sums,
        ))
    }

    /// [`get`](Self::get) when the reader's index of names does not know:
    /// the file's own hash index if the reader has no index of its own,
    /// else binary search.
    #[inline(never)]
    fn get_without_table(&self, name: &str) -> Option<(usize, fb::Tensor<'a>)> {
        let tensors = self.tensors?;
        if self.names.table().is_none()
            && let Some(index) = self.header.name_index()
        {
            // Verified at open: a power-of-two length and entries <= tensors.len().
            let mask = index.len().wrapping_sub(1);
            let mut slot = format::name_hash(name.as_bytes()) as usize & mask;
            for _ in 0..format::MAX_PROBES.min(index.len()) {
                match index.get(slot) {
                    0 => break,
                    e => {
                        let t = tensors.get(e as usize - 1);
                        if t.name() == name {
                            return Some((e as usize - 1, t));
                        }
                    }
                }
                slot = (slot + 1) & mask;
            }
        }
        // Names are sorted and unique (verified at open).
        let i = first_not_below(tensors, name);
        (i < tensors.len())
            .then(|| tensors.get(i))
            .filter(|t| t.name() == name)
            .map(|t| (i, t))
    }

    /// The place in the file (sorted by name) of tensor `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        if let Some(table) = self.names.table() {
            match table.find(name, self.header_bytes()) {
                names::Found::At(i, _) => return Some(i),
                names::Found::Absent => return None,
                names::Found::Unknown => {}
            }
        }
        self.get_without_table(name).map(|(i, _)| i)
    }

    /// The tensor at place `i`, with its header alone (its data accessors
    /// are [`Error::NotRead`]), for reads through a source.
    pub(crate) fn header_tensor(&self, i: usize) -> TensorRef<'a> {
        self.place(i, tensor::DataBytes::Unread)
    }

    /// The tensor at place `i` (found by [`position`](Self::position)),
    /// with its data as this reader has it.
    pub(crate) fn tensor_at(&self, i: usize) -> TensorRef<'a> {
        self.place(i, self.data.of(i))
    }

    fn place(&self, i: usize, data: tensor::DataBytes<'a>) -> TensorRef<'a> {
        match self.tensors.map(|v| v.get(i)) {
            Some(t) => TensorRef::new(data, t, self.alignment, self.sums),
            None => unreachable!("a place found by `position`"),
        }
    }

    /// Whether any tensor's name starts with `prefix`: O(log n), as names
    /// are sorted (a nested struct's tensors share its `field.` prefix).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        let Some(tensors) = self.header.tensors() else {
            return false;
        };
        // The first name not below `prefix` is the only candidate.
        let i = first_not_below(tensors, prefix);
        i < tensors.len() && tensors.get(i).name().starts_with(prefix)
    }

    /// The tensor named `name`, or [`Error::NotFound`].
    pub fn tensor(&self, name: &str) -> Result<TensorRef<'a>> {
        self.get(name).ok_or_else(|| Error::NotFound {
            name: name.to_owned(),
        })
    }

    /// File-wide metadata, sorted by key.
    pub fn metadata(&self) -> Metadata<'a> {
        Metadata {
            inner: self.header.metadata(),
            next: 0,
        }
    }
}
