//! The borrowed handle to one tensor of a verified file, and where its
//! bytes are.

use super::metadata::Metadata;
use super::semantics::{layout_params, plan_of};
use super::shape::Shape;
use crate::ElementType;
use crate::buffer::BufferRole;
use crate::checksum::Algorithms;
use crate::descriptor::{Dim, Layout, Quantization, TensorDescriptor};
use crate::error::{Error, Result};
use crate::generated::fb;
use crate::validate::{LayoutParams, Plan};

mod integrity;

/// Where a file's tensors' bytes are, for a reader and its iterator.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FileData<'a> {
    /// The whole file is addressable (a map, or memory).
    Resident(&'a [u8]),
    /// Read through a source: each tensor's buffers, by the tensor's place
    /// in the file, once read.
    Read(&'a [std::sync::OnceLock<Box<[FetchedBuffer]>>]),
}

impl<'a> FileData<'a> {
    /// Where the bytes of the tensor at place `i` are.
    #[inline]
    pub(super) fn of(self, i: usize) -> DataBytes<'a> {
        match self {
            FileData::Resident(bytes) => DataBytes::File(bytes),
            FileData::Read(read) => match read.get(i).and_then(|cell| cell.get()) {
                Some(buffers) => DataBytes::Fetched(buffers),
                None => DataBytes::Unread,
            },
        }
    }
}

/// Where a tensor's buffers are.
#[derive(Clone, Copy)]
pub(super) enum DataBytes<'a> {
    /// In the whole file's bytes, at their offsets.
    File(&'a [u8]),
    /// Each read into memory of its own ([`File::fetch`](crate::File::fetch)).
    Fetched(&'a [FetchedBuffer]),
    /// Not read yet: the tensor of a file read through a source, from a
    /// handle that does not read. Every data accessor refuses it
    /// ([`Error::NotRead`]).
    Unread,
}

/// A buffer of a tensor read into memory: its offset in the file, its bytes.
#[derive(Debug)]
pub(crate) struct FetchedBuffer {
    pub(crate) offset: u64,
    pub(crate) bytes: crate::AlignedBytes,
}

/// One verified tensor of a file, borrowing the file's bytes.
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    data: DataBytes<'a>,
    t: fb::Tensor<'a>,
    /// The element type, and the file's checksum algorithm (format 1.2).
    facts: Facts,
    alignment: u64,
    /// The byte range of a dense tensor's non-empty values, when the
    /// reader's index of names knew it: `data()` then reads no vtable.
    values: Option<(u64, u64)>,
}

/// A tensor's element type and its file's checksum algorithm, in one word.
/// As two byte fields they were written by two byte stores and then copied
/// (a `TensorRef` moved out of the `Option` a look-up returns) by one 8-byte
/// load, which the processor cannot forward from those stores: a stall that
/// measured about 7 ns of a 90 ns open-and-look-up per tensor.
#[derive(Clone, Copy)]
struct Facts(u64);

impl Facts {
    fn new(element_type: ElementType, sums: Algorithms) -> Self {
        Facts(
            u64::from(element_type.to_wire())
                | (u64::from(sums.checksum.0) << 8)
                | (u64::from(sums.digest.0) << 16),
        )
    }

    fn element_type(self) -> ElementType {
        match ElementType::from_wire(self.0 as u8) {
            Some(e) => e,
            None => unreachable!("made from an ElementType"),
        }
    }

    fn checksum(self) -> fb::ChecksumAlgorithm {
        fb::ChecksumAlgorithm((self.0 >> 8) as u8)
    }

    fn digest(self) -> fb::DigestAlgorithm {
        fb::DigestAlgorithm((self.0 >> 16) as u8)
    }
}

impl std::fmt::Debug for TensorRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRef")
            .field("name", &self.name())
            .field("element_type", &self.element_type())
            .field("shape", &self.dims())
            .finish()
    }
}

impl<'a> TensorRef<'a> {
    #[inline]
    pub(super) fn new(
        data: DataBytes<'a>,
        t: fb::Tensor<'a>,
        file_alignment: u64,
        sums: Algorithms,
    ) -> Self {
        let (element_type, alignment) = (t.element_type().0, t.alignment());
        TensorRef::with_facts(data, t, element_type, alignment, file_alignment, sums, None)
    }

    /// [`TensorRef::new`] with the tensor's element type and `alignment`
    /// field already read, and its dense values' range if known (the
    /// reader's index of names keeps them).
    #[inline]
    pub(super) fn with_facts(
        data: DataBytes<'a>,
        t: fb::Tensor<'a>,
        element_type: u8,
        alignment: u64,
        file_alignment: u64,
        sums: Algorithms,
        values: Option<(u64, u64)>,
    ) -> Self {
        let element_type = match ElementType::from_wire(element_type) {
            Some(e) => e,
            // `Reader::new` rejected every tensor with an unknown element type.
            None => unreachable!("element type verified at open"),
        };
        let alignment = match alignment {
            0 => file_alignment,
            a => a,
        };
        TensorRef {
            data,
            t,
            facts: Facts::new(element_type, sums),
            alignment,
            values,
        }
    }

    /// This tensor over `buffers`, which must hold every non-empty buffer
    /// of the tensor at its offset ([`File::fetch`](crate::File::fetch)
    /// reads them).
    pub(crate) fn with_fetched(self, buffers: &'a [FetchedBuffer]) -> Self {
        TensorRef {
            data: DataBytes::Fetched(buffers),
            ..self
        }
    }

    /// A pointer to `data` (bytes of one of this tensor's buffers read into
    /// memory of its own) derived from that memory's allocation, for an
    /// export a consumer may write to; `None` for bytes in a file's map.
    pub(crate) fn fetched_ptr(&self, data: &[u8]) -> Option<std::ptr::NonNull<u8>> {
        let DataBytes::Fetched(buffers) = self.data else {
            return None;
        };
        let at = data.as_ptr() as usize;
        buffers.iter().find_map(|b| {
            let bytes = b.bytes.as_slice();
            let offset = at.checked_sub(bytes.as_ptr() as usize)?;
            (offset.checked_add(data.len())? <= bytes.len()).then(|| {
                let base = b.bytes.writable_ptr().as_ptr().wrapping_add(offset);
                std::ptr::NonNull::new(base).unwrap_or(b.bytes.writable_ptr())
            })
        })
    }

    /// Checks what opening leaves for later: the index contents of a sparse
    /// tensor (ADR-0003); `Ok` for every other tensor. This reads the data.
    pub fn check_sparse_index(&self) -> Result<()> {
        if self.is_descriptor_only() {
            return Ok(());
        }
        match self.layout() {
            Layout::Coo { .. } => self.coo().map(drop),
            Layout::Csr { .. } => self.csr().map(drop),
            Layout::Csc { .. } => self.csc().map(drop),
            Layout::Dense | Layout::Strided(_) => Ok(()),
        }
    }

    /// The tensor's name.
    pub fn name(&self) -> &'a str {
        self.t.name()
    }

    /// The stored element type.
    pub fn element_type(&self) -> ElementType {
        self.facts.element_type()
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
        self.t.quantization().map(|q| super::quant::descriptor(&q))
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
            element_type: self.element_type(),
            shape: self.dims(),
            layout: self.layout(),
            quantization: self.quantization(),
            descriptor_only: self.is_descriptor_only(),
            alignment: (self.t.alignment() != 0).then_some(self.t.alignment()),
            metadata: self.metadata().to_map(),
        }
    }

    pub(crate) fn plan(&self) -> Plan {
        match plan_of(&self.t) {
            Ok(p) => p,
            Err(_) => unreachable!("descriptor verified at open"),
        }
    }

    /// Total bytes of the tensor's buffers (layout buffers and quantization
    /// buffers), as its verified descriptor plans them: 0 for a
    /// descriptor-only or an empty tensor (ADR-0007).
    pub fn byte_length(&self) -> u64 {
        self.plan().total()
    }

    /// Where the buffer of `role` lies in the file, `(offset, length)`, read
    /// from the header alone (it never touches the data); `None` when the
    /// tensor has no such buffer. A zero-length buffer gives `(0, 0)`.
    pub fn buffer_range(&self, role: BufferRole) -> Option<(u64, u64)> {
        let at = |b: Option<&fb::Buffer>| match b {
            Some(b) if b.length() > 0 => (b.offset(), b.length()),
            _ => (0, 0),
        };
        if role.is_quantization() {
            let q = self.t.quantization()?;
            self.plan().length(role)?;
            return Some(at(super::quant::buffer(&q, role)));
        }
        let i = self.plan().roles.iter().position(|r| *r == role)?;
        let buffers = self.t.buffers()?;
        (i < buffers.len()).then(|| at(Some(buffers.get(i))))
    }

    fn slice(&self, b: Option<&fb::Buffer>) -> &'a [u8] {
        match b {
            // ADR-007: a zero-length buffer is never dereferenced, wherever it points.
            Some(b) if b.length() > 0 => match self.data {
                DataBytes::File(bytes) => {
                    // Verified at open: the buffer is inside the file.
                    let start = b.offset() as usize;
                    &bytes[start..start + b.length() as usize]
                }
                // Read for this very tensor (`Fetched::allocate`): every
                // non-empty buffer is there, at its offset.
                DataBytes::Fetched(fetched) => fetched
                    .iter()
                    .find(|f| f.offset == b.offset())
                    .map_or(&[], |f| f.bytes.as_slice()),
                // Every accessor that reads data checks first (`require_read`).
                DataBytes::Unread => &[],
            },
            _ => &[],
        }
    }

    /// Every buffer of the tensor with its role, in wire order (the layout's,
    /// then scales, zero points and offsets when quantized): exactly what
    /// [`Writer::add_tensor`](crate::Writer::add_tensor) takes to write the
    /// tensor again. Empty for a descriptor-only tensor.
    pub fn buffers(&self) -> Vec<(BufferRole, &'a [u8])> {
        if self.t.descriptor_only() || !self.is_read() {
            return Vec::new();
        }
        self.plan()
            .buffers()
            .into_iter()
            .map(|(role, _)| (role, self.buffer(role).unwrap_or(&[])))
            .collect()
    }

    /// Where each non-empty buffer of the tensor lies in the file, `(offset,
    /// length)`, in wire order, from the header alone.
    pub(crate) fn data_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.roles()
            .into_iter()
            .filter_map(|role| self.buffer_range(role))
            .filter(|&(_, len)| len > 0)
    }

    /// The role of every buffer the tensor has, in wire order (as
    /// [`buffers`](Self::buffers) lists them), from the header alone.
    pub fn roles(&self) -> Vec<BufferRole> {
        self.plan()
            .buffers()
            .into_iter()
            .map(|(role, _)| role)
            .collect()
    }

    /// The bytes of the buffer of `role`; `None` when the tensor has no such
    /// buffer (or no data at all).
    pub fn buffer(&self, role: BufferRole) -> Option<&'a [u8]> {
        if !self.is_read() {
            return None;
        }
        if role.is_quantization() {
            let q = self.t.quantization()?;
            self.plan().length(role)?;
            return Some(self.slice(super::quant::buffer(&q, role)));
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

    /// The values of a dense tensor whose range the reader's index of names
    /// gave; `None` if it did not.
    #[inline]
    pub(crate) fn dense_values_known(&self) -> Option<&'a [u8]> {
        match (self.values, self.data) {
            // Verified at open: inside the file.
            (Some((start, end)), DataBytes::File(bytes)) => bytes.get(start as usize..end as usize),
            _ => None,
        }
    }

    /// The values buffer of a dense tensor that lists one, read from its
    /// table; `None` otherwise. (`data()` tries [`dense_values_known`]
    /// first.)
    ///
    /// [`dense_values_known`]: Self::dense_values_known
    pub(crate) fn dense_values_listed(&self) -> Option<&'a [u8]> {
        if !self.is_read() {
            return None;
        }
        match self.t.layout_type() {
            fb::Layout::NONE | fb::Layout::Dense => {
                let b = self.t.buffers()?;
                (!b.is_empty()).then(|| self.slice(Some(b.get(0))))
            }
            _ => None,
        }
    }

    /// Whether the tensor's bytes are at hand (always, but for a tensor of
    /// a file read through a source that nothing read yet).
    pub fn is_read(&self) -> bool {
        !matches!(self.data, DataBytes::Unread)
    }

    /// [`Error::NotRead`] for a tensor whose bytes are not at hand.
    pub(crate) fn require_read(&self) -> Result<()> {
        match self.data {
            DataBytes::Unread if !self.is_descriptor_only() => Err(Error::NotRead {
                tensor: self.name().to_owned(),
            }),
            _ => Ok(()),
        }
    }

    pub(crate) fn require_data(&self) -> Result<()> {
        self.require_read()?;
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
