//! [`File`]: a verified header over one [`Source`] of the file's bytes.
//!
//! Opening reads the prefix, the footer and the header, and verifies the
//! header once; its cost does not depend on the size of the data. Where the
//! bytes are decides only how a tensor's data is reached: a memory map or
//! bytes in memory are addressable, so views borrow them; any other source
//! (`pread`, an object store) is read one tensor at a time, each into
//! 64-byte aligned memory of its own, once, and views borrow that. Every
//! view, slice, checksum and export then works the same on every source.

use super::fetch::{Fetched, ReadCells, fetch_into, fetch_range};
use super::names::NameTable;
use super::storage::{MapMode, Storage};
use super::tensor::FileData;
use super::{Metadata, Reader, TensorRef, Tensors, locate, locate_parts};
use crate::Layout;
use crate::aligned::AlignedBytes;
use crate::buffer::BufferRole;
use crate::digest::{Digest, DigestAlgorithm, HeaderFacts};
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::format::{FOOTER_LEN, PREFIX_LEN};
use crate::slice::{self, Gathered, SliceData, SliceRange, check_ranges};
use crate::source::{OPEN_SUFFIX, ReadRequest, Source};
use crate::source::{default_threads, in_runs};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A verified Hurray file and the source of its bytes.
#[derive(Debug)]
pub struct File {
    data: Data,
    /// A copy of the header, so that metadata (names, shapes, descriptors)
    /// never reads the data: it survives another process truncating a
    /// mapped file, and costs no request to an object store.
    header: AlignedBytes,
    version: (u16, u16),
    /// The footer's flags.
    flags: u64,
    /// The index of tensor names built while verifying.
    names: Option<NameTable>,
    /// The file's length when it was opened.
    len: u64,
}

/// Where a file's bytes are.
#[derive(Debug)]
enum Data {
    /// Addressable in place: a memory map or memory.
    Resident(Storage),
    /// Behind positioned reads: each tensor's buffers once read, by the
    /// tensor's place in the file.
    Read {
        /// Asserted unwind safe so that a `File` is, as a resident one is
        /// (Arrow asks it of a buffer's owner): a `File` never writes
        /// through its source, and its cells are set whole or not at all.
        source: AssertUnwindSafe<Arc<dyn Source>>,
        read: ReadCells,
        /// Whether exports of the tensors read may be written to
        /// ([`File::open_source_with`]).
        writable: bool,
    },
}

impl File {
    /// Memory-maps and verifies the file at `path`.
    ///
    /// The header is copied out of the map (it is small), so names, shapes,
    /// descriptors and metadata never read the map and survive another
    /// process truncating the file. Data views do read the map: as with
    /// every memory-mapped reader, touching data that a truncation removed
    /// raises SIGBUS, which Rust cannot turn into an error. Where the file
    /// may change underneath, read data with [`File::fetch`] (`pread`),
    /// which reports [`Error::Truncated`] instead. Hurray writers replace
    /// files by rename, never in place.
    ///
    /// The map is shared and read-only; see [`File::open_with`] for a
    /// copy-on-write map whose exports consumers may write to.
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        // SAFETY: a read-only map: no export lets a consumer write to it.
        unsafe { File::open_with(path, MapMode::ReadOnly) }
    }

    /// Memory-maps and verifies the file at `path` as `mode` says: shared and
    /// read-only (as [`File::open`]), or private and copy-on-write, so that
    /// consumers of DLPack exports may write to what they
    /// imported without changing the file.
    ///
    /// # Safety
    /// With [`MapMode::CopyOnWrite`], exports tell their consumers they may
    /// write to this file's bytes. While a consumer writes to a tensor's
    /// bytes, nothing may use a reference to those bytes obtained from this
    /// `File` (`bytes`, `TensorRef::data`, typed views, derived structs):
    /// Rust assumes the memory behind a `&[u8]` does not change. The caller
    /// keeps the two apart (the Python package reads tensor bytes only on an
    /// explicit request, such as `tobytes`, while exports are for the
    /// consumers' own use). [`MapMode::ReadOnly`] asks nothing.
    pub unsafe fn open_with(path: impl AsRef<Path>, mode: MapMode) -> Result<File> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io("reading metadata of", path, e))?;
        if meta.is_dir() {
            // Mapping it would fail with the puzzling "No such device".
            let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
            return Err(Error::io("opening", path, e));
        }
        let len = meta.len();
        if len < PREFIX_LEN + FOOTER_LEN {
            return Err(Error::TooShort {
                len,
                min: PREFIX_LEN + FOOTER_LEN,
            });
        }
        File::from_storage(Storage::map(path, file, mode)?)
    }

    /// Verifies an in-memory file, copying it into 64-byte aligned storage.
    pub fn from_bytes(bytes: &[u8]) -> Result<File> {
        File::from_storage(Storage::Owned(AlignedBytes::copy_from(bytes)))
    }

    /// Verifies an in-memory file already in aligned storage, without a copy.
    pub fn from_aligned(bytes: AlignedBytes) -> Result<File> {
        File::from_storage(Storage::Owned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<File> {
        let bytes = storage.bytes();
        let (range, version, flags) = locate(bytes)?;
        let header = AlignedBytes::copy_from(&bytes[range.clone()]);
        let names = Reader::verify(bytes, header.as_slice(), range.start as u64, version, flags)?
            .into_names();
        Ok(File {
            len: bytes.len() as u64,
            data: Data::Resident(storage),
            header,
            version,
            flags,
            names,
        })
    }

    /// Opens and verifies the file `source` reads, reading only its two
    /// ends: the 64-byte prefix and the last [`OPEN_SUFFIX`] bytes, which
    /// hold the footer and (up to `OPEN_SUFFIX - 32` bytes) the header. Only
    /// a larger header costs one more read. The header is verified as
    /// [`File::open`] verifies it (every check that needs no data), so
    /// nothing is read later that the header does not place inside the file.
    ///
    /// Exports of its tensors carry DLPack's read-only flag; see
    /// [`File::open_source_with`] for exports consumers may write to.
    pub fn open_source(source: Arc<dyn Source>) -> Result<File> {
        // SAFETY: read-only: no export lets a consumer write.
        unsafe { File::open_source_with(source, MapMode::ReadOnly) }
    }

    /// [`File::open_source`], with exports as `mode` says: read-only, or
    /// ([`MapMode::CopyOnWrite`]) writable, as over a private map. A
    /// tensor read through a source is in memory of this process, so a
    /// consumer's write changes that memory alone, never the source; a
    /// later use of the tensor through this `File` sees the write, as it
    /// would over a private map. Consumers then take the tensors as they
    /// are, where a read-only export would have them copied first (PyTorch
    /// ignores the read-only flag, so the Python package copies).
    ///
    /// # Safety
    /// As [`File::open_with`]'s: with [`MapMode::CopyOnWrite`], while a
    /// consumer writes to a tensor's bytes, nothing may use a reference to
    /// those bytes obtained from this `File`. [`MapMode::ReadOnly`] asks
    /// nothing.
    pub unsafe fn open_source_with(source: Arc<dyn Source>, mode: MapMode) -> Result<File> {
        let io = |e| Error::io("reading", source.location(), e);
        let ends = source.read_ends(PREFIX_LEN, OPEN_SUFFIX).map_err(io)?;
        let min = PREFIX_LEN + FOOTER_LEN;
        let footer = match ends.suffix_range(ends.len.saturating_sub(FOOTER_LEN)..ends.len) {
            Some(footer) if ends.len >= min => footer,
            _ => return Err(Error::TooShort { len: ends.len, min }),
        };
        let (range, version, flags) = locate_parts(&ends.prefix, footer, ends.len)?;
        let header = match ends.suffix_range(range.clone()) {
            Some(header) => AlignedBytes::copy_from(header),
            None => {
                // A header longer than the suffix read: its start is read
                // now, its end is the suffix. Its bytes are in the object
                // (the footer places it inside the length the source gave).
                let length = range.end - range.start;
                let mut header = AlignedBytes::for_buffer(length, "", "header")?;
                let suffix_start = ends.len - ends.suffix.len() as u64;
                let (start, end) = header
                    .as_mut_slice()
                    .split_at_mut((suffix_start - range.start) as usize);
                // The footer is in the suffix, so the header's end is too.
                match ends.suffix_range(suffix_start..range.end) {
                    Some(known) if known.len() == end.len() => end.copy_from_slice(known),
                    _ => {
                        let e =
                            std::io::Error::other("the source's suffix does not end the object");
                        return Err(io(e));
                    }
                }
                let mut request = [ReadRequest {
                    offset: range.start,
                    buf: start,
                }];
                source.read_many(&mut request).map_err(io)?;
                header
            }
        };
        // No file bytes: the checks need only where the data region ends.
        let verified = Reader::verify(&[], header.as_slice(), range.start, version, flags)?;
        let read = (0..verified.len()).map(|_| OnceLock::new()).collect();
        let names = verified.into_names();
        Ok(File {
            data: Data::Read {
                source: AssertUnwindSafe(source),
                read,
                writable: mode == MapMode::CopyOnWrite,
            },
            header,
            version,
            flags,
            names,
            len: ends.len,
        })
    }

    /// The source of the file's bytes: the map or memory it is in, or the
    /// source it was opened from.
    pub fn source(&self) -> &dyn Source {
        match &self.data {
            Data::Resident(storage) => storage,
            Data::Read { source, .. } => source.0.as_ref(),
        }
    }

    /// Where the file is (a path, a URL, or "memory").
    pub fn location(&self) -> &str {
        self.source().location()
    }

    /// The file's length in bytes when it was opened.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The whole file, when it is addressable in place (mapped or in
    /// memory); `None` for a file read through a source.
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.data {
            Data::Resident(storage) => Some(storage.bytes()),
            Data::Read { .. } => None,
        }
    }

    /// Whether consumers of an export may write to this file's bytes: true
    /// for a copy-on-write map ([`MapMode::CopyOnWrite`]) and for a file
    /// read through a source opened so ([`File::open_source_with`]), where
    /// writes stay in this process.
    pub fn is_writable(&self) -> bool {
        match &self.data {
            Data::Resident(storage) => matches!(storage, Storage::CopyOnWrite(..)),
            Data::Read { writable, .. } => *writable,
        }
    }

    /// A pointer to `data` (bytes of tensor `t` of this file) that a
    /// consumer may write through, where [`is_writable`](Self::is_writable).
    pub(crate) fn writable_ptr(
        &self,
        t: &TensorRef<'_>,
        data: &[u8],
    ) -> Option<std::ptr::NonNull<u8>> {
        match &self.data {
            Data::Resident(storage) => storage.writable_ptr(data),
            Data::Read { writable, .. } => t.fetched_ptr(data).filter(|_| *writable),
        }
    }

    /// The verified reader over this file. Over a file read through a
    /// source, its tensors have data once read ([`File::tensor`],
    /// [`File::read`]); before, their data accessors are
    /// [`Error::NotRead`].
    pub fn reader(&self) -> Reader<'_> {
        let data = match &self.data {
            Data::Resident(storage) => FileData::Resident(storage.bytes()),
            Data::Read { read, .. } => FileData::Read(read),
        };
        // SAFETY: opening ran `Reader::verify` (the full verifier) on this
        // header copy with these same file bytes (none, for a file read
        // through a source, whose reads `fetch` bounds by the verified
        // ranges), and this version; none changes for the life of `self`.
        let reader = unsafe { Reader::new_unchecked(data, self.header.as_slice(), self.version) };
        reader.with_names(self.names.as_ref())
    }

    /// A second handle to the open file this one maps (`None` for a file
    /// in memory or read through a source): it pins the file, so its
    /// identity (device and inode) can be compared with what a path names
    /// later.
    pub(crate) fn handle(&self) -> Option<std::fs::File> {
        match &self.data {
            Data::Resident(storage) => storage.file().and_then(|fs| fs.try_clone().ok()),
            Data::Read { .. } => None,
        }
    }

    /// The tensor named `name` without reading anything: O(1) expected
    /// through the name index, O(log n) at worst. Of a file read through a
    /// source, a tensor not read yet has no data ([`Error::NotRead`]);
    /// [`tensor`](Self::tensor) reads it.
    pub fn get(&self, name: &str) -> Option<TensorRef<'_>> {
        self.reader().get(name)
    }

    /// The tensor named `name` with its data, or [`Error::NotFound`]. Of a
    /// file read through a source, the first call reads the tensor's
    /// buffers (one request when they are neighbours) and keeps them.
    pub fn tensor(&self, name: &str) -> Result<TensorRef<'_>> {
        let reader = self.reader();
        if let Data::Read { .. } = &self.data {
            let i = reader.position(name).ok_or_else(|| Error::NotFound {
                name: name.to_owned(),
            })?;
            self.read_places(&[i])?;
            // The reader's view of the cells is the same after the read.
            return Ok(reader.tensor_at(i));
        }
        reader.tensor(name)
    }

    /// All tensors in file order (sorted by name), without reading: of a
    /// file read through a source, those not read yet have no data
    /// ([`File::read`] reads many in one batch).
    pub fn tensors(&self) -> Tensors<'_> {
        self.reader().tensors()
    }

    /// Reads the tensors named in `names` in: of a file read through a
    /// source, those not read yet are read now in one batch the source
    /// coalesces and runs concurrently, and kept, so using them waits for
    /// nothing; of a mapped file, the pages not in memory yet are read in
    /// and mapped by several threads in the file's order, and the call
    /// returns when they are in (pages already in memory are mapped as they
    /// are first touched; why: `reader/storage.rs`). Nothing for a file in
    /// memory.
    pub fn read(&self, names: &[&str]) -> Result<()> {
        let reader = self.reader();
        let places = names
            .iter()
            .map(|name| {
                reader.position(name).ok_or_else(|| Error::NotFound {
                    name: (*name).to_owned(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.read_places(&places)
    }

    /// Reads every tensor in ([`read`](Self::read) of all names); of a
    /// mapped file, every page of the file.
    pub fn read_all(&self) -> Result<()> {
        match &self.data {
            Data::Resident(storage) => {
                storage.read_in(std::slice::from_ref(&(0..self.len as usize)))
            }
            Data::Read { .. } => self.read_places(&(0..self.len()).collect::<Vec<_>>()),
        }
    }

    /// Reads the tensors at `places` (in the file's order) not read yet, in
    /// one batch, and keeps them; of a map, starts reading their buffers' pages in.
    fn read_places(&self, places: &[usize]) -> Result<()> {
        let reader = self.reader();
        let (source, read) = match &self.data {
            Data::Read { source, read, .. } => (source, read),
            Data::Resident(storage) => {
                let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
                for &i in places {
                    let t = reader.header_tensor(i);
                    let spans = t.data_ranges();
                    ranges.extend(spans.map(|(at, len)| at as usize..(at + len) as usize));
                }
                ranges.sort_unstable_by_key(|r| r.start);
                return storage.read_in(&ranges);
            }
        };
        let mut wanted: Vec<usize> = places
            .iter()
            .copied()
            .filter(|&i| read[i].get().is_none())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let tensors: Vec<TensorRef<'_>> = wanted.iter().map(|&i| reader.header_tensor(i)).collect();
        let fetched = fetch_into(source.0.as_ref(), &tensors)?;
        for (i, buffers) in wanted.into_iter().zip(fetched) {
            // Another thread may have read it meanwhile: same bytes.
            let _ = read[i].set(buffers.into_boxed_slice());
        }
        Ok(())
    }

    /// Runs `f` on `t` (a tensor of this file) with its data: in place when
    /// it is at hand, else fetched for the call and dropped after it, so a
    /// walk over a file read through a source holds one tensor at a time.
    pub fn with_data<R>(
        &self,
        t: TensorRef<'_>,
        f: impl FnOnce(TensorRef<'_>) -> Result<R>,
    ) -> Result<R> {
        if t.is_read() {
            return f(t);
        }
        f(self.fetch(t.name())?.tensor())
    }

    /// Reads tensor `name` into memory of its own (64-byte aligned, one
    /// allocation per buffer) through the file's source, kept by nobody
    /// but the caller: positioned reads (`pread`) for a mapped file, so a
    /// file truncated since it was opened is [`Error::Truncated`], never a
    /// fault; range requests for an object.
    pub fn fetch(&self, name: &str) -> Result<Fetched<'_>> {
        let mut fetched = self.fetch_many(&[name])?;
        Ok(fetched.remove(0))
    }

    /// [`fetch`](Self::fetch) of every tensor named in `names`, in one
    /// batch the source coalesces and runs concurrently (on several threads
    /// for a local file).
    pub fn fetch_many(&self, names: &[&str]) -> Result<Vec<Fetched<'_>>> {
        let header = self.header_reader();
        let tensors = names
            .iter()
            .map(|name| header.tensor(name))
            .collect::<Result<Vec<_>>>()?;
        let buffers = fetch_into(self.source(), &tensors)?;
        Ok(tensors
            .into_iter()
            .zip(buffers)
            .map(|(t, b)| Fetched::new(t, b))
            .collect())
    }

    /// [`fetch`](Self::fetch) of every tensor, in one batch.
    pub fn fetch_all(&self) -> Result<Vec<Fetched<'_>>> {
        let names: Vec<&str> = self.tensors().map(|t| t.name()).collect();
        self.fetch_many(&names)
    }

    /// A copy of the buffer of `role` of tensor `name` in 64-byte aligned
    /// memory, read through the file's source as [`fetch`](Self::fetch)
    /// reads (that buffer alone).
    pub fn read_buffer(&self, name: &str, role: BufferRole) -> Result<AlignedBytes> {
        let t = self.header_reader().tensor(name)?;
        let Some((offset, length)) = t.buffer_range(role) else {
            return Err(Error::NoBuffer {
                tensor: name.to_owned(),
                buffer: role.name(),
            });
        };
        self.read_range(name, role, offset, length)
    }

    /// `length` bytes at `offset`, inside buffer `role` of tensor `name` as
    /// its verified header places them, read through the source.
    pub(crate) fn read_range(
        &self,
        name: &str,
        role: BufferRole,
        offset: u64,
        length: u64,
    ) -> Result<AlignedBytes> {
        fetch_range(self.source(), name, role.name(), offset, length)
    }

    /// The header alone, whatever the source: tensors whose data is never
    /// at hand, for reads that go through the source.
    fn header_reader(&self) -> Reader<'_> {
        // SAFETY: as in `reader`: this header was verified at open. No data
        // is claimed: `FileData::Read` over no cells gives every tensor
        // `Unread`, which every data accessor refuses.
        let reader = unsafe {
            Reader::new_unchecked(FileData::Read(&[]), self.header.as_slice(), self.version)
        };
        reader.with_names(self.names.as_ref())
    }

    /// The format version (major, minor).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// The file's identity (format 1.5), when its writer gave it one (its
    /// length was checked on open).
    pub fn file_id(&self) -> Option<FileId> {
        self.reader()
            .header()
            .file_id()
            .and_then(|id| FileId::from_slice(id.bytes()))
    }

    /// The algorithm of the file's digests (format 1.4): `Ok(None)` when
    /// it has none, [`Error::InvalidField`] for one this build does not
    /// know.
    pub fn digest_algorithm(&self) -> Result<Option<DigestAlgorithm>> {
        let wire = self.reader().header().digest_algorithm();
        DigestAlgorithm::from_wire(wire).map_err(|value| Error::InvalidField {
            tensor: String::new(),
            field: "digest_algorithm".into(),
            value: value.to_string(),
            reason: "a digest algorithm this reader does not know".into(),
        })
    }

    /// The file's header digest with `algorithm` (docs/spec/signatures.md):
    /// over every byte outside the data region that a reader interprets.
    /// With the file's digests, which the header records, it commits to
    /// the whole file; computed from the header this `File` holds, so it
    /// reads nothing.
    pub fn header_digest(&self, algorithm: DigestAlgorithm) -> Digest {
        let header = self.header.as_slice();
        crate::digest::header_digest(
            algorithm,
            HeaderFacts {
                version: self.version,
                header_offset: self.len - FOOTER_LEN - header.len() as u64,
                flags: self.flags,
                file_len: self.len,
                header,
            },
        )
    }

    /// File-wide metadata, sorted by key.
    pub fn metadata(&self) -> Metadata<'_> {
        self.reader().metadata()
    }

    /// Whether the file is the index of a sharded checkpoint (format 1.3),
    /// to open with [`ShardedFile`](crate::ShardedFile).
    pub fn is_shard_index(&self) -> bool {
        self.reader().is_shard_index()
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.reader().len()
    }

    /// Whether the file holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// Slices (`crate::slice`).
impl File {
    /// Reads `name[ranges]` as [`TensorRef::read_slice`] does. Of a file
    /// read through a source whose tensor is not read yet, only the span
    /// of the values buffer the slice covers is read, in one request: one
    /// row of a matrix costs that row's bytes.
    pub fn read_slice(&self, name: &str, ranges: &[SliceRange]) -> Result<SliceData> {
        let t = self.get(name).ok_or_else(|| Error::NotFound {
            name: name.to_owned(),
        })?;
        if t.is_read() || t.is_descriptor_only() {
            return t.read_slice(ranges);
        }
        t.check_sliceable()?;
        let shape = check_ranges(name, ranges, &t.shape().to_wire())?;
        let mut out = Gathered::new(name, t.element_type(), shape)?;
        let bits = u64::from(t.element_type().bits());
        let (offset, length) = t.buffer_range(BufferRole::Values).unwrap_or((0, 0));
        let stored = length * 8 / bits;
        let Some((first, last)) = slice::element_span(&t.element_strides(), ranges, stored) else {
            // Nothing to read, or a slice the whole buffer's gather refuses.
            return match ranges.iter().any(SliceRange::is_empty) {
                true => Ok(out.finish()),
                false => self.tensor(name)?.read_slice(ranges),
            };
        };
        // Start at an element that starts a byte (packed sub-byte types).
        let base = slice::byte_boundary_at_or_below(first, bits);
        let start = base * bits / 8;
        let end = ((last + 1) * bits).div_ceil(8).min(length);
        let window = self.read_range(name, BufferRole::Values, offset + start, end - start)?;
        let at = vec![0; ranges.len()];
        slice::gather(&t.stored(window.as_slice(), base), ranges, &mut out, &at)?;
        Ok(out.finish())
    }
}

// Validation: the checks opening leaves for later (sparse indices,
// per-buffer checksums), streamed tensor by tensor on any source.

/// What [`File::validate`] found.
#[derive(Debug, Default)]
pub struct Validation {
    /// Every problem, in file order (tensors sorted by name).
    pub problems: Vec<Error>,
    /// How many tensors matched the checksums the header records, when
    /// checksums were asked for; `Some(0)` for a file that records none.
    pub checksummed: Option<usize>,
}

impl Validation {
    /// Whether nothing was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl File {
    /// Checks what opening leaves for later, tensor by tensor: the index
    /// contents of every sparse tensor (ADR-0003) and, with `checksums`,
    /// every buffer against the checksum the header records (ADR-0009).
    /// A tensor of a file read through a source that is not read yet is
    /// fetched for a check that reads it and dropped after it, so memory
    /// stays one tensor's bytes: `hurray validate` of a URL streams.
    pub fn validate(&self, checksums: bool) -> Validation {
        self.validate_reporting(checksums, |_| {})
    }

    /// [`validate`](Self::validate), calling `progress` with each tensor's
    /// byte length once it is checked (what a front door's progress bar
    /// counts).
    pub fn validate_reporting(&self, checksums: bool, progress: impl Fn(u64)) -> Validation {
        self.check_each_tensor(
            DeferredChecks {
                sparse: true,
                checksums,
            },
            progress,
        )
    }

    /// [`validate`](Self::validate) of the checksums alone: every buffer
    /// against the checksum the header records, every mismatch reported
    /// (where [`verify_checksums`](Self::verify_checksums) stops at the
    /// first).
    pub(crate) fn validate_checksums(&self) -> Validation {
        self.check_each_tensor(
            DeferredChecks {
                sparse: false,
                checksums: true,
            },
            |_| {},
        )
    }

    /// `checks` on every tensor, one after the other.
    fn check_each_tensor(&self, checks: DeferredChecks, progress: impl Fn(u64)) -> Validation {
        let mut report = Validation {
            problems: Vec::new(),
            checksummed: checks.checksums.then_some(0),
        };
        // A tensor none of whose checks reads its bytes is not fetched: a
        // file read through a source costs no more than a mapped one does.
        for t in self.tensors().filter(|t| checks.read_data_of(t)) {
            let bytes = t.byte_length();
            let checked = self.with_data(t, |t| check(t, checks));
            progress(bytes);
            match checked {
                Ok(true) => {
                    if let Some(n) = report.checksummed.as_mut() {
                        *n += 1;
                    }
                }
                Ok(false) => {}
                Err(e) => report.problems.push(e),
            }
        }
        report
    }
}

impl File {
    /// Verifies every tensor's buffers against the checksums the header
    /// records: `true` when at least one tensor records checksums and every
    /// recorded one matches, `false` when the file records none; a mismatch
    /// is [`Error::ChecksumMismatch`] naming the tensor. A file in place (a
    /// map, bytes in memory) is read in first ([`read_all`](Self::read_all)),
    /// then checked in the file's order on several threads, each a
    /// contiguous run of the data; a file read through a source streams as
    /// [`validate`](Self::validate) does.
    pub fn verify_checksums(&self) -> Result<bool> {
        Ok(self.count_verified_checksums()? > 0)
    }

    /// [`verify_checksums`](Self::verify_checksums), counting: how many
    /// tensors matched the checksums they record (what a sharded
    /// checkpoint's report adds up over its members).
    pub(crate) fn count_verified_checksums(&self) -> Result<usize> {
        if self.bytes().is_some() {
            return self.verify_in_place();
        }
        let mut verified = 0;
        for t in self.tensors() {
            verified += usize::from(self.with_data(t, |t| t.verify_checksum())?);
        }
        Ok(verified)
    }

    /// Verifies a file in place (a map, bytes in memory): reads it in (the
    /// pages not in memory yet, on several threads), then checks it in the
    /// file's order on one thread per core, each a contiguous run of the
    /// data.
    ///
    /// Why not check while reading in: measured cold on 1 GiB, checksums
    /// computed by the reading threads as their pieces came in took 0.96 s,
    /// by two threads beside the readers 1.05 s, and reading in first then
    /// checking 0.72 s (the load alone: 0.60 s). On two cores the
    /// checksums' memory reads slow the page-cache fills they overlap.
    fn verify_in_place(&self) -> Result<usize> {
        self.read_all()?;
        let reader = self.reader();
        // (first byte, bytes, tensor) in the file's order.
        let mut order: Vec<(u64, u64, usize)> = (0..self.len())
            .map(|i| {
                let t = reader.header_tensor(i);
                let (start, len) = t.data_ranges().fold((u64::MAX, 0u64), |(s, n), (at, len)| {
                    (s.min(at), n.saturating_add(len))
                });
                (start, len, i)
            })
            .collect();
        order.sort_unstable();
        let verified = AtomicUsize::new(0);
        let size = |o: &(u64, u64, usize)| usize::try_from(o.1).unwrap_or(usize::MAX);
        in_runs(order, size, default_threads(), |(_, _, i)| {
            if reader.tensor_at(i).verify_checksum()? {
                verified.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), Error>(())
        })?;
        Ok(verified.into_inner())
    }
}

/// Which of the checks opening leaves for later to run.
#[derive(Debug, Clone, Copy)]
struct DeferredChecks {
    /// The index contents of sparse tensors.
    sparse: bool,
    /// Every buffer against its recorded checksum.
    checksums: bool,
}

impl DeferredChecks {
    /// Whether a check of `t` reads its bytes: the index contents of a
    /// sparse tensor, the buffers of one that records checksums or digests.
    fn read_data_of(self, t: &TensorRef<'_>) -> bool {
        let sparse = matches!(
            t.layout(),
            Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. }
        );
        let recorded = t.checksums().is_some() || t.records_digests();
        (self.sparse && sparse) || (self.checksums && recorded)
    }
}

/// One tensor's checks; whether its checksums were verified.
fn check(t: TensorRef<'_>, checks: DeferredChecks) -> Result<bool> {
    if checks.sparse {
        t.check_sparse_index()?;
    }
    if checks.checksums {
        return t.verify_checksum();
    }
    Ok(false)
}
