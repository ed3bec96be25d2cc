//! [`RangedFile`]: a Hurray file read through a [`Source`] by positioned
//! reads: a local file by `pread`, an object in S3, GCS, Azure or behind an
//! HTTP URL by range GETs (`hurray-object-store`).
//!
//! Opening asks the source for the file's two ends at once: the 64-byte
//! prefix and the last [`OPEN_SUFFIX`] bytes, which hold the footer and, for
//! a header of up to `OPEN_SUFFIX - 32` bytes, all of it. For an object
//! store that is two range GETs in one round trip; only a larger header
//! costs one more. The header is then verified as [`File::open`] verifies
//! it (every check that needs no data), so after `open` every descriptor
//! and buffer range is trusted, and nothing is read that the header does not
//! place inside the file.
//!
//! A tensor is read by [`RangedFile::fetch`], each buffer into owned,
//! 64-byte aligned memory of its own (one request for a tensor whose
//! buffers are neighbours, as a Hurray writer lays them out: the source
//! coalesces them), and handed out as the same [`TensorRef`] a mapped file
//! gives: typed, sparse, packed and quantized views, slices and checksums
//! all work on it. Memory is the tensor's bytes, wherever the file puts
//! them.
//! [`RangedFile::fetch_many`] reads many tensors in one batch, which the
//! source coalesces and runs concurrently.
//!
//! [`File::open`]: crate::File::open

use crate::aligned::AlignedBytes;
use crate::descriptor::TensorDescriptor;
use crate::error::{Error, Result};
use crate::format::{FOOTER_LEN, PREFIX_LEN};
use crate::reader::{FetchedBuffer, Metadata, Reader, TensorRef, locate_parts};
use crate::source::{PreadSource, ReadRequest, Source};
use std::path::Path;
use std::sync::Arc;

/// How many bytes from the end opening reads with the footer, hoping the
/// header is among them (a header of 1000 tensors is about 150 KiB).
pub const OPEN_SUFFIX: u64 = 256 << 10;

/// A verified Hurray file whose data stays where it is until read.
#[derive(Debug, Clone)]
pub struct RangedFile {
    source: Arc<dyn Source>,
    /// The header, copied out and verified.
    header: AlignedBytes,
    version: (u16, u16),
    /// The file's length when it was opened.
    len: u64,
    /// The index of tensor names built while verifying.
    names: Option<crate::reader::names::NameTable>,
}

impl RangedFile {
    /// Opens and verifies the file `source` reads (see the module docs for
    /// what that reads).
    pub fn open(source: Arc<dyn Source>) -> Result<RangedFile> {
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
        let names =
            Reader::verify(&[], header.as_slice(), range.start, version, flags)?.into_names();
        Ok(RangedFile {
            source,
            header,
            version,
            len: ends.len,
            names,
        })
    }

    /// Opens the local file at `path` for `pread` ([`PreadSource`]).
    pub fn open_path(path: impl AsRef<Path>) -> Result<RangedFile> {
        RangedFile::open(Arc::new(PreadSource::open(path)?))
    }

    /// Where the file is (a path or URL).
    pub fn location(&self) -> &str {
        self.source.location()
    }

    /// The source it reads from.
    pub fn source(&self) -> &Arc<dyn Source> {
        &self.source
    }

    /// The file's length in bytes when it was opened.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The header alone: descriptors, metadata, version. Its tensors have no
    /// data, so it stays private; [`fetch`](Self::fetch) gives them data.
    fn header_reader(&self) -> Reader<'_> {
        // SAFETY: `open` ran `Reader::verify` on this header with no file
        // bytes and this version; neither changes for the life of `self`.
        // No `TensorRef` of this reader reaches a caller without a window
        // holding its buffers (`Fetched::tensor`).
        let reader = unsafe { Reader::new_unchecked(&[], self.header.as_slice(), self.version) };
        reader.with_names(self.names.as_ref())
    }

    /// The format version (major, minor).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Whether the file is the index of a sharded checkpoint.
    pub fn is_shard_index(&self) -> bool {
        self.header_reader().is_shard_index()
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.header_reader().len()
    }

    /// Whether the file holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// File-wide metadata, sorted by key.
    pub fn metadata(&self) -> Metadata<'_> {
        self.header_reader().metadata()
    }

    /// Every tensor's name, in file order (sorted).
    pub fn names(&self) -> Vec<&str> {
        self.header_reader().tensors().map(|t| t.name()).collect()
    }

    /// Every tensor's descriptor, in file order, from the header alone.
    pub fn descriptors(&self) -> Vec<TensorDescriptor> {
        self.header_reader()
            .tensors()
            .map(|t| t.descriptor())
            .collect()
    }

    /// The descriptor of tensor `name`, from the header alone.
    pub fn descriptor(&self, name: &str) -> Result<TensorDescriptor> {
        Ok(self.header_reader().tensor(name)?.descriptor())
    }

    /// Reads tensor `name`: its buffers, in one request when they are
    /// neighbours.
    pub fn fetch(&self, name: &str) -> Result<Fetched<'_>> {
        let mut fetched = self.fetch_many(&[name])?;
        Ok(fetched.remove(0))
    }

    /// Reads every tensor named in `names` in one batch: the source
    /// coalesces neighbours and runs the requests concurrently.
    pub fn fetch_many(&self, names: &[&str]) -> Result<Vec<Fetched<'_>>> {
        let reader = self.header_reader();
        let mut fetched = Vec::with_capacity(names.len());
        for name in names {
            fetched.push(Fetched::allocate(reader.tensor(name)?)?);
        }
        let mut requests: Vec<ReadRequest<'_>> =
            fetched.iter_mut().flat_map(Fetched::requests).collect();
        self.source.read_many(&mut requests).map_err(|e| {
            // The object ended early: it changed since it was opened.
            Error::io("reading", self.location(), e)
        })?;
        Ok(fetched)
    }

    /// Reads the whole file into memory (in pieces the source fetches
    /// concurrently) and verifies it as a [`File`](crate::File): for the
    /// tools that need every byte anyway (`convert`, `validate`). The memory
    /// is the file's length, which opening found to be the object's.
    pub fn fetch_file(&self) -> Result<crate::File> {
        let mut bytes = AlignedBytes::for_buffer(self.len, "", "file")?;
        let mut request = [ReadRequest {
            offset: 0,
            buf: bytes.as_mut_slice(),
        }];
        self.source
            .read_many(&mut request)
            .map_err(|e| Error::io("reading", self.location(), e))?;
        crate::File::from_aligned(bytes)
    }

    /// Reads every tensor of the file in one batch.
    pub fn fetch_all(&self) -> Result<Vec<Fetched<'_>>> {
        self.fetch_many(&self.names())
    }
}

/// A tensor of a [`RangedFile`] read into memory: each of its buffers in
/// 64-byte aligned memory of its own, so that memory is the tensor's bytes
/// however the file lays its buffers out.
pub struct Fetched<'f> {
    /// The tensor with the header alone.
    header: TensorRef<'f>,
    buffers: Vec<FetchedBuffer>,
}

impl std::fmt::Debug for Fetched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("tensor", &self.header)
            .field("bytes", &self.byte_len())
            .finish()
    }
}

impl<'f> Fetched<'f> {
    fn allocate(header: TensorRef<'f>) -> Result<Fetched<'f>> {
        let mut buffers = Vec::new();
        if !header.is_descriptor_only() {
            for role in header.roles() {
                let Some((offset, length)) = header.buffer_range(role) else {
                    continue;
                };
                if length == 0 {
                    continue;
                }
                // Verified at open: inside the file, so bounded by its length.
                let bytes = AlignedBytes::for_buffer(length, header.name(), role.name())?;
                buffers.push(FetchedBuffer { offset, bytes });
            }
        }
        Ok(Fetched { header, buffers })
    }

    /// The reads that fill the buffers, one each (the source coalesces
    /// neighbours, alignment padding between them included).
    fn requests(&mut self) -> impl Iterator<Item = ReadRequest<'_>> {
        self.buffers.iter_mut().map(|b| ReadRequest {
            offset: b.offset,
            buf: b.bytes.as_mut_slice(),
        })
    }

    /// The tensor, with its data.
    pub fn tensor(&self) -> TensorRef<'_> {
        self.header.with_fetched(&self.buffers)
    }

    /// This tensor as a file of its own, in memory, for front doors built
    /// on [`File`](crate::File) (DLPack exports, the Python and C handles).
    /// The bytes are checked against the checksums the source file records
    /// first, so the new file's checksums vouch for what was read. Memory
    /// peaks at twice the tensor: the fetched buffers go once written.
    pub fn into_file(self) -> Result<crate::File> {
        let t = self.tensor();
        t.verify_checksum()?;
        let mut bytes = Vec::with_capacity(self.byte_len() + 4096);
        let mut w = crate::Writer::new(&mut bytes)?;
        if t.checksums().is_none() {
            // As the source: a file without checksums stays without.
            w.set_checksums(None)?;
        }
        let buffers: Vec<&[u8]> = t.buffers().into_iter().map(|(_, b)| b).collect();
        w.add_tensor(&t.descriptor(), &buffers)?;
        w.finish()?;
        drop(self);
        crate::File::from_bytes(&bytes)
    }

    /// The bytes read: the tensor's buffers.
    pub fn byte_len(&self) -> usize {
        self.buffers.iter().map(|b| b.bytes.as_slice().len()).sum()
    }
}
