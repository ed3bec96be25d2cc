//! The tensor field types a derived struct may hold beyond slices and
//! vectors: packed sub-byte data, compressed sparse matrices, COO tensors,
//! quantized tensors (see the table in the parent module).

use crate::element::Element;
use crate::error::{Error, Result};
use crate::pack;
use crate::views::Indices;
use crate::{ElementType, elements::ElementClass};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A packed sub-byte element type: a marker for [`Packed`].
pub trait PackedElement: Copy + Default + fmt::Debug + Send + Sync + 'static {
    /// The stored element type (1, 2 or 4 bits).
    const TYPE: ElementType;
}

macro_rules! packed_markers {
    ($($(#[$doc:meta])* $t:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $t;
        impl PackedElement for $t {
            const TYPE: ElementType = ElementType::$t;
        }
    )*};
}

packed_markers! {
    /// Marker: packed `bool`, one bit per element.
    Bool,
    /// Marker: packed two's-complement 2-bit integers.
    Int2,
    /// Marker: packed unsigned 2-bit integers.
    UInt2,
    /// Marker: packed two's-complement 4-bit integers.
    Int4,
    /// Marker: packed unsigned 4-bit integers.
    UInt4,
    /// Marker: packed OCP FP4 E2M1 codes.
    Float4E2M1FN,
    /// Marker: packed OCP FP6 E2M3 codes (6 bits, spanning bytes).
    Float6E2M3FN,
    /// Marker: packed OCP FP6 E3M2 codes (6 bits, spanning bytes).
    Float6E3M2FN,
}

/// Packed sub-byte elements (LSB-first, as the format stores them), owned or
/// borrowed from a file.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed<'a, P: PackedElement> {
    pub(crate) bytes: Cow<'a, [u8]>,
    pub(crate) len: u64,
    pub(crate) marker: PhantomData<P>,
}

impl<P: PackedElement> fmt::Debug for Packed<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packed")
            .field("type", &P::TYPE)
            .field("len", &self.len)
            .field("codes", &self.codes().collect::<Vec<_>>())
            .finish()
    }
}

impl<P: PackedElement> Packed<'static, P> {
    /// Packs `codes`, each in its low bits (higher bits are ignored).
    pub fn from_codes(codes: impl IntoIterator<Item = u8>) -> Self {
        let mut len = 0u64;
        let bytes =
            crate::pack::pack_codes(codes.into_iter().inspect(|_| len += 1), P::TYPE.bits());
        Packed {
            bytes: Cow::Owned(bytes),
            len,
            marker: PhantomData,
        }
    }

    /// Packs integer values; `None` if one is outside the type's range.
    pub fn from_values(values: impl IntoIterator<Item = i16>) -> Option<Self> {
        let bits = P::TYPE.bits();
        let (min, max) = match P::TYPE.class() {
            ElementClass::SignedInt => (-(1i16 << (bits - 1)), (1i16 << (bits - 1)) - 1),
            _ => (0, (1i16 << bits) - 1),
        };
        let codes: Option<Vec<u8>> = values
            .into_iter()
            .map(|v| (min..=max).contains(&v).then_some(v as u8))
            .collect();
        Some(Self::from_codes(codes?))
    }
}

impl<'a, P: PackedElement> Packed<'a, P> {
    /// Packed bytes holding `len` elements; they must be exactly
    /// ceil(len * bits / 8) bytes long.
    pub fn from_bytes(bytes: impl Into<Cow<'a, [u8]>>, len: u64) -> Result<Self> {
        let bytes = bytes.into();
        let expected =
            crate::count::packed_len(len, P::TYPE.bits()).ok_or(Error::SizeOverflow {
                tensor: String::new(),
                field: "packed length",
            })?;
        if expected != bytes.len() as u64 {
            return Err(Error::BufferLength {
                tensor: String::new(),
                buffer: "values",
                expected,
                found: bytes.len() as u64,
            });
        }
        Ok(Packed {
            bytes,
            len,
            marker: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The packed bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the bytes are borrowed (from a file) rather than owned.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.bytes, Cow::Borrowed(_))
    }

    /// The raw code of element `i`.
    pub fn code(&self, i: u64) -> Option<u8> {
        (i < self.len)
            .then(|| pack::code_at(&self.bytes, P::TYPE.bits(), i))
            .flatten()
    }

    /// Element `i` as an integer, sign-extended for signed types.
    pub fn get(&self, i: u64) -> Option<i16> {
        Some(pack::int_value(P::TYPE, self.code(i)?))
    }

    /// Every raw code.
    pub fn codes(&self) -> impl ExactSizeIterator<Item = u8> + '_ {
        pack::unpack_codes(&self.bytes, P::TYPE.bits(), self.len)
    }

    /// Every element as an integer.
    pub fn values(&self) -> impl ExactSizeIterator<Item = i16> + '_ {
        (0..self.len as usize).map(|i| self.get(i as u64).unwrap_or(0))
    }
}

/// Seals [`SparseIndex`]: the views hand out indices as `i32` or `i64` only.
mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// An index type of sparse tensors: `i32` or `i64`.
pub trait SparseIndex: Element + sealed::Sealed {
    #[doc(hidden)]
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]>;
    #[doc(hidden)]
    fn as_indices(slice: &[Self]) -> Indices<'_>;
}

impl SparseIndex for i32 {
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]> {
        match indices {
            Indices::I32(s) => Some(s),
            Indices::I64(_) => None,
        }
    }
    fn as_indices(slice: &[Self]) -> Indices<'_> {
        Indices::I32(slice)
    }
}

impl SparseIndex for i64 {
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]> {
        match indices {
            Indices::I64(s) => Some(s),
            Indices::I32(_) => None,
        }
    }
    fn as_indices(slice: &[Self]) -> Indices<'_> {
        Indices::I64(slice)
    }
}

/// A CSR or CSC matrix (the field's `layout` attribute says which; CSR by
/// default): `pointers` has one entry per major row/column plus one.
#[derive(Debug, Clone, PartialEq)]
pub struct Compressed<'a, T: Element, I: SparseIndex = i64> {
    /// `[rows, cols]`.
    pub shape: [u64; 2],
    pub pointers: Cow<'a, [I]>,
    pub indices: Cow<'a, [I]>,
    pub values: Cow<'a, [T]>,
}

impl<'a, T: Element, I: SparseIndex> Compressed<'a, T, I> {
    /// A matrix from its parts (checked when written and when read).
    pub fn new(
        shape: [u64; 2],
        pointers: impl Into<Cow<'a, [I]>>,
        indices: impl Into<Cow<'a, [I]>>,
        values: impl Into<Cow<'a, [T]>>,
    ) -> Self {
        Compressed {
            shape,
            pointers: pointers.into(),
            indices: indices.into(),
            values: values.into(),
        }
    }

    /// Number of stored elements.
    pub fn nnz(&self) -> u64 {
        self.values.len() as u64
    }
}

/// A COO (coordinate list) sparse tensor of any rank: `indices` holds the
/// `nnz x rank` coordinates, row-major, `values` the `nnz` values.
///
/// `canonical` says whether the coordinate rows are sorted and unique. On
/// load it is the file's flag, which the reader checks rather than trusts;
/// on save it is ignored and recomputed from the coordinates, so a file
/// never claims an order its coordinates do not have.
#[derive(Debug, Clone, PartialEq)]
pub struct Coo<'a, T: Element, I: SparseIndex = i64> {
    /// The dense shape.
    pub shape: Vec<u64>,
    pub indices: Cow<'a, [I]>,
    pub values: Cow<'a, [T]>,
    pub canonical: bool,
}

impl<'a, T: Element, I: SparseIndex> Coo<'a, T, I> {
    /// A tensor from its parts (checked when written and when read);
    /// `canonical` is computed from the coordinates.
    pub fn new(
        shape: Vec<u64>,
        indices: impl Into<Cow<'a, [I]>>,
        values: impl Into<Cow<'a, [T]>>,
    ) -> Self {
        let indices = indices.into();
        let canonical = is_sorted_unique::<I>(&indices, shape.len());
        Coo {
            shape,
            indices,
            values: values.into(),
            canonical,
        }
    }

    /// Number of stored elements.
    pub fn nnz(&self) -> u64 {
        self.values.len() as u64
    }
}

/// Whether `rank`-wide coordinate rows are sorted and unique.
pub(crate) fn is_sorted_unique<I: SparseIndex>(indices: &[I], rank: usize) -> bool {
    crate::views::first_unsorted_coo_row(I::as_indices(indices), rank).is_none()
}

/// A dense quantized tensor: stored values, their scales and, for asymmetric
/// quantization, zero points of the storage type. The scheme and expressed
/// type come from the field's attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized<'a, T: Element, S: Element = f32> {
    pub values: Cow<'a, [T]>,
    pub scales: Cow<'a, [S]>,
    pub zero_points: Option<Cow<'a, [T]>>,
}

impl<'a, T: Element, S: Element> Quantized<'a, T, S> {
    /// A quantized tensor from its parts.
    pub fn new(
        values: impl Into<Cow<'a, [T]>>,
        scales: impl Into<Cow<'a, [S]>>,
        zero_points: Option<Cow<'a, [T]>>,
    ) -> Self {
        Quantized {
            values: values.into(),
            scales: scales.into(),
            zero_points,
        }
    }
}

/// A dense quantized tensor with packed sub-byte storage (int4/uint4/int2
/// weights, say): packed values, scales and optional packed zero points (one
/// per scale). The scheme and expressed type come from the field's attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedQuantized<'a, P: PackedElement, S: Element = f32> {
    pub values: Packed<'a, P>,
    pub scales: Cow<'a, [S]>,
    pub zero_points: Option<Packed<'a, P>>,
}

impl<'a, P: PackedElement, S: Element> PackedQuantized<'a, P, S> {
    /// A quantized tensor from its parts.
    pub fn new(
        values: Packed<'a, P>,
        scales: impl Into<Cow<'a, [S]>>,
        zero_points: Option<Packed<'a, P>>,
    ) -> Self {
        PackedQuantized {
            values,
            scales: scales.into(),
            zero_points,
        }
    }
}
