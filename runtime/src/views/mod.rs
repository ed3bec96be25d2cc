//! Typed zero-copy views of a verified tensor's data: slices of byte-aligned
//! types, packed sub-byte access, sparse views and quantized views.

use crate::buffer::BufferRole;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::pack;
use crate::reader::TensorRef;
use crate::{ElementType, Layout};

mod blocks;
mod quantized;
mod values;

pub use crate::reader::{Metadata, Shape, Tensors};
pub use quantized::QuantizedView;
pub use values::{VALUE_CHUNK, Values};

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

    fn layout_mismatch(&self, needed: &'static str, operation: &'static str) -> Error {
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

pub(crate) fn cast<'a, T: Element>(tensor: &str, bytes: &'a [u8]) -> Result<&'a [T]> {
    if bytes.is_empty() {
        // ADR-007: no pointer of an empty buffer is ever used.
        return Ok(&[]);
    }
    bytemuck::try_cast_slice(bytes).map_err(|_| Error::UnalignedMemory {
        tensor: tensor.to_owned(),
        address: bytes.as_ptr() as usize,
        required: std::mem::align_of::<T>(),
    })
}

/// Row-major strides, in elements, of `dims`.
pub fn row_major_strides(dims: &[u64]) -> Vec<i64> {
    let mut strides = vec![0i64; dims.len()];
    let mut acc: i64 = 1;
    for i in (0..dims.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(dims[i] as i64);
    }
    strides
}

fn is_row_major(dims: &[u64], strides: &[i64]) -> bool {
    // Dimensions of size 1 may carry any stride; an empty tensor is contiguous.
    dims.contains(&0)
        || row_major_strides(dims)
            .iter()
            .zip(strides)
            .zip(dims)
            .all(|((a, b), d)| *d == 1 || a == b)
}

/// Zero-copy access to packed elements of at most 8 bits.
#[derive(Debug, Clone, Copy)]
pub struct PackedView<'a> {
    bytes: &'a [u8],
    element_type: ElementType,
    len: u64,
}

impl<'a> PackedView<'a> {
    /// Number of logical elements.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The packed bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The raw code of element `i` (the low `bits` bits).
    pub fn code(&self, i: u64) -> Option<u8> {
        (i < self.len)
            .then(|| pack::code_at(self.bytes, self.element_type.bits(), i))
            .flatten()
    }
    /// Every element's raw code (the low `bits` bits), in order: one byte
    /// per element, as `ml_dtypes` and the C API hold sub-byte types.
    pub fn codes(&self) -> impl ExactSizeIterator<Item = u8> + 'a {
        pack::unpack_codes(self.bytes, self.element_type.bits(), self.len)
    }
    /// Element `i` as an integer: sign-extended for signed types.
    pub fn get(&self, i: u64) -> Option<i16> {
        Some(pack::int_value(self.element_type, self.code(i)?))
    }
    /// Every element as an integer.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = i16> + '_ {
        (0..self.len as usize).map(|i| self.get(i as u64).unwrap_or(0))
    }
}

/// The error for a sparse index or pointer at `position` of `buffer`.
fn bad_index(
    tensor: &str,
    buffer: &'static str,
    position: usize,
    value: i64,
    reason: &'static str,
) -> Error {
    Error::InvalidSparseIndex {
        tensor: tensor.to_owned(),
        buffer,
        position: position as u64,
        value,
        reason,
    }
}

/// Checks COO coordinates (`nnz x rank`, row-major) against `dims`: each
/// within its dimension and, when the tensor claims to be `canonical`,
/// rows sorted and unique. The one check of the reader's view and of the
/// derive's COO fields before they are written.
pub(crate) fn check_coo_indices(
    tensor: &str,
    dims: &[u64],
    indices: Indices<'_>,
    canonical: bool,
) -> Result<()> {
    let bad = |position, value, reason| bad_index(tensor, "indices", position, value, reason);
    let rank = dims.len();
    if rank == 0 && !indices.is_empty() {
        return Err(bad(0, indices.get(0), "a rank-0 tensor has no coordinates"));
    }
    for i in 0..indices.len() {
        let v = indices.get(i);
        let bound = dims[i % rank];
        if v < 0 || v as u64 >= bound {
            return Err(bad(i, v, "coordinate outside its dimension"));
        }
    }
    if canonical && let Some(at) = first_unsorted_coo_row(indices, rank) {
        // The producer's claim is checked, not trusted.
        return Err(bad(
            at * rank,
            indices.get(at * rank),
            "canonical COO coordinates must be sorted and unique",
        ));
    }
    Ok(())
}

/// The first coordinate row that is not lexicographically greater than the
/// one before it (so the rows are not sorted and unique), if any.
pub(crate) fn first_unsorted_coo_row(indices: Indices<'_>, rank: usize) -> Option<usize> {
    if rank == 0 {
        return None;
    }
    let rows = indices.len() / rank;
    (1..rows).find(|&row| {
        let earlier = (0..rank).map(|d| indices.get((row - 1) * rank + d));
        let this = (0..rank).map(|d| indices.get(row * rank + d));
        this.cmp(earlier) != std::cmp::Ordering::Greater
    })
}

/// Sparse index (or pointer) data, in its stored width.
#[derive(Debug, Clone, Copy)]
pub enum Indices<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl<'a> Indices<'a> {
    fn new(tensor: &str, t: ElementType, bytes: &'a [u8]) -> Result<Self> {
        Ok(match t {
            ElementType::Int32 => Indices::I32(cast(tensor, bytes)?),
            _ => Indices::I64(cast(tensor, bytes)?),
        })
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            Indices::I32(s) => s.len(),
            Indices::I64(s) => s.len(),
        }
    }
    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entry `i`, widened. Panics if `i >= len()`, like slice indexing.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Indices::I32(s) => i64::from(s[i]),
            Indices::I64(s) => s[i],
        }
    }
}

/// A checked COO tensor.
#[derive(Debug, Clone, Copy)]
pub struct CooView<'a> {
    pub nnz: u64,
    pub rank: usize,
    /// nnz x rank coordinates, row-major.
    pub indices: Indices<'a>,
    /// The packed or byte-aligned values' bytes.
    pub values: &'a [u8],
    pub element_type: ElementType,
}

/// A checked CSR or CSC tensor.
#[derive(Debug, Clone, Copy)]
pub struct CompressedView<'a> {
    pub nnz: u64,
    pub pointers: Indices<'a>,
    pub indices: Indices<'a>,
    pub values: &'a [u8],
    pub element_type: ElementType,
}

impl<'a> CooView<'a> {
    /// The values as a typed slice.
    pub fn values_as<T: Element>(&self) -> Result<&'a [T]> {
        typed_values(self.element_type, self.values)
    }
}

impl<'a> CompressedView<'a> {
    /// The values as a typed slice.
    pub fn values_as<T: Element>(&self) -> Result<&'a [T]> {
        typed_values(self.element_type, self.values)
    }
}

fn typed_values<T: Element>(et: ElementType, bytes: &[u8]) -> Result<&[T]> {
    if T::TYPE != et {
        return Err(Error::TypeMismatch {
            tensor: "sparse values".into(),
            requested: T::TYPE,
            found: et,
        });
    }
    cast("sparse values", bytes)
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
