//! Opening and verifying a Hurray file, and the borrowed tensor handle.
//!
//! [`Reader::new`] is the one verifying constructor: after it returns, every
//! descriptor has passed the FlatBuffers verifier and the semantic rules of
//! [`crate::validate`], every buffer lies in the data region, is aligned and
//! overlaps no other. Opening touches only the prefix, footer and header, so
//! its cost does not depend on the size of the data.

use crate::ElementType;
use crate::buffer::BufferRole;
use crate::descriptor::{Dim, Layout, Quantization, QuantizationScheme, TensorDescriptor};
use crate::error::{Error, Result};
use crate::format::{self, FOOTER_LEN, MAGIC, PREFIX_LEN, VERSION_MAJOR};
use crate::generated::fb;
use crate::validate::{self, LayoutParams, Plan, QuantParams};
use std::path::Path;

/// Verifier limits: nesting depth, and at most one table per 4 header bytes.
const MAX_DEPTH: usize = 16;

/// A verified Hurray file that owns its bytes (memory-mapped or in memory).
#[derive(Debug)]
pub struct File {
    storage: Storage,
    version: (u16, u16),
}

#[derive(Debug)]
enum Storage {
    Mmap(memmap2::Mmap),
    Owned { blocks: Vec<Block>, len: usize },
}

/// 64-byte aligned storage for an in-memory file, so typed views line up.
#[derive(Debug, Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Block([u8; 64]);

impl File {
    /// Memory-maps and verifies the file at `path`.
    ///
    /// As with every memory-mapped reader, another process truncating or
    /// rewriting the file while it is mapped is outside what Rust can
    /// guard against; Hurray writers replace files by rename, never in place.
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("reading metadata of", path, e))?
            .len();
        if len < PREFIX_LEN + FOOTER_LEN {
            return Err(Error::TooShort {
                len,
                min: PREFIX_LEN + FOOTER_LEN,
            });
        }
        // SAFETY: the map is read-only and private to this process; the bytes
        // are only ever read through `&[u8]`. Concurrent truncation by another
        // process is the documented caveat above.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io("mapping", path, e))?;
        File::from_storage(Storage::Mmap(map))
    }

    /// Verifies an in-memory file, copying it into 64-byte aligned storage.
    pub fn from_bytes(bytes: &[u8]) -> Result<File> {
        let mut blocks = vec![Block([0; 64]); bytes.len().div_ceil(64)];
        bytemuck::cast_slice_mut::<Block, u8>(&mut blocks)[..bytes.len()].copy_from_slice(bytes);
        File::from_storage(Storage::Owned {
            blocks,
            len: bytes.len(),
        })
    }

    fn from_storage(storage: Storage) -> Result<File> {
        let mut file = File {
            storage,
            version: (0, 0),
        };
        file.version = Reader::new(file.bytes())?.version();
        Ok(file)
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Mmap(m) => m,
            Storage::Owned { blocks, len } => &bytemuck::cast_slice(blocks)[..*len],
        }
    }

    /// The verified reader over this file's bytes.
    pub fn reader(&self) -> Reader<'_> {
        let bytes = self.bytes();
        // SAFETY: `from_storage` ran `Reader::new` (the full verifier) on these
        // same bytes, which are immutable for the life of `self`.
        unsafe { Reader::new_unchecked(bytes, self.version) }
    }

    /// The tensor named `name`: O(1) expected through the name index, O(log n) at worst.
    pub fn get(&self, name: &str) -> Option<TensorRef<'_>> {
        self.reader().get(name)
    }

    /// The tensor named `name`, or [`Error::NotFound`].
    pub fn tensor(&self, name: &str) -> Result<TensorRef<'_>> {
        self.reader().tensor(name)
    }

    /// All tensors in file order (sorted by name).
    pub fn tensors(&self) -> Tensors<'_> {
        self.reader().tensors()
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

/// A verified view of a Hurray file's bytes.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    header: fb::Header<'a>,
    version: (u16, u16),
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("len", &self.bytes.len())
            .field("version", &self.version)
            .field("tensors", &self.len())
            .finish()
    }
}

/// Where the header is, as the prefix and footer say, before any trust.
fn locate(bytes: &[u8]) -> Result<(std::ops::Range<usize>, (u16, u16))> {
    let len = bytes.len() as u64;
    let min = PREFIX_LEN + FOOTER_LEN;
    if len < min {
        return Err(Error::TooShort { len, min });
    }
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&bytes[..8]);
    if magic != MAGIC {
        return Err(Error::BadMagic { found: magic });
    }
    let version = (format::read_u16(bytes, 8), format::read_u16(bytes, 10));
    if version.0 != VERSION_MAJOR {
        return Err(Error::UnsupportedVersion {
            major: version.0,
            minor: version.1,
        });
    }
    let footer_at = bytes.len() - FOOTER_LEN as usize;
    let mut end_magic = [0u8; 8];
    end_magic.copy_from_slice(&bytes[footer_at + 24..]);
    if end_magic != format::FOOTER_MAGIC {
        return Err(Error::BadFooterMagic { found: end_magic });
    }
    let header_offset = format::read_u64(bytes, footer_at);
    let header_length = format::read_u64(bytes, footer_at + 8);
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
    let flags = format::read_u64(bytes, footer_at + 16);
    if flags != 0 {
        // Flags are for features a reader must understand; 1.0 defines none.
        return Err(bad(
            "flags",
            flags,
            "unknown flags: the file needs a newer reader",
        ));
    }
    if header_offset.checked_add(header_length) != Some(footer_at as u64) {
        return Err(bad(
            "header_length",
            header_length,
            "the header must end where the footer starts",
        ));
    }
    Ok((header_offset as usize..footer_at, version))
}

impl<'a> Reader<'a> {
    /// Verifies `bytes` as a Hurray file: prefix, footer, the FlatBuffers
    /// header, and every descriptor and buffer (see the module docs).
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let (range, version) = locate(bytes)?;
        let header_bytes = &bytes[range.clone()];
        let opts = flatbuffers::VerifierOptions {
            max_depth: MAX_DEPTH,
            max_tables: header_bytes.len() / 4 + 1,
            max_apparent_size: header_bytes.len().saturating_mul(2).max(1 << 16),
            ignore_missing_null_terminator: false,
        };
        if !fb::header_buffer_has_identifier(header_bytes) {
            return Err(Error::InvalidHeader(
                flatbuffers::InvalidFlatbuffer::MissingRequiredField {
                    required: "file_identifier \"HRRY\"".into(),
                    error_trace: Default::default(),
                },
            ));
        }
        let header = fb::root_as_header_with_opts(&opts, header_bytes)?;
        let reader = Reader {
            bytes,
            header,
            version,
        };
        reader.check_semantics(range.start as u64)?;
        Ok(reader)
    }

    /// A reader over bytes already verified by [`Reader::new`].
    ///
    /// # Safety
    /// `bytes` must be exactly bytes that [`Reader::new`] accepted, with the
    /// `version` it reported.
    pub(crate) unsafe fn new_unchecked(bytes: &'a [u8], version: (u16, u16)) -> Self {
        let footer_at = bytes.len() - FOOTER_LEN as usize;
        let header_offset = format::read_u64(bytes, footer_at) as usize;
        // SAFETY: the caller guarantees these bytes passed the FlatBuffers
        // verifier at this very range in `Reader::new`.
        let header = unsafe {
            flatbuffers::root_unchecked::<fb::Header<'a>>(&bytes[header_offset..footer_at])
        };
        Reader {
            bytes,
            header,
            version,
        }
    }

    fn check_semantics(&self, data_end: u64) -> Result<()> {
        let file_alignment = self.header.alignment();
        if !format::valid_alignment(file_alignment) {
            return Err(Error::InvalidAlignment {
                owner: "file".into(),
                value: file_alignment,
            });
        }
        check_metadata("file", self.header.metadata())?;
        let Some(tensors) = self.header.tensors() else {
            return check_name_index(&self.header, 0);
        };
        let mut ranges: Vec<(u64, u64, u32, &'static str)> = Vec::with_capacity(tensors.len());
        let mut previous: Option<&str> = None;
        for (index, t) in tensors.iter().enumerate() {
            let name = t.name();
            if name.is_empty() {
                return Err(Error::EmptyName { index });
            }
            if let Some(p) = previous
                && p >= name
            {
                return Err(Error::NamesNotSorted {
                    previous: p.to_owned(),
                    name: name.to_owned(),
                });
            }
            previous = Some(name);
            let alignment = match t.alignment() {
                0 => file_alignment,
                a if format::valid_alignment(a) => a,
                a => {
                    return Err(Error::InvalidAlignment {
                        owner: format!("tensor {name:?}"),
                        value: a,
                    });
                }
            };
            let plan = plan_of(&t)?;
            let quant = t.quantization();
            let listed = t.buffers().map_or(0, |b| b.len());
            let layout_buffers = if t.descriptor_only() {
                0
            } else {
                plan.roles.len()
            };
            if listed != layout_buffers {
                if t.descriptor_only() {
                    return Err(Error::DescriptorOnlyWithData {
                        tensor: name.to_owned(),
                        field: "buffers".into(),
                        value: listed as u64,
                    });
                }
                return Err(Error::BufferCount {
                    tensor: name.to_owned(),
                    layout: plan.layout,
                    expected: layout_buffers,
                    found: listed,
                });
            }
            let mut check =
                |role: BufferRole, expected_len: u64, b: Option<&fb::Buffer>| -> Result<()> {
                    let role = role.name();
                    let (offset, length) = b.map_or((0, 0), |b| (b.offset(), b.length()));
                    if length != expected_len {
                        return Err(Error::BufferLength {
                            tensor: name.to_owned(),
                            buffer: role,
                            expected: expected_len,
                            found: length,
                        });
                    }
                    if length == 0 {
                        // ADR-007: a zero-length buffer has no alignment and no position
                        // that matters; it is never dereferenced.
                        return Ok(());
                    }
                    let end = offset.checked_add(length);
                    if offset < PREFIX_LEN || end.is_none_or(|e| e > data_end) {
                        return Err(Error::BufferOutOfBounds {
                            tensor: name.to_owned(),
                            buffer: role,
                            offset,
                            length,
                            start: PREFIX_LEN,
                            end: data_end,
                        });
                    }
                    if offset % alignment != 0 {
                        return Err(Error::BufferMisaligned {
                            tensor: name.to_owned(),
                            buffer: role,
                            offset,
                            alignment,
                        });
                    }
                    ranges.push((offset, offset + length, index as u32, role));
                    Ok(())
                };
            if let Some(buffers) = t.buffers() {
                for (i, b) in buffers.iter().enumerate() {
                    check(plan.roles[i], plan.lengths[i], Some(b))?;
                }
            }
            if let Some(q) = quant {
                check(BufferRole::Scales, plan.scales, q.scales())?;
                check(BufferRole::ZeroPoints, plan.zero_points, q.zero_points())?;
            }
            check_metadata(name, t.metadata())?;
        }
        check_name_index(&self.header, tensors.len())?;
        // The whole tuple, so the reported pair is deterministic.
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(Error::BuffersOverlap {
                    first: tensors.get(w[0].2 as usize).name().to_owned(),
                    first_buffer: w[0].3,
                    second: tensors.get(w[1].2 as usize).name().to_owned(),
                    second_buffer: w[1].3,
                });
            }
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn header(&self) -> fb::Header<'a> {
        self.header
    }

    /// Checks what opening leaves for later: the index contents of every
    /// sparse tensor (ADR-0003). Returns every problem found; empty when the
    /// whole file is valid. This is what `hurray validate` runs.
    pub fn check_sparse_indices(&self) -> Vec<Error> {
        self.tensors()
            .filter(|t| !t.is_descriptor_only())
            .filter_map(|t| {
                let checked = match t.layout() {
                    Layout::Coo { .. } => t.coo().map(drop),
                    Layout::Csr { .. } => t.csr().map(drop),
                    Layout::Csc { .. } => t.csc().map(drop),
                    Layout::Dense | Layout::Strided(_) => Ok(()),
                };
                checked.err()
            })
            .collect()
    }

    /// The format version of the file (major, minor).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// The whole file.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Default buffer alignment of the file.
    pub fn alignment(&self) -> u64 {
        self.header.alignment()
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.header.tensors().map_or(0, |t| t.len())
    }

    /// Whether the file holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All tensors in file order (sorted by name).
    pub fn tensors(&self) -> Tensors<'a> {
        Tensors {
            bytes: self.bytes,
            inner: self.header.tensors(),
            file_alignment: self.header.alignment(),
            next: 0,
        }
    }

    /// The tensor named `name`: through the file's hash index when it has
    /// one (O(1) expected), else, or on a miss, by binary search (O(log n)).
    pub fn get(&self, name: &str) -> Option<TensorRef<'a>> {
        let tensors = self.header.tensors()?;
        if let Some(index) = self.header.name_index() {
            // Verified at open: a power-of-two length and entries <= tensors.len().
            let mask = index.len().wrapping_sub(1);
            let mut slot = format::name_hash(name.as_bytes()) as usize & mask;
            for _ in 0..format::MAX_PROBES.min(index.len()) {
                match index.get(slot) {
                    0 => break,
                    e => {
                        let t = tensors.get(e as usize - 1);
                        if t.name() == name {
                            return Some(TensorRef::new(self.bytes, t, self.header.alignment()));
                        }
                    }
                }
                slot = (slot + 1) & mask;
            }
        }
        let t = tensors.lookup_by_key(name, |t, key| t.key_compare_with_value(key))?;
        Some(TensorRef::new(self.bytes, t, self.header.alignment()))
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

/// The name index is only a hint (a miss falls back to binary search), but
/// its shape must be sound: a power-of-two length and entries that name tensors.
fn check_name_index(header: &fb::Header<'_>, tensors: usize) -> Result<()> {
    let Some(index) = header.name_index() else {
        return Ok(());
    };
    let bad = |value: String, reason: &str| Error::InvalidField {
        tensor: String::new(),
        field: "name_index".into(),
        value,
        reason: reason.into(),
    };
    if index.is_empty() && tensors == 0 {
        return Ok(());
    }
    if !index.len().is_power_of_two() || index.len() < tensors {
        return Err(bad(
            format!("{} slots", index.len()),
            "the length must be a power of two of at least the tensor count",
        ));
    }
    if let Some((slot, e)) = index
        .iter()
        .enumerate()
        .find(|&(_, e)| e as usize > tensors)
    {
        return Err(bad(
            format!("slot {slot} = {e}"),
            "an entry names a tensor that does not exist",
        ));
    }
    Ok(())
}

fn check_metadata(
    owner: &str,
    kv: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::KeyValue<'_>>>>,
) -> Result<()> {
    let Some(kv) = kv else { return Ok(()) };
    let mut previous: Option<&str> = None;
    for entry in kv.iter() {
        if let Some(p) = previous
            && p >= entry.key()
        {
            return Err(Error::MetadataNotSorted {
                owner: owner.to_owned(),
                previous: p.to_owned(),
                key: entry.key().to_owned(),
            });
        }
        previous = Some(entry.key());
    }
    Ok(())
}

pub(crate) fn layout_params<'a>(t: &fb::Tensor<'a>) -> LayoutParams<flatbuffers::Vector<'a, i64>> {
    match t.layout_type() {
        fb::Layout::NONE => LayoutParams::Dense { strides: None },
        fb::Layout::Dense => LayoutParams::Dense {
            strides: t.layout_as_dense().and_then(|d| d.strides()),
        },
        fb::Layout::Coo => {
            t.layout_as_coo()
                .map_or(LayoutParams::Unknown(2), |c| LayoutParams::Coo {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        fb::Layout::Csr => {
            t.layout_as_csr()
                .map_or(LayoutParams::Unknown(3), |c| LayoutParams::Csr {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        fb::Layout::Csc => {
            t.layout_as_csc()
                .map_or(LayoutParams::Unknown(4), |c| LayoutParams::Csc {
                    nnz: c.nnz(),
                    index_type: c.index_type().0,
                })
        }
        other => LayoutParams::Unknown(other.0),
    }
}

fn quant_params(q: &fb::Quantization<'_>) -> QuantParams {
    QuantParams {
        scheme: q.scheme().0,
        expressed_type: q.expressed_type().0,
        scale_type: q.scale_type().0,
        zero_point_type: q.zero_point_type().0,
        axis: q.axis(),
        block_size: q.block_size(),
    }
}

fn plan_of(t: &fb::Tensor<'_>) -> Result<Plan> {
    validate::plan(
        t.name(),
        t.element_type().0,
        &t.shape(),
        layout_params(t),
        t.descriptor_only(),
        t.quantization().as_ref().map(quant_params),
    )
}

/// Iterator over a file's tensors.
#[derive(Clone)]
pub struct Tensors<'a> {
    bytes: &'a [u8],
    inner: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Tensor<'a>>>>,
    file_alignment: u64,
    next: usize,
}

impl std::fmt::Debug for Tensors<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensors").field("next", &self.next).finish()
    }
}

impl<'a> Iterator for Tensors<'a> {
    type Item = TensorRef<'a>;
    fn next(&mut self) -> Option<TensorRef<'a>> {
        let v = self.inner?;
        if self.next >= v.len() {
            return None;
        }
        let t = v.get(self.next);
        self.next += 1;
        Some(TensorRef::new(self.bytes, t, self.file_alignment))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.inner.map_or(0, |v| v.len()) - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Tensors<'_> {}

/// Iterator over metadata entries `(key, value)`.
#[derive(Clone)]
pub struct Metadata<'a> {
    inner: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::KeyValue<'a>>>>,
    next: usize,
}

impl std::fmt::Debug for Metadata<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

impl<'a> Iterator for Metadata<'a> {
    type Item = (&'a str, &'a str);
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.inner?;
        if self.next >= v.len() {
            return None;
        }
        let kv = v.get(self.next);
        self.next += 1;
        Some((kv.key(), kv.value()))
    }
}

/// One verified tensor of a file, borrowing the file's bytes.
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    bytes: &'a [u8],
    t: fb::Tensor<'a>,
    element_type: ElementType,
    alignment: u64,
}

impl std::fmt::Debug for TensorRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRef")
            .field("name", &self.name())
            .field("element_type", &self.element_type)
            .field("shape", &self.dims())
            .finish()
    }
}

/// The dimensions of a tensor, read in place.
#[derive(Clone, Copy)]
pub struct Shape<'a>(flatbuffers::Vector<'a, u64>);

impl<'a> Shape<'a> {
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    /// Dimension `i`, if `i < rank`.
    pub fn get(&self, i: usize) -> Option<Dim> {
        (i < self.0.len()).then(|| Dim::from_wire(self.0.get(i)))
    }
    /// All dimensions.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Dim> + 'a {
        self.0.iter().map(Dim::from_wire)
    }
    /// The on-wire values (dynamic as `u64::MAX`).
    pub fn to_wire(&self) -> Vec<u64> {
        self.0.iter().collect()
    }
}

impl std::fmt::Debug for Shape<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> TensorRef<'a> {
    fn new(bytes: &'a [u8], t: fb::Tensor<'a>, file_alignment: u64) -> Self {
        let element_type = match ElementType::from_wire(t.element_type().0) {
            Some(e) => e,
            // `Reader::new` rejected every tensor with an unknown element type.
            None => unreachable!("element type verified at open"),
        };
        let alignment = match t.alignment() {
            0 => file_alignment,
            a => a,
        };
        TensorRef {
            bytes,
            t,
            element_type,
            alignment,
        }
    }

    /// The tensor's name.
    pub fn name(&self) -> &'a str {
        self.t.name()
    }

    /// The stored element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The shape, read in place.
    pub fn shape(&self) -> Shape<'a> {
        Shape(self.t.shape())
    }

    /// The shape as a vector of dimensions.
    pub fn dims(&self) -> Vec<Dim> {
        self.shape().iter().collect()
    }

    /// Number of logical elements; `None` when a dimension is dynamic.
    pub fn element_count(&self) -> Option<u64> {
        self.plan().elements
    }

    /// Whether a resolved dimension is 0 (an empty tensor, ADR-007).
    pub fn is_empty(&self) -> bool {
        self.t.shape().iter().any(|d| d == 0)
    }

    /// Whether the tensor carries no data at all.
    pub fn is_descriptor_only(&self) -> bool {
        self.t.descriptor_only()
    }

    /// Byte alignment of the tensor's non-empty buffers.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        match layout_params(&self.t) {
            LayoutParams::Dense { strides: None } => Layout::Dense,
            LayoutParams::Dense { strides: Some(s) } => Layout::Strided(s.iter().collect()),
            LayoutParams::Coo { nnz, index_type } => Layout::Coo {
                nnz,
                index_type: wire_type(index_type),
                canonical: self.t.layout_as_coo().is_some_and(|c| c.canonical()),
            },
            LayoutParams::Csr { nnz, index_type } => Layout::Csr {
                nnz,
                index_type: wire_type(index_type),
            },
            LayoutParams::Csc { nnz, index_type } => Layout::Csc {
                nnz,
                index_type: wire_type(index_type),
            },
            LayoutParams::Unknown(_) => unreachable!("layout verified at open"),
        }
    }

    /// The quantization descriptor, if any.
    pub fn quantization(&self) -> Option<Quantization> {
        let q = self.t.quantization()?;
        let scheme = match q.scheme() {
            fb::QuantizationScheme::PerTensor => QuantizationScheme::PerTensor,
            fb::QuantizationScheme::PerAxis => QuantizationScheme::PerAxis { axis: q.axis() },
            _ => QuantizationScheme::PerBlock {
                axis: q.axis(),
                block_size: q.block_size(),
            },
        };
        Some(Quantization {
            scheme,
            expressed_type: wire_type(q.expressed_type().0),
            scale_type: wire_type(q.scale_type().0),
            zero_point_type: ElementType::from_wire(q.zero_point_type().0),
            storage_min: q.storage_min(),
            storage_max: q.storage_max(),
        })
    }

    /// The tensor's metadata, sorted by key.
    pub fn metadata(&self) -> Metadata<'a> {
        Metadata {
            inner: self.t.metadata(),
            next: 0,
        }
    }

    /// An owned copy of the descriptor.
    pub fn descriptor(&self) -> TensorDescriptor {
        TensorDescriptor {
            name: self.name().to_owned(),
            element_type: self.element_type,
            shape: self.dims(),
            layout: self.layout(),
            quantization: self.quantization(),
            descriptor_only: self.is_descriptor_only(),
            alignment: (self.t.alignment() != 0).then_some(self.t.alignment()),
            metadata: self
                .metadata()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    pub(crate) fn plan(&self) -> Plan {
        match plan_of(&self.t) {
            Ok(p) => p,
            Err(_) => unreachable!("descriptor verified at open"),
        }
    }

    /// Total bytes of the tensor's buffers (layout buffers, scales and zero points).
    pub fn byte_length(&self) -> u64 {
        self.plan().total()
    }

    fn slice(&self, b: Option<&fb::Buffer>) -> &'a [u8] {
        match b {
            // ADR-007: a zero-length buffer is never dereferenced, wherever it points.
            Some(b) if b.length() > 0 => {
                let start = b.offset() as usize;
                &self.bytes[start..start + b.length() as usize]
            }
            _ => &[],
        }
    }

    /// Every buffer of the tensor with its role, in wire order (the layout's,
    /// then scales and zero points when quantized): exactly what
    /// [`Writer::add_tensor`](crate::Writer::add_tensor) takes to write the
    /// tensor again. Empty for a descriptor-only tensor.
    pub fn buffers(&self) -> Vec<(BufferRole, &'a [u8])> {
        if self.t.descriptor_only() {
            return Vec::new();
        }
        self.plan()
            .buffers()
            .into_iter()
            .map(|(role, _)| (role, self.buffer(role).unwrap_or(&[])))
            .collect()
    }

    /// The bytes of the buffer of `role`; `None` when the tensor has no such
    /// buffer (or no data at all).
    pub fn buffer(&self, role: BufferRole) -> Option<&'a [u8]> {
        match role {
            BufferRole::Scales => return self.t.quantization().map(|q| self.slice(q.scales())),
            BufferRole::ZeroPoints => {
                return self.t.quantization().map(|q| self.slice(q.zero_points()));
            }
            _ => {}
        }
        let i = self.plan().roles.iter().position(|r| *r == role)?;
        let buffers = self.t.buffers()?;
        (i < buffers.len()).then(|| self.slice(Some(buffers.get(i))))
    }

    /// The values buffer of a dense or strided tensor; `None` for other layouts.
    /// The hot path of every typed view: no plan, no allocation.
    pub(crate) fn dense_values(&self) -> Option<&'a [u8]> {
        match self.t.layout_type() {
            fb::Layout::NONE | fb::Layout::Dense => Some(self.t.buffers().map_or(&[][..], |b| {
                if b.is_empty() {
                    &[]
                } else {
                    self.slice(Some(b.get(0)))
                }
            })),
            _ => None,
        }
    }

    pub(crate) fn require_data(&self) -> Result<()> {
        if self.is_descriptor_only() {
            return Err(Error::NoData {
                tensor: self.name().to_owned(),
            });
        }
        Ok(())
    }
}

fn wire_type(v: u8) -> ElementType {
    match ElementType::from_wire(v) {
        Some(t) => t,
        None => unreachable!("element type verified at open"),
    }
}
