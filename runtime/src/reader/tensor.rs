//! The borrowed handle to one tensor of a verified file, and where its
//! bytes are.

use super::metadata::Metadata;
use super::semantics::{layout_params, plan_of};
use super::shape::Shape;
use crate::ElementType;
use crate::buffer::BufferRole;
use crate::checksum::Algorithms;
use crate::checksum::ChecksumAlgorithm;
use crate::descriptor::{Dim, Layout, TensorDescriptor};
use crate::digest::{DIGEST_LEN, Digest, DigestAlgorithm};
use crate::element::Element;
use crate::elements::ElementClass;
use crate::error::{Error, Result};
use crate::generated::fb;
use crate::quantization::Quantization;
use crate::slice::{self, Gathered, SliceData, SliceRange, Stored, check_ranges, unit_of};
use crate::validate::{LayoutParams, Plan};
use crate::views::values::{VALUE_CHUNK, Values, decode_chunks, strided_chunks};
use crate::views::{
    CompressedView, CooView, Indices, PackedView, bad_index, cast, check_coo_indices, is_row_major,
    row_major_strides,
};

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
    pub(crate) bytes: crate::aligned::AlignedBytes,
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
// Typed views of the data (zero-copy).
impl<'a> TensorRef<'a> {
    /// The dense values' bytes (row-major, or strided as the layout says).
    /// Empty for an empty tensor; [`Error::NoData`] for a descriptor-only one.
    #[inline]
    pub fn data(&self) -> Result<&'a [u8]> {
        // The common case first, inlined: a dense tensor's one buffer (a
        // tensor that lists buffers has data: verified at open).
        if let Some(values) = self.dense_values_known() {
            return Ok(values);
        }
        // By value: a reference would make the caller keep its tensor in
        // memory even on the path above, and read it back in a form the
        // processor cannot forward from the stores that wrote it.
        Self::data_read(*self)
    }

    /// [`data`](Self::data) from the tensor's fields.
    #[inline(never)]
    fn data_read(self) -> Result<&'a [u8]> {
        if let Some(values) = self.dense_values_listed() {
            return Ok(values);
        }
        self.require_data()?;
        match self.dense_values() {
            Some(values) => Ok(values),
            None => Err(Error::LayoutMismatch {
                tensor: self.name().to_owned(),
                found: self.plan().layout,
                needed: "dense",
                operation: "data()",
            }),
        }
    }

    /// The values as a slice of `T`, without copying. The tensor must be
    /// dense and contiguous and hold `T::TYPE`. An empty tensor gives `&[]`.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        self.check_type::<T>()?;
        if let Layout::Strided(strides) = self.layout()
            && !is_row_major(&self.dims_u64(), &strides)
        {
            return Err(Error::NotContiguous {
                tensor: self.name().to_owned(),
                strides,
            });
        }
        cast(self.name(), self.data()?)
    }

    /// The values as a strided view: the element slice plus strides in
    /// elements (row-major strides for a contiguous tensor).
    pub fn as_strided<T: Element>(&self) -> Result<(&'a [T], Vec<i64>)> {
        self.check_type::<T>()?;
        Ok((cast(self.name(), self.data()?)?, self.element_strides()))
    }

    /// The strides, in elements, of a dense or strided tensor's values: the
    /// layout's own, or row-major ones for a dense tensor.
    pub(crate) fn element_strides(&self) -> Vec<i64> {
        match self.layout() {
            Layout::Strided(s) => s,
            _ => row_major_strides(&self.dims_u64()),
        }
    }

    /// A packed view of a sub-byte (or any integer/bool) dense tensor.
    pub fn packed(&self) -> Result<PackedView<'a>> {
        self.refuse_blocks("a packed view")?;
        let bits = self.element_type().bits();
        if bits > 8 {
            return Err(Error::InvalidField {
                tensor: self.name().to_owned(),
                field: "element_type".into(),
                value: self.element_type().name().into(),
                reason: "packed views are for types of at most 8 bits".into(),
            });
        }
        if let Layout::Strided(_) = self.layout() {
            return Err(self.layout_mismatch("dense", "packed()"));
        }
        let data = self.data()?;
        Ok(PackedView {
            bytes: data,
            element_type: self.element_type(),
            len: self.element_count().unwrap_or(0),
        })
    }

    /// Refuses `operation` on a tensor whose values are a block format's
    /// blocks (format 1.4): its bytes are not elements of its shape.
    pub(crate) fn refuse_blocks(&self, operation: &str) -> Result<()> {
        match self.quantization().and_then(|q| q.block_format) {
            None => Ok(()),
            Some(format) => Err(Error::InvalidField {
                tensor: self.name().to_owned(),
                field: "quantization.block_format".into(),
                value: format.name().into(),
                reason: format!(
                    "its values are {format} blocks, not elements of its shape: {operation} \
                     needs elements; dequantize them (quantized()) or read the values buffer"
                ),
            }),
        }
    }

    fn check_type<T: Element>(&self) -> Result<()> {
        self.refuse_blocks("a typed view")?;
        if T::TYPE != self.element_type()
            || std::mem::size_of::<T>() as u64 * 8 != u64::from(T::TYPE.bits())
        {
            return Err(Error::TypeMismatch {
                tensor: self.name().to_owned(),
                requested: T::TYPE,
                found: self.element_type(),
            });
        }
        Ok(())
    }

    pub(crate) fn dims_u64(&self) -> Vec<u64> {
        self.shape().to_wire()
    }

    /// A COO view; the coordinates are checked against the shape first.
    pub fn coo(&self) -> Result<CooView<'a>> {
        self.require_data()?;
        let Layout::Coo {
            nnz,
            index_type,
            canonical,
        } = self.layout()
        else {
            return Err(self.layout_mismatch("coo", "coo()"));
        };
        let dims = self.dims_u64();
        let indices = Indices::new(
            self.name(),
            index_type,
            self.buffer(BufferRole::Indices).unwrap_or(&[]),
        )?;
        check_coo_indices(self.name(), &dims, indices, canonical)?;
        let rank = dims.len();
        Ok(CooView {
            nnz,
            rank,
            indices,
            values: self.buffer(BufferRole::Values).unwrap_or(&[]),
            element_type: self.element_type(),
        })
    }

    /// A CSR view; pointers and indices are checked first.
    pub fn csr(&self) -> Result<CompressedView<'a>> {
        self.compressed(true)
    }

    /// A CSC view; pointers and indices are checked first.
    pub fn csc(&self) -> Result<CompressedView<'a>> {
        self.compressed(false)
    }

    fn compressed(&self, rows: bool) -> Result<CompressedView<'a>> {
        self.require_data()?;
        let (nnz, index_type) = match (self.layout(), rows) {
            (Layout::Csr { nnz, index_type }, true) | (Layout::Csc { nnz, index_type }, false) => {
                (nnz, index_type)
            }
            _ => {
                return Err(self.layout_mismatch(
                    if rows { "csr" } else { "csc" },
                    if rows { "csr()" } else { "csc()" },
                ));
            }
        };
        let dims = self.dims_u64();
        let minor = if rows { dims[1] } else { dims[0] };
        let pointers = Indices::new(
            self.name(),
            index_type,
            self.buffer(BufferRole::Pointers).unwrap_or(&[]),
        )?;
        let indices = Indices::new(
            self.name(),
            index_type,
            self.buffer(BufferRole::Indices).unwrap_or(&[]),
        )?;
        let mut prev = 0i64;
        for i in 0..pointers.len() {
            let p = pointers.get(i);
            if i == 0 && p != 0 {
                return Err(self.bad_index("pointers", 0, p, "the first pointer must be 0"));
            }
            if p < prev {
                return Err(self.bad_index("pointers", i, p, "pointers must not decrease"));
            }
            prev = p;
        }
        if prev as u64 != nnz {
            return Err(self.bad_index(
                "pointers",
                pointers.len().saturating_sub(1),
                prev,
                "the last pointer must equal nnz",
            ));
        }
        for i in 0..indices.len() {
            let v = indices.get(i);
            if v < 0 || v as u64 >= minor {
                return Err(self.bad_index("indices", i, v, "index outside its dimension"));
            }
        }
        Ok(CompressedView {
            nnz,
            pointers,
            indices,
            values: self.buffer(BufferRole::Values).unwrap_or(&[]),
            element_type: self.element_type(),
        })
    }

    pub(crate) fn layout_mismatch(&self, needed: &'static str, operation: &'static str) -> Error {
        Error::LayoutMismatch {
            tensor: self.name().to_owned(),
            found: self.plan().layout,
            needed,
            operation,
        }
    }

    fn bad_index(
        &self,
        buffer: &'static str,
        position: usize,
        value: i64,
        reason: &'static str,
    ) -> Error {
        bad_index(self.name(), buffer, position, value, reason)
    }
}

// Values as numbers, a chunk at a time (`views::Values`).
impl<'a> TensorRef<'a> {
    /// How many values [`for_each_value_chunk`](Self::for_each_value_chunk)
    /// hands over: a sparse tensor's `nnz`, every other tensor's element
    /// count (0 when it is dynamic or descriptor-only).
    pub fn value_count(&self) -> u64 {
        if self.is_descriptor_only() {
            return 0;
        }
        match self.layout() {
            Layout::Coo { nnz, .. } | Layout::Csr { nnz, .. } | Layout::Csc { nnz, .. } => nnz,
            Layout::Dense | Layout::Strided(_) => self.element_count().unwrap_or(0),
        }
    }

    /// The values this tensor holds, handed to `f` at most [`VALUE_CHUNK`]
    /// at a time: a dense tensor's elements and a strided tensor's (its
    /// logical elements in row-major order, never the gaps between them), a
    /// sparse tensor's stored values, a quantized tensor's values dequantized (as
    /// [`QuantizedView::dequantize`] computes them). Every value is decoded
    /// exactly (see [`Values`]). Memory is one chunk, whatever the tensor's
    /// size. Complex tensors have no real values: [`Error::InvalidField`]; a
    /// descriptor-only tensor is [`Error::NoData`].
    ///
    /// [`QuantizedView::dequantize`]: crate::views::QuantizedView::dequantize
    pub fn for_each_value_chunk(&self, mut f: impl FnMut(Values<'_>)) -> Result<()> {
        let t = self.element_type();
        if t.class() == ElementClass::Complex {
            return Err(Error::InvalidField {
                tensor: self.name().to_owned(),
                field: "element_type".into(),
                value: t.name().into(),
                reason: "complex values have no order: no real values to summarize".into(),
            });
        }
        if self.quantization().is_some() {
            let q = self.quantized()?;
            let mut chunk = vec![0f32; VALUE_CHUNK];
            let mut start = 0;
            while start < q.len() {
                let n = (q.len() - start).min(VALUE_CHUNK as u64) as usize;
                q.dequantize_into(start, &mut chunk[..n]);
                f(Values::F32(&chunk[..n]));
                start += n as u64;
            }
            return Ok(());
        }
        let bytes = match self.layout() {
            Layout::Strided(strides) => {
                let bytes = self.data()?;
                strided_chunks(bytes, t, &self.dims_u64(), &strides, &mut f);
                return Ok(());
            }
            Layout::Dense => self.data()?,
            Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. } => {
                self.buffer(BufferRole::Values).unwrap_or(&[])
            }
        };
        let count = usize::try_from(self.value_count()).unwrap_or(usize::MAX);
        decode_chunks(bytes, t, count, &mut f);
        Ok(())
    }
}

// Slices (`crate::slice`).
impl<'a> TensorRef<'a> {
    /// Reads `self[ranges]` (one range per dimension) into a dense,
    /// row-major buffer, touching only the bytes the slice covers. Dense
    /// and strided tensors of every element type; sparse tensors are
    /// [`Error::LayoutMismatch`], descriptor-only ones [`Error::NoData`],
    /// bad ranges [`Error::InvalidSlice`] naming the dimension.
    pub fn read_slice(&self, ranges: &[SliceRange]) -> Result<SliceData> {
        self.require_data()?;
        self.check_sliceable()?;
        let shape = check_ranges(self.name(), ranges, &self.shape().to_wire())?;
        // A dense tensor's slice is at most its element count, which its
        // verified values buffer holds. A strided one may repeat its bytes
        // (a stride of 0 broadcasts): its slice is held to the expansion
        // limit before anything is allocated.
        if let Layout::Strided(_) = self.layout() {
            let unit = unit_of(self.element_type()) as u64;
            let out = shape
                .iter()
                .try_fold(unit, |acc, &d| acc.checked_mul(d))
                .unwrap_or(u64::MAX);
            crate::limits::check_expansion(self.name(), self.byte_length(), out)?;
        }
        let mut out = Gathered::new(self.name(), self.element_type(), shape)?;
        let at = vec![0; ranges.len()];
        self.gather_into(ranges, &mut out, &at)?;
        Ok(out.finish())
    }

    /// [`Error::LayoutMismatch`] for a layout a slice does not read.
    pub(crate) fn check_sliceable(&self) -> Result<()> {
        self.refuse_blocks("a slice")?;
        if !matches!(self.layout(), Layout::Dense | Layout::Strided(_)) {
            return Err(Error::LayoutMismatch {
                tensor: self.name().to_owned(),
                found: self.plan().layout,
                needed: "dense or strided",
                operation: "a slice",
            });
        }
        Ok(())
    }

    /// Copies `self[ranges]` into `out` at position `at` (a coordinate of
    /// the output); `ranges` are checked against the dims by the caller.
    pub(crate) fn gather_into(
        &self,
        ranges: &[SliceRange],
        out: &mut Gathered,
        at: &[u64],
    ) -> Result<()> {
        let src = self.stored(self.data()?, 0);
        slice::gather(&src, ranges, out, at)
    }

    /// The part of the values buffer from element `base` on, as a gather reads it.
    pub(crate) fn stored<'v>(&self, values: &'v [u8], base: u64) -> Stored<'v>
    where
        'a: 'v,
    {
        Stored {
            name: self.name(),
            bits: self.element_type().bits(),
            strides: self.element_strides(),
            values,
            base,
        }
    }
}

// Integrity: what the header records to check the bytes (checksums,
// format 1.2, ADR-0009; digests, format 1.4, ADR-0012).
impl<'a> TensorRef<'a> {
    /// The checksum the header records for each buffer, with the
    /// buffer's role, in [`buffers`](Self::buffers) order; `None` when the
    /// file has no checksums (format 1.0/1.1 files, or written without).
    pub fn checksums(&self) -> Option<Vec<(BufferRole, u64)>> {
        let sums = self.t.checksums()?;
        Some(
            self.buffers()
                .into_iter()
                .zip(sums.iter())
                .map(|((role, _), sum)| (role, sum))
                .collect(),
        )
    }

    /// The digest the header records for each buffer (format 1.4), with
    /// the buffer's role, in [`buffers`](Self::buffers) order, and their
    /// algorithm; `None` when the tensor has none, or the file's algorithm
    /// is one this build does not know (verifying then refuses it).
    pub fn digests(&self) -> Option<(DigestAlgorithm, Vec<(BufferRole, Digest)>)> {
        let algorithm = DigestAlgorithm::from_wire(self.facts.digest()).ok()??;
        let bytes = self.t.digests()?.bytes();
        let digests = self
            .buffers()
            .into_iter()
            .zip(bytes.chunks_exact(DIGEST_LEN))
            .filter_map(|((role, _), d)| Some((role, Digest::from_slice(d)?)))
            .collect();
        Some((algorithm, digests))
    }

    /// Whether the header records digests of this tensor's buffers, of any
    /// algorithm (one this build does not know included: verifying refuses
    /// it).
    pub(crate) fn records_digests(&self) -> bool {
        self.t.digests().is_some()
    }

    /// Reads every buffer of the tensor and compares it with what the
    /// header records of it: its checksum (format 1.2) and its digest
    /// (format 1.4), each where the file has them. `Ok(true)` when all
    /// match, `Ok(false)` when the tensor records neither,
    /// [`Error::ChecksumMismatch`] or [`Error::DigestMismatch`] naming the
    /// buffer and both values otherwise. This reads the data; opening does
    /// not.
    pub fn verify_checksum(&self) -> Result<bool> {
        let digests = self.verify_digests()?;
        Ok(self.verify_crc()? || digests)
    }

    /// The digests part of [`verify_checksum`](Self::verify_checksum).
    fn verify_digests(&self) -> Result<bool> {
        if self.t.digests().is_none() {
            return Ok(false);
        }
        let wire = DigestAlgorithm::from_wire(self.facts.digest());
        let Some(algorithm) = self.known(wire, "digest_algorithm")? else {
            return Ok(false);
        };
        self.require_read()?;
        let Some((_, digests)) = self.digests() else {
            return Ok(false);
        };
        for ((role, bytes), (_, expected)) in self.buffers().into_iter().zip(digests) {
            let found = algorithm.of(bytes);
            if found != expected {
                return Err(Error::DigestMismatch {
                    tensor: self.name().to_owned(),
                    buffer: role.name(),
                    algorithm: algorithm.name(),
                    expected: expected.to_hex(),
                    found: found.to_hex(),
                });
            }
        }
        Ok(true)
    }

    /// The checksums part of [`verify_checksum`](Self::verify_checksum).
    fn verify_crc(&self) -> Result<bool> {
        let Some(sums) = self.checksums() else {
            return Ok(false);
        };
        self.require_read()?;
        let wire = ChecksumAlgorithm::from_wire(self.facts.checksum());
        let Some(algorithm) = self.known(wire, "checksum_algorithm")? else {
            return Ok(false);
        };
        for ((role, bytes), (_, expected)) in self.buffers().into_iter().zip(sums) {
            let found = algorithm.of(bytes);
            if found != expected {
                return Err(Error::ChecksumMismatch {
                    tensor: self.name().to_owned(),
                    buffer: role.name(),
                    algorithm: algorithm.name(),
                    expected,
                    found,
                });
            }
        }
        Ok(true)
    }

    /// The algorithm a wire value names (`Ok(None)`: none), or, for a value
    /// this build does not know, [`Error::InvalidField`] on `field`:
    /// refused when checked, never at open.
    fn known<A>(&self, wire: Result<Option<A>, u8>, field: &str) -> Result<Option<A>> {
        wire.map_err(|value| Error::InvalidField {
            tensor: self.name().to_owned(),
            field: field.into(),
            value: value.to_string(),
            reason: format!("a {} this reader does not know", field.replace('_', " ")),
        })
    }
}

#[cfg(feature = "ndarray")]
impl<'a> TensorRef<'a> {
    /// An `ndarray` view of a dense or strided tensor, without copying.
    /// ndarray checks that every strided index stays inside the buffer.
    pub fn as_ndarray<T: Element>(&self) -> Result<ndarray::ArrayViewD<'a, T>> {
        let (values, strides) = self.as_strided::<T>()?;
        let dims: Vec<usize> = self.dims_u64().iter().map(|&d| d as usize).collect();
        let strides: Vec<usize> = strides.iter().map(|&s| s as usize).collect();
        let view = if dims.contains(&0) {
            // An empty view has no strides to honour (and ndarray rejects any
            // custom strides over an empty slice).
            ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&dims), values)
        } else {
            let shape =
                ndarray::ShapeBuilder::strides(ndarray::IxDyn(&dims), ndarray::IxDyn(&strides));
            ndarray::ArrayViewD::from_shape(shape, values)
        };
        view.map_err(|e| Error::InvalidField {
            tensor: self.name().to_owned(),
            field: "layout.strides".into(),
            value: format!("{strides:?}"),
            reason: format!("not a valid ndarray view: {e}"),
        })
    }
}

fn wire_type(v: u8) -> ElementType {
    match ElementType::from_wire(v) {
        Some(t) => t,
        None => unreachable!("element type verified at open"),
    }
}
