//! The streaming writer.
//!
//! Data is written once, in order, as it arrives: the prefix, then each
//! tensor's buffers (each non-empty one padded to its alignment), then the
//! header and the footer. Only descriptors are kept in memory. Writing to a
//! path goes through a temporary file in the same directory that is fsynced
//! and renamed over the destination by [`Writer::finish`], so a failed or
//! killed writer never leaves a partial destination file.

use crate::atomic::{AtomicFile, Durability};
use crate::buffer::BufferRole;
use crate::checksum::{ChecksumAlgorithm, Running};
use crate::descriptor::{Layout, Quantization, QuantizationScheme, TensorDescriptor};
use crate::error::{Error, Result};
use crate::format::{self, FOOTER_LEN, Footer, MIN_ALIGNMENT};
use crate::generated::fb;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

mod staging;

use staging::{STAGING_CAPACITY, Staging};

const ZEROS: [u8; 4096] = [0; 4096];
/// Bytes copied before they are checksummed: small enough to stay in the
/// cache between the copy and the checksum (ADR-0009).
const CHECKSUM_PIECE: usize = 1 << 20;
/// Packed bytes computed before they are checksummed: 48 KiB, a whole
/// number of bytes for every width, fits the first-level cache's
/// neighbourhood (measured better than 128 KiB and 1 MiB on a 4-bit
/// lowering). At most [`STAGING_CAPACITY`].
const PACK_PIECE: usize = 48 << 10;
const _: () = assert!(PACK_PIECE <= STAGING_CAPACITY && PACK_PIECE.is_multiple_of(3));

/// A tensor already written, waiting for the header.
#[derive(Debug)]
struct Written {
    desc: TensorDescriptor,
    /// (offset, length) of each buffer: layout buffers, then scales, zero
    /// points and offsets.
    buffers: Vec<(u64, u64)>,
    /// The checksum of each buffer (empty when the file has none).
    checksums: Vec<u64>,
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
    /// Per-buffer checksums (format 1.2); CRC-32C unless turned off.
    checksum: Option<ChecksumAlgorithm>,
    /// The index of a sharded checkpoint, for an index file (format 1.3).
    shard_index: Option<crate::sharded::ShardIndex>,
}

impl Writer<std::fs::File> {
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
        let file = atomic.reopen()?;
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
    /// [`AtomicFile`] its caller commits): write errors name `path`.
    pub(crate) fn to_file_at(out: W, path: &Path) -> Result<Self> {
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
            checksum: Some(ChecksumAlgorithm::Crc32c),
            shard_index: None,
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
        if !format::valid_alignment(alignment) {
            return Err(Error::InvalidAlignment {
                owner: "file".into(),
                value: alignment,
            });
        }
        self.alignment = alignment;
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
        self.checksum = algorithm;
        Ok(())
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
        self.check_alive()?;
        if desc.name.is_empty() {
            return Err(Error::EmptyName {
                index: self.written.len(),
            });
        }
        if self.names.contains(&desc.name) {
            return Err(Error::DuplicateName {
                name: desc.name.clone(),
            });
        }
        if let Some(a) = desc.alignment
            && !format::valid_alignment(a)
        {
            return Err(Error::InvalidAlignment {
                owner: format!("tensor {:?}", desc.name),
                value: a,
            });
        }
        let (roles, lengths) = desc.buffer_plan()?.buffers().into_iter().unzip();
        self.names.insert(desc.name.clone());
        Ok(TensorWriter {
            alignment: desc.alignment.unwrap_or(0).max(self.alignment),
            checksum: self.checksum,
            writer: self,
            desc: desc.clone(),
            lengths,
            roles,
            buffers: Vec::new(),
            remaining: None,
            running: None,
            checksums: Vec::new(),
        })
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
        let mut t = self.begin_tensor(desc)?;
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
    pub(crate) fn set_shard_index(&mut self, index: crate::sharded::ShardIndex) {
        self.shard_index = Some(index);
    }

    /// Writes the header and footer, flushes, and (for [`Writer::create`])
    /// fsyncs and renames the file into place. Returns the file length.
    pub fn finish(self) -> Result<u64> {
        self.finish_into_inner().map(|(len, _)| len)
    }

    /// [`finish`](Self::finish), handing back the sink as well: the file
    /// length and the `W` the writer wrote to.
    pub fn finish_into_inner(mut self) -> Result<(u64, W)> {
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
        let mut flags = 0;
        if extended {
            flags |= format::FLAG_EXTENDED_QUANTIZATION;
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
        debug_assert_eq!(len, header_offset + header.len() as u64 + FOOTER_LEN);
        let out = match self.out.into_inner() {
            Ok(out) => out,
            Err(e) => return Err(self.sink.error(e)),
        };
        if let Sink::Atomic(atomic) = self.sink {
            // The reopened handle is flushed; the rename makes it the file.
            atomic.commit()?;
        }
        Ok((len, out))
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
            .map(|index| crate::sharded::index_to_wire(&mut fbb, index));
        let root = fb::Header::create(
            &mut fbb,
            &fb::HeaderArgs {
                tensors: Some(tensors),
                metadata,
                alignment: self.alignment,
                name_index,
                checksum_algorithm: self
                    .checksum
                    .map_or(fb::ChecksumAlgorithm::None, ChecksumAlgorithm::to_wire),
                shard_index,
            },
        );
        fb::finish_header_buffer(&mut fbb, root);
        fbb.finished_data().to_vec()
    }
}

fn build_metadata<'b>(
    fbb: &mut flatbuffers::FlatBufferBuilder<'b>,
    m: &BTreeMap<String, String>,
) -> Option<
    flatbuffers::WIPOffset<flatbuffers::Vector<'b, flatbuffers::ForwardsUOffset<fb::KeyValue<'b>>>>,
> {
    if m.is_empty() {
        return None;
    }
    let entries: Vec<_> = m
        .iter()
        .map(|(k, v)| {
            let key = fbb.create_string(k);
            let value = fbb.create_string(v);
            fb::KeyValue::create(
                fbb,
                &fb::KeyValueArgs {
                    key: Some(key),
                    value: Some(value),
                },
            )
        })
        .collect();
    Some(fbb.create_vector(&entries))
}

fn build_tensor<'b>(
    fbb: &mut flatbuffers::FlatBufferBuilder<'b>,
    w: &Written,
) -> flatbuffers::WIPOffset<fb::Tensor<'b>> {
    let d = &w.desc;
    let name = fbb.create_string(&d.name);
    let shape = fbb.create_vector(&d.wire_shape());
    let (layout_type, layout) = match &d.layout {
        Layout::Dense => (fb::Layout::NONE, None),
        Layout::Strided(s) => {
            let strides = fbb.create_vector(s);
            let t = fb::Dense::create(
                fbb,
                &fb::DenseArgs {
                    strides: Some(strides),
                },
            );
            (fb::Layout::Dense, Some(t.as_union_value()))
        }
        Layout::Coo {
            nnz,
            index_type,
            canonical,
        } => {
            let t = fb::Coo::create(
                fbb,
                &fb::CooArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                    canonical: *canonical,
                },
            );
            (fb::Layout::Coo, Some(t.as_union_value()))
        }
        Layout::Csr { nnz, index_type } => {
            let t = fb::Csr::create(
                fbb,
                &fb::CsrArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                },
            );
            (fb::Layout::Csr, Some(t.as_union_value()))
        }
        Layout::Csc { nnz, index_type } => {
            let t = fb::Csc::create(
                fbb,
                &fb::CscArgs {
                    nnz: *nnz,
                    index_type: fb::ElementType(index_type.to_wire()),
                },
            );
            (fb::Layout::Csc, Some(t.as_union_value()))
        }
    };
    // Layout buffers come first, then scales, zero points and (when the
    // quantization has them) offsets; a descriptor-only tensor has none at all.
    let quantization_buffers = d
        .quantization
        .as_ref()
        .map_or(0, Quantization::buffer_count);
    let n_layout = w.buffers.len().saturating_sub(quantization_buffers);
    let buffers: Vec<fb::Buffer> = w.buffers[..n_layout]
        .iter()
        .map(|&(o, l)| fb::Buffer::new(o, l))
        .collect();
    let buffers = fbb.create_vector(&buffers);
    let quantization = d.quantization.as_ref().map(|q| {
        let (scheme, axis, block_size) = match q.scheme {
            QuantizationScheme::PerTensor => (fb::QuantizationScheme::PerTensor, 0, 0),
            QuantizationScheme::PerAxis { axis } => (fb::QuantizationScheme::PerAxis, axis, 0),
            QuantizationScheme::PerBlock { axis, block_size } => {
                (fb::QuantizationScheme::PerBlock, axis, block_size)
            }
        };
        let at = |i: usize| {
            w.buffers
                .get(n_layout + i)
                .map(|&(o, l)| fb::Buffer::new(o, l))
        };
        let (scales, zero_points) = (at(0), at(1));
        let offsets = q.offset_type.and_then(|_| at(2));
        fb::Quantization::create(
            fbb,
            &fb::QuantizationArgs {
                scheme,
                expressed_type: fb::ElementType(q.expressed_type.to_wire()),
                scale_type: fb::ElementType(q.scale_type.to_wire()),
                zero_point_type: fb::ElementType(q.zero_point_type.map_or(0, |t| t.to_wire())),
                axis,
                block_size,
                scales: scales.as_ref(),
                zero_points: zero_points.as_ref(),
                storage_min: q.storage_min,
                storage_max: q.storage_max,
                tensor_scale: q.tensor_scale,
                offset_type: fb::ElementType(q.offset_type.map_or(0, |t| t.to_wire())),
                offsets: offsets.as_ref(),
            },
        )
    });
    let metadata = build_metadata(fbb, &d.metadata);
    // A descriptor-only tensor has no buffers, so no checksums either.
    let checksums = (!w.checksums.is_empty()).then(|| fbb.create_vector(&w.checksums));
    fb::Tensor::create(
        fbb,
        &fb::TensorArgs {
            name: Some(name),
            element_type: fb::ElementType(d.element_type.to_wire()),
            shape: Some(shape),
            layout_type,
            layout,
            buffers: (!d.descriptor_only).then_some(buffers),
            descriptor_only: d.descriptor_only,
            alignment: d.alignment.unwrap_or(0),
            quantization,
            metadata,
            checksums,
        },
    )
}

/// Streams the bytes of one tensor. Buffers are filled in order; when one is
/// complete the next one starts at its alignment. [`TensorWriter::finish`]
/// checks every byte the descriptor needs arrived.
#[derive(Debug)]
pub struct TensorWriter<'w, W: Write> {
    writer: &'w mut Writer<W>,
    desc: TensorDescriptor,
    alignment: u64,
    lengths: Vec<u64>,
    roles: Vec<BufferRole>,
    buffers: Vec<(u64, u64)>,
    /// Bytes still owed to the current buffer; `None` before the first byte.
    remaining: Option<u64>,
    checksum: Option<ChecksumAlgorithm>,
    /// The checksum of the current buffer so far.
    running: Option<Running>,
    /// The checksums of the buffers completed so far.
    checksums: Vec<u64>,
}

impl<W: Write> TensorWriter<'_, W> {
    fn mismatch(&mut self, reason: String) -> Error {
        self.writer.poisoned = Some(format!("tensor {:?} was left incomplete", self.desc.name));
        Error::WriteMismatch {
            tensor: self.desc.name.clone(),
            reason,
        }
    }

    /// Records a zero-length buffer, and its checksum (that of no bytes).
    fn push_empty(&mut self) {
        self.buffers.push((0, 0));
        if let Some(c) = self.checksum {
            self.checksums.push(c.of(&[]));
        }
    }

    /// Starts the next buffer: empty ones are recorded with no padding.
    fn open_next(&mut self) -> Result<()> {
        while self.buffers.len() < self.lengths.len() {
            let len = self.lengths[self.buffers.len()];
            if len == 0 {
                // ADR-007: a zero-length buffer takes no space and no alignment.
                self.push_empty();
                continue;
            }
            self.writer.pad_to(self.alignment)?;
            self.buffers.push((self.writer.pos, len));
            self.remaining = Some(len);
            self.running = self.checksum.map(Running::new);
            return Ok(());
        }
        self.remaining = Some(0);
        Ok(())
    }

    /// The bytes the current buffer still takes, after opening the next
    /// buffer if the current one is full; an error past the last buffer.
    fn room(&mut self) -> Result<u64> {
        loop {
            if let Some(r) = self.remaining.filter(|&r| r > 0) {
                return Ok(r);
            }
            if self.buffers.len() == self.lengths.len() {
                let total: u64 = self.lengths.iter().sum();
                let reason = format!("more than the {total} byte(s) the descriptor implies");
                return Err(self.mismatch(reason));
            }
            self.open_next()?;
        }
    }

    /// Appends `bytes` to the tensor's data.
    pub fn write_all(&mut self, mut bytes: &[u8]) -> Result<()> {
        if self.desc.descriptor_only && !bytes.is_empty() {
            let reason = "a descriptor-only tensor carries no data".to_owned();
            return Err(self.mismatch(reason));
        }
        while !bytes.is_empty() {
            let r = self.room()?;
            let mut n = (r.min(bytes.len() as u64)) as usize;
            if let Some(running) = &mut self.running {
                // The same pass computes the checksum (ADR-0009): a piece at
                // a time, so the checksum reads what the copy just brought
                // into the cache instead of reading memory a second time.
                n = n.min(CHECKSUM_PIECE);
                self.writer.raw_write(&bytes[..n])?;
                running.update(&bytes[..n]);
            } else {
                self.writer.raw_write(&bytes[..n])?;
            }
            self.advance(n as u64);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Appends `codes` (one per byte, each in its low `bits` bits; 1, 2, 4,
    /// 6 or 8) packed LSB-first as [`crate::pack`] defines, straight into
    /// the output: no packed copy is made first. The codes must end on a
    /// byte boundary unless they are the last of their buffer, and must not
    /// run past it.
    pub fn write_packed(&mut self, codes: &[u8], bits: u32) -> Result<()> {
        if bits == 8 {
            return self.write_all(codes);
        }
        if !matches!(bits, 1 | 2 | 4 | 6) {
            let reason = format!("{bits}-bit codes: packed widths are 1, 2, 4, 6 or 8");
            return Err(self.mismatch(reason));
        }
        if codes.is_empty() {
            return Ok(());
        }
        if self.desc.descriptor_only {
            let reason = "a descriptor-only tensor carries no data".to_owned();
            return Err(self.mismatch(reason));
        }
        let packed = crate::packed_len(codes.len() as u64, bits).unwrap_or(u64::MAX);
        let room = self.room()?;
        let role = self.roles[self.buffers.len() - 1];
        let ends_inside_a_byte = !(codes.len() as u64 * u64::from(bits)).is_multiple_of(8);
        if packed > room || (ends_inside_a_byte && packed != room) {
            let reason = format!(
                "{} {bits}-bit code(s) pack into {packed} byte(s), buffer {role} has {room} left{}",
                codes.len(),
                if packed > room {
                    ""
                } else {
                    " (codes may end inside a byte only at the end of their buffer)"
                }
            );
            return Err(self.mismatch(reason));
        }
        // Pieces of whole bytes (a multiple of 8 codes) small enough that the
        // checksum reads what the packer just wrote while it is in the cache.
        let piece = PACK_PIECE * 8 / bits as usize;
        for codes in codes.chunks(piece) {
            let out = self.writer.appender(PACK_PIECE)?;
            let start = out.len();
            let mut packer = crate::pack::Packer::new(bits);
            packer.push(codes, out);
            packer.finish(out);
            if let Some(running) = &mut self.running {
                running.update(&out[start..]);
            }
            let n = (out.len() - start) as u64;
            self.writer.pos += n;
            self.advance(n);
        }
        Ok(())
    }

    /// Counts `n` bytes written into the current buffer (which had room for
    /// them); its checksum is complete when the buffer is.
    fn advance(&mut self, n: u64) {
        let left = self.remaining.unwrap_or(0) - n;
        self.remaining = Some(left);
        if left == 0
            && let Some(running) = self.running.take()
        {
            self.checksums.push(running.finish());
        }
    }

    /// Completes the tensor; fails if a buffer is short.
    pub fn finish(mut self) -> Result<()> {
        if self.remaining.is_none_or(|r| r == 0) && !self.desc.descriptor_only {
            // Record trailing empty buffers (or all of them, for an empty tensor).
            while self.buffers.len() < self.lengths.len() && self.lengths[self.buffers.len()] == 0 {
                self.push_empty();
            }
        }
        let complete = self.desc.descriptor_only
            || (self.buffers.len() == self.lengths.len() && self.remaining.is_none_or(|r| r == 0));
        if !complete {
            let role = self
                .roles
                .get(self.buffers.len().saturating_sub(1))
                .copied()
                .unwrap_or(BufferRole::Values);
            let reason = format!("buffer {role} is short of bytes");
            return Err(self.mismatch(reason));
        }
        let (buffers, checksums) = if self.desc.descriptor_only {
            (Vec::new(), Vec::new())
        } else {
            (
                std::mem::take(&mut self.buffers),
                std::mem::take(&mut self.checksums),
            )
        };
        debug_assert!(self.checksum.is_none() || checksums.len() == buffers.len());
        self.writer.written.push(Written {
            desc: self.desc.clone(),
            buffers,
            checksums,
        });
        Ok(())
    }
}

impl<W: Write> Drop for TensorWriter<'_, W> {
    fn drop(&mut self) {
        let done = self
            .writer
            .written
            .last()
            .is_some_and(|w| w.desc.name == self.desc.name);
        if !done && self.writer.poisoned.is_none() {
            self.writer.poisoned = Some(format!(
                "tensor {:?} was dropped before finish()",
                self.desc.name
            ));
        }
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
}
