//! The streaming writer.
//!
//! Data is written once, in order, as it arrives: the prefix, then each
//! tensor's buffers (each non-empty one padded to its alignment), then the
//! header and the footer. Only descriptors are kept in memory. Writing to a
//! path goes through a temporary file in the same directory that is fsynced
//! and renamed over the destination by [`Writer::finish`], so a failed or
//! killed writer never leaves a partial destination file.

use crate::atomic::{AtomicFile, Durability, OutputFile};
use crate::checksum::ChecksumAlgorithm;
use crate::descriptor::TensorDescriptor;
use crate::digest::DigestAlgorithm;
use crate::error::{Error, Result};
use crate::file_id::FileId;
use crate::format::{self, FOOTER_LEN, Footer, MIN_ALIGNMENT};
use crate::generated::fb;
use crate::validate;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

mod block_sizes;
mod header;
mod staging;
mod sums;
mod tensor;

use header::{build_metadata, build_tensor};
use staging::{APPEND_MAX, Staging};
pub use tensor::TensorWriter;

const ZEROS: [u8; 4096] = [0; 4096];
/// Bytes copied before they are checksummed, in memory: small enough to
/// stay in the cache between the copy and the checksum (ADR-0009). A stream
/// takes pieces that complete its blocks instead ([`Writer::piece`]).
const CHECKSUM_PIECE: usize = 1 << 20;
/// Packed bytes computed before they are checksummed: 48 KiB, a whole
/// number of bytes for every width, fits the first-level cache's
/// neighbourhood (measured better than 128 KiB and 1 MiB on a 4-bit
/// lowering). At most [`APPEND_MAX`].
const PACK_PIECE: usize = 48 << 10;
const _: () = assert!(PACK_PIECE <= APPEND_MAX && PACK_PIECE.is_multiple_of(3));

/// A tensor already written, waiting for the header.
#[derive(Debug)]
struct Written {
    desc: TensorDescriptor,
    /// (offset, length) of each buffer: layout buffers, then scales, zero
    /// points and offsets.
    buffers: Vec<(u64, u64)>,
    /// The checksum and digest of each buffer (each list empty when the
    /// file has none).
    sums: sums::Sums,
}

/// Where a finished stream goes.
#[derive(Debug)]
enum Sink {
    /// A temporary file put in place by `finish`.
    Atomic(AtomicFile),
    /// A stream into the file at this path, which its owner puts in place.
    File(std::path::PathBuf),
    Stream,
}

impl Sink {
    /// A write error, naming the file being written where there is one
    /// (its destination: the temporary name means nothing to a user).
    fn error(&self, e: std::io::Error) -> Error {
        match self {
            Sink::Atomic(file) => Error::io("writing", file.destination(), e),
            Sink::File(path) => Error::io("writing", path, e),
            Sink::Stream => Error::Stream(e),
        }
    }
}

/// What [`Writer::finish_parts`] hands back.
#[derive(Debug)]
pub(crate) struct Finished<W> {
    /// The file's length.
    pub(crate) len: u64,
    /// Its header digest, when it has digests.
    pub(crate) header_digest: Option<crate::digest::Digest>,
    /// What the writer wrote to.
    pub(crate) out: W,
}

/// Writes a Hurray file tensor by tensor, to any `Write`.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: Staging<W>,
    sink: Sink,
    pos: u64,
    alignment: u64,
    written: Vec<Written>,
    names: BTreeSet<String>,
    metadata: BTreeMap<String, String>,
    poisoned: Option<String>,
    /// Per-buffer checksums (format 1.2; CRC-32C unless turned off) and
    /// digests (format 1.4; none unless asked for).
    wanted: sums::SumsWanted,
    /// The index of a sharded checkpoint, for an index file (format 1.3).
    shard_index: Option<crate::shard_index::ShardIndex>,
    /// The file's identity (format 1.5), when it has one.
    file_id: Option<FileId>,
}

impl Writer<OutputFile> {
    /// Writes to `path` atomically: nothing appears at `path` until
    /// [`finish`](Writer::finish) succeeds.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Writer::create_with(path, Durability::Synced)
    }

    /// [`create`](Writer::create), committed as `durability` says: with
    /// [`Durability::RenameOnly`] still atomic for every reader, but not
    /// flushed to the disk.
    pub fn create_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self> {
        let atomic = AtomicFile::create_with(path, durability)?;
        let file = atomic.output()?;
        let mut w = Writer::new_inner(Staging::stream(file), Sink::Atomic(atomic))?;
        w.write_prefix()?;
        Ok(w)
    }
}

impl<'v> Writer<&'v mut Vec<u8>> {
    /// Appends the file to `out`, writing straight into its memory: no byte
    /// passes through a staging buffer first, which [`Writer::new`] on the
    /// same vector would do.
    pub fn in_memory(out: &'v mut Vec<u8>) -> Result<Self> {
        let staging = Staging::in_place(out, |v| &mut **v);
        let mut w = Writer::new_inner(staging, Sink::Stream)?;
        w.write_prefix()?;
        Ok(w)
    }
}

impl<W: Write> Writer<W> {
    /// Writes to `out` (a file, a socket, a `Vec<u8>` ...). No seeking is needed.
    pub fn new(out: W) -> Result<Self> {
        let mut w = Writer::new_inner(Staging::stream(out), Sink::Stream)?;
        w.write_prefix()?;
        Ok(w)
    }

    /// [`new`](Self::new), for `out` that becomes the file at `path` (an
    /// [`AtomicFile`] its caller commits, an upload to an object store):
    /// write errors name `path`.
    pub fn to_file_at(out: W, path: &Path) -> Result<Self> {
        let mut w = Writer::new_inner(Staging::stream(out), Sink::File(path.to_owned()))?;
        w.write_prefix()?;
        Ok(w)
    }

    fn new_inner(out: Staging<W>, sink: Sink) -> Result<Self> {
        Ok(Writer {
            out,
            sink,
            pos: 0,
            alignment: MIN_ALIGNMENT,
            written: Vec::new(),
            names: BTreeSet::new(),
            metadata: BTreeMap::new(),
            poisoned: None,
            wanted: sums::SumsWanted {
                checksum: Some(ChecksumAlgorithm::Crc32c),
                digest: None,
            },
            shard_index: None,
            file_id: None,
        })
    }

    fn write_prefix(&mut self) -> Result<()> {
        self.raw_write(&format::prefix())
    }

    /// Sets the file's default buffer alignment (a power of two, 64 to 2^30).
    /// Must be called before the first tensor: tensors that do not set their
    /// own alignment take the file's, which readers check.
    pub fn set_alignment(&mut self, alignment: u64) -> Result<()> {
        if !self.written.is_empty() {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "file alignment".into(),
                value: alignment.to_string(),
                reason: "set the file alignment before writing the first tensor".into(),
            });
        }
        self.alignment = validate::file_alignment(alignment)?;
        Ok(())
    }

    /// Sets how buffers are checksummed (CRC-32C by default), or turns
    /// checksums off with `None`. Must be called before the first tensor:
    /// a file's tensors all have checksums or none has.
    pub fn set_checksums(&mut self, algorithm: Option<ChecksumAlgorithm>) -> Result<()> {
        if !self.written.is_empty() {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "checksum_algorithm".into(),
                value: algorithm.map_or("none", ChecksumAlgorithm::name).into(),
                reason: "set the checksums before writing the first tensor".into(),
            });
        }
        self.wanted.checksum = algorithm;
        Ok(())
    }

    /// Sets how buffers are digested (none by default), as
    /// [`set_checksums`](Self::set_checksums) sets their checksums: before
    /// the first tensor. With digests the header commits to every byte of
    /// the data, so a signature over the header covers the whole file
    /// (ADR-0012); a sharded checkpoint's index then records each member's
    /// header digest.
    pub fn set_digests(&mut self, algorithm: Option<DigestAlgorithm>) -> Result<()> {
        if !self.written.is_empty() {
            return Err(Error::InvalidField {
                tensor: String::new(),
                field: "digest_algorithm".into(),
                value: algorithm.map_or("none", DigestAlgorithm::name).into(),
                reason: "set the digests before writing the first tensor".into(),
            });
        }
        self.wanted.digest = algorithm;
        Ok(())
    }

    /// Gives the file an identity (format 1.5; none by default): what a
    /// sharded checkpoint's index records of a member, so that another file
    /// put at the member's path is refused. A member's writer draws one
    /// with [`FileId::random`].
    pub fn set_file_id(&mut self, id: Option<FileId>) {
        self.file_id = id;
    }

    /// Adds a file-wide metadata entry.
    pub fn set_metadata(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.metadata.insert(key.into(), value.into());
    }

    fn check_alive(&self) -> Result<()> {
        match &self.poisoned {
            Some(reason) => Err(Error::WriterPoisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn raw_write(&mut self, bytes: &[u8]) -> Result<()> {
        self.check_alive()?;
        if let Err(e) = self.out.write_all(bytes) {
            self.poisoned = Some(e.to_string());
            return Err(self.sink.error(e));
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// The most bytes of data to hand over (and checksum) next: what
    /// completes the output's current write, so the data is written from
    /// the caller's memory (at most 2 MiB, within the cache for the
    /// checksum that follows); in memory, [`CHECKSUM_PIECE`].
    fn piece(&mut self) -> usize {
        self.out.room().unwrap_or(CHECKSUM_PIECE)
    }

    /// The vector to append at most `max` computed bytes to (see
    /// [`Staging::appender`]); the caller counts them into `pos`.
    fn appender(&mut self, max: usize) -> Result<&mut Vec<u8>> {
        self.check_alive()?;
        match self.out.appender(max) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.poisoned = Some(e.to_string());
                Err(self.sink.error(e))
            }
        }
    }

    fn pad_to(&mut self, alignment: u64) -> Result<()> {
        let target = format::align_up(self.pos, alignment).ok_or(Error::SizeOverflow {
            tensor: String::new(),
            field: "file offset",
        })?;
        while self.pos < target {
            let n = (target - self.pos).min(ZEROS.len() as u64) as usize;
            self.raw_write(&ZEROS[..n])?;
        }
        Ok(())
    }

    /// Checks `desc` and starts a tensor whose bytes are then streamed with
    /// [`TensorWriter::write_all`] in buffer order (layout buffers, then scales
    /// and zero points); see [`TensorDescriptor::buffer_plan`]. Nothing is
    /// written when the descriptor is invalid, and the writer stays usable.
    pub fn begin_tensor(&mut self, desc: &TensorDescriptor) -> Result<TensorWriter<'_, W>> {
        self.check_start(desc)?;
        let plan = desc.buffer_plan()?.buffers();
        Ok(self.start_planned(desc, plan))
    }

    /// What the writer checks of a tensor beyond its descriptor's plan:
    /// the writer still usable, a name that is not empty and not taken,
    /// and a valid alignment.
    fn check_start(&self, desc: &TensorDescriptor) -> Result<()> {
        self.check_alive()?;
        validate::tensor_name(self.written.len(), &desc.name)?;
        if self.names.contains(&desc.name) {
            return Err(Error::DuplicateName {
                name: desc.name.clone(),
            });
        }
        if let Some(a) = desc.alignment {
            // 0 asks for the file's alignment, as it does when read.
            validate::tensor_alignment(&desc.name, a, self.alignment)?;
        }
        Ok(())
    }

    /// Starts a tensor [`check_start`](Self::check_start) accepted, whose
    /// buffers (role and length, in wire order) are `plan`.
    fn start_planned(
        &mut self,
        desc: &TensorDescriptor,
        plan: Vec<(crate::buffer::BufferRole, u64)>,
    ) -> TensorWriter<'_, W> {
        let (roles, lengths) = plan.into_iter().unzip();
        self.names.insert(desc.name.clone());
        TensorWriter {
            alignment: desc.alignment.unwrap_or(0).max(self.alignment),
            wanted: self.wanted,
            writer: self,
            desc: desc.clone(),
            lengths,
            roles,
            buffers: Vec::new(),
            remaining: None,
            running: None,
            sums: sums::Sums::default(),
        }
    }

    /// Writes a whole tensor: `buffers` holds the bytes of every buffer the
    /// descriptor needs, in buffer order (none for a descriptor-only tensor).
    pub fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()> {
        let expected = desc.buffer_plan()?.buffers();
        let wanted = if desc.descriptor_only {
            0
        } else {
            expected.len()
        };
        let given = if desc.descriptor_only {
            // A descriptor-only tensor has nothing to write; accept empty slices.
            buffers.iter().filter(|b| !b.is_empty()).count()
        } else {
            buffers.len()
        };
        if given != wanted {
            return Err(Error::WriteMismatch {
                tensor: desc.name.clone(),
                reason: format!(
                    "the descriptor needs {wanted} buffer(s) ({:?}), {given} given",
                    expected.iter().map(|e| e.0.name()).collect::<Vec<_>>()
                ),
            });
        }
        for ((role, len), b) in expected.iter().zip(buffers) {
            if *len != b.len() as u64 && !desc.descriptor_only {
                return Err(Error::BufferLength {
                    tensor: desc.name.clone(),
                    buffer: role.name(),
                    expected: *len,
                    found: b.len() as u64,
                });
            }
        }
        self.check_start(desc)?;
        let mut t = self.start_planned(desc, expected);
        for b in buffers {
            t.write_all(b)?;
        }
        t.finish()
    }

    /// Bytes written so far (the prefix and every tensor's, padding included).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Makes this file the index of a sharded checkpoint (format 1.3): its
    /// header carries `index` and it holds no tensors of its own.
    pub(crate) fn set_shard_index(&mut self, index: crate::shard_index::ShardIndex) {
        self.shard_index = Some(index);
    }

    /// Writes the header and footer, flushes, and (for [`Writer::create`])
    /// fsyncs and renames the file into place. Returns the file length.
    pub fn finish(self) -> Result<u64> {
        self.finish_into_inner().map(|(len, _)| len)
    }

    /// [`finish`](Self::finish), handing back the sink as well: the file
    /// length and the `W` the writer wrote to.
    pub fn finish_into_inner(self) -> Result<(u64, W)> {
        self.finish_parts().map(|f| (f.len, f.out))
    }

    /// [`finish_into_inner`](Self::finish_into_inner), with the file's
    /// header digest when it has digests (what an index records of a
    /// member).
    pub(crate) fn finish_parts(mut self) -> Result<Finished<W>> {
        self.check_alive()?;
        self.pad_to(8)?;
        let header = self.build_header();
        let header_offset = self.pos;
        self.raw_write(&header)?;
        let extended = self.written.iter().any(|w| {
            w.desc
                .quantization
                .as_ref()
                .is_some_and(crate::Quantization::is_extended)
        });
        let composite = self.written.iter().any(|w| {
            w.desc
                .quantization
                .as_ref()
                .is_some_and(crate::Quantization::is_composite)
        });
        let mut flags = 0;
        if extended {
            flags |= format::FLAG_EXTENDED_QUANTIZATION;
        }
        if composite {
            flags |= format::FLAG_COMPOSITE_QUANTIZATION;
        }
        if self.shard_index.is_some() {
            flags |= format::FLAG_SHARD_INDEX;
        }
        let footer = Footer {
            header_offset,
            header_length: header.len() as u64,
            flags,
        };
        self.raw_write(&footer.encode())?;
        let len = self.pos;
        let header_digest = self.wanted.digest.map(|algorithm| {
            crate::digest::header_digest(
                algorithm,
                crate::digest::HeaderFacts {
                    version: (format::VERSION_MAJOR, format::VERSION_MINOR),
                    header_offset,
                    flags,
                    file_len: len,
                    header: &header,
                },
            )
        });
        debug_assert_eq!(len, header_offset + header.len() as u64 + FOOTER_LEN);
        let out = match self.out.into_inner() {
            Ok(out) => out,
            Err(e) => return Err(self.sink.error(e)),
        };
        if let Sink::Atomic(atomic) = self.sink {
            // The output is flushed; the rename makes it the file.
            atomic.commit()?;
        }
        Ok(Finished {
            len,
            header_digest,
            out,
        })
    }

    fn build_header(&mut self) -> Vec<u8> {
        self.written.sort_by(|a, b| a.desc.name.cmp(&b.desc.name));
        let mut fbb =
            flatbuffers::FlatBufferBuilder::with_capacity(1024 + 256 * self.written.len());
        let mut tensors = Vec::with_capacity(self.written.len());
        for w in &self.written {
            tensors.push(build_tensor(&mut fbb, w));
        }
        let tensors = fbb.create_vector(&tensors);
        let name_index = (!self.written.is_empty()).then(|| {
            let mut slots = vec![0u32; format::name_index_len(self.written.len())];
            let mask = slots.len() - 1;
            for (i, w) in self.written.iter().enumerate() {
                let mut s = format::name_hash(w.desc.name.as_bytes()) as usize & mask;
                while slots[s] != 0 {
                    s = (s + 1) & mask;
                }
                slots[s] = i as u32 + 1;
            }
            fbb.create_vector(&slots)
        });
        let metadata = build_metadata(&mut fbb, &self.metadata);
        let shard_index = self
            .shard_index
            .as_ref()
            .map(|index| crate::shard_index::to_wire(&mut fbb, index));
        let file_id = self.file_id.map(|id| fbb.create_vector(&id.0));
        let root = fb::Header::create(
            &mut fbb,
            &fb::HeaderArgs {
                tensors: Some(tensors),
                metadata,
                alignment: self.alignment,
                name_index,
                checksum_algorithm: self
                    .wanted
                    .checksum
                    .map_or(fb::ChecksumAlgorithm::None, ChecksumAlgorithm::to_wire),
                shard_index,
                digest_algorithm: self
                    .wanted
                    .digest
                    .map_or(fb::DigestAlgorithm::None, DigestAlgorithm::to_wire),
                file_id,
            },
        );
        fb::finish_header_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_followed_by_aligned_data() {
        let mut out = Vec::new();
        let w = Writer::new(&mut out).unwrap();
        assert_eq!(w.pos, format::PREFIX_LEN);
        w.finish().unwrap();
        assert_eq!(&out[..8], &format::MAGIC);
    }

    /// A file's writes are whole 1 MiB blocks or 2 MiB pairs of the file,
    /// each at a multiple of its size (the last aside), whatever its
    /// tensors' sizes, checksums on: the page cache then holds the file in
    /// folios as large (see `block_sizes`).
    #[test]
    #[cfg_attr(miri, ignore = "megabytes of safe code: too slow under Miri")]
    fn a_file_is_written_in_whole_blocks() {
        use crate::{ElementType, shape};
        use std::io::IoSlice;
        #[derive(Debug, Default)]
        struct Recorder(Vec<usize>, u64);
        impl Write for Recorder {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.write_vectored(&[IoSlice::new(buf)])
            }
            fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
                let n: usize = bufs.iter().map(|b| b.len()).sum();
                self.0.push(n);
                self.1 += n as u64;
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = Writer::new(Recorder::default()).unwrap();
        for (i, len) in [3usize, 5 << 20, 100_000, (3 << 20) + 17, 1]
            .into_iter()
            .enumerate()
        {
            let desc =
                TensorDescriptor::new(format!("t{i}"), ElementType::UInt8, shape(&[len as u64]));
            w.add_tensor(&desc, &[&vec![i as u8; len]]).unwrap();
        }
        let (len, out) = w.finish_into_inner().unwrap();
        assert_eq!(out.1, len);
        let (last, writes) = out.0.split_last().unwrap();
        assert!(block_sizes::whole_and_aligned(writes), "{:?}", out.0);
        assert!(writes.iter().sum::<usize>() >= 8 << 20, "{:?}", out.0);
        assert!(*last <= block_sizes::PAIR);
    }
}
