//! Typed zero-copy views of a verified tensor's data: slices of byte-aligned
//! types, packed sub-byte access, sparse views and quantized views.

use crate::ElementType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::pack;

mod blocks;
mod quantized;
pub(crate) mod values;

pub use crate::reader::{Metadata, Shape, Tensors};
pub use quantized::QuantizedView;
pub use values::{VALUE_CHUNK, Values};

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

pub(crate) fn is_row_major(dims: &[u64], strides: &[i64]) -> bool {
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
    pub(crate) bytes: &'a [u8],
    pub(crate) element_type: ElementType,
    pub(crate) len: u64,
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
pub(crate) fn bad_index(
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
    pub(crate) fn new(tensor: &str, t: ElementType, bytes: &'a [u8]) -> Result<Self> {
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
