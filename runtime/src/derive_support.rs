//! What `#[derive(Tensors)]`, `#[derive(Descriptor)]` and `#[derive(Element)]`
//! stand on: the tensor field types a derived struct may hold, the traits the
//! generated code implements, and (in [`private`], re-exported as
//! `hurray::__private`) the helpers it calls.
//!
//! Field types and what they store:
//!
//! | field type | tensor | on load |
//! | --- | --- | --- |
//! | `&'a [T]` (`T: Element`) | dense, shape `[len]` or from `#[hurray(shape)]` | borrowed |
//! | `Vec<T>` | the same | copied |
//! | [`Packed<'a, P>`] | packed sub-byte (`P`: [`Int4`], [`UInt4`], [`Int2`], [`UInt2`], [`Bool`], [`Float4E2M1FN`]) | borrowed |
//! | [`Compressed<'a, T, I>`] | CSR (default) or CSC, rank 2, `I` = `i32` or `i64` | borrowed |
//! | [`Quantized<'a, T, S>`] | dense storage `T` with scales `S` and optional zero points | borrowed |
//! | `ndarray::ArrayView<'a, T, D>` (feature `ndarray`) | dense, the array's shape | borrowed |
//! | `ndarray::Array<T, D>` (feature `ndarray`) | dense, the array's shape | copied |
//! | [`PackedQuantized<'a, P, S>`] | the same with packed sub-byte storage | borrowed |
//! | `Option<F>` | an optional tensor of field type `F` | `None` when absent |
//! | a struct deriving `Tensors` | its tensors, named `field.inner` | as that struct |

use crate::descriptor::{Dim, TensorDescriptor};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::pack;
use crate::reader::{File, Reader, TensorRef};
use crate::views::Indices;
use crate::writer::Writer;
use crate::{ElementClass, ElementType};
use std::borrow::Cow;
use std::fmt;
use std::io::Write;
use std::marker::PhantomData;
use std::path::Path;

/// A struct whose fields are tensors: what `#[derive(Tensors)]` implements.
///
/// `'a` is the lifetime of the file data the struct may borrow on load. The
/// derive also generates inherent `descriptors`, `save`, `write_to`, `load`
/// and `from_reader` methods that call these.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a struct of tensors",
    label = "a field of this type is read as a nested struct of tensors",
    note = "derive `hurray::Tensors` for `{Self}`, or use a tensor field type (`&'a [T]`, `Vec<T>`, `Packed`, `Compressed`, `Quantized`)"
)]
pub trait TensorSet<'a>: Sized {
    /// Appends the descriptor of every tensor, names prefixed by `prefix`.
    fn describe_tensors(&self, prefix: &str, out: &mut Vec<TensorDescriptor>) -> Result<()>;

    /// Writes every tensor to `sink` (a [`Writer`]), names prefixed by `prefix`.
    fn write_tensors(&self, prefix: &str, sink: &mut dyn TensorSink) -> Result<()>;

    /// Reads every tensor named with `prefix`, checking each against the
    /// declared element type, rank, fixed dimensions, layout and quantization.
    fn read_tensors(reader: Reader<'a>, prefix: &str) -> Result<Self>;

    /// The descriptors of every tensor.
    fn tensor_descriptors(&self) -> Result<Vec<TensorDescriptor>> {
        let mut out = Vec::new();
        self.describe_tensors("", &mut out)?;
        Ok(out)
    }

    /// Writes the tensors as a complete Hurray file to `out`; returns its length.
    fn write_file<W: Write>(&self, out: W) -> Result<u64> {
        let mut w = Writer::new(out)?;
        self.write_tensors("", &mut w)?;
        w.finish()
    }

    /// Writes the tensors to `path` atomically; returns the file length.
    fn save_file(&self, path: &Path) -> Result<u64> {
        let mut w = Writer::create(path)?;
        self.write_tensors("", &mut w)?;
        w.finish()
    }

    /// Reads the struct from a verified file, borrowing its bytes.
    fn load_file(file: &'a File) -> Result<Self> {
        Self::read_tensors(file.reader(), "")
    }
}

/// Where [`TensorSet::write_tensors`] sends tensors: a [`Writer`], or
/// anything else that takes whole tensors.
pub trait TensorSink {
    /// Adds one tensor: its descriptor and the bytes of every buffer it needs.
    fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()>;
}

impl<W: Write> TensorSink for Writer<W> {
    fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()> {
        Writer::add_tensor(self, desc, buffers)
    }
}

/// A marker type that declares one tensor descriptor at compile time: what
/// `#[derive(Descriptor)]` implements.
pub trait StaticDescriptor {
    /// The tensor's name.
    const NAME: &'static str;
    /// The stored element type.
    const ELEMENT_TYPE: ElementType;
    /// The declared shape (dynamic dimensions included).
    const SHAPE: &'static [Dim];

    /// The full descriptor. It is descriptor-only when a dimension is dynamic.
    fn descriptor() -> TensorDescriptor;
}

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
}

/// Packed sub-byte elements (LSB-first, as the format stores them), owned or
/// borrowed from a file.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed<'a, P: PackedElement> {
    bytes: Cow<'a, [u8]>,
    len: u64,
    marker: PhantomData<P>,
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
        let bytes = crate::pack_codes(codes.into_iter().inspect(|_| len += 1), P::TYPE.bits());
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
        let expected = crate::packed_len(len, P::TYPE.bits()).ok_or(Error::SizeOverflow {
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

/// An index type of sparse tensors: `i32` or `i64`.
pub trait SparseIndex: Element + private::Sealed {
    #[doc(hidden)]
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]>;
}

impl private::Sealed for i32 {}
impl private::Sealed for i64 {}

impl SparseIndex for i32 {
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]> {
        match indices {
            Indices::I32(s) => Some(s),
            Indices::I64(_) => None,
        }
    }
}

impl SparseIndex for i64 {
    fn from_indices(indices: Indices<'_>) -> Option<&'_ [Self]> {
        match indices {
            Indices::I64(s) => Some(s),
            Indices::I32(_) => None,
        }
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

/// Items used by generated code. Not public API: no stability promise.
#[doc(hidden)]
pub mod private {
    pub use super::{StaticDescriptor, TensorSet, TensorSink};
    pub use crate::{
        Dim, Element, ElementType, Error, File, Layout, Quantization, QuantizationScheme, Reader,
        Result, TensorDescriptor, Writer,
    };
    pub use std::{
        convert::AsRef,
        io::Write,
        option::Option,
        path::Path,
        primitive::{str, u64},
        vec::Vec,
    };

    use super::*;

    pub trait Sealed {}

    /// The sparse layout a field declares.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum LayoutKind {
        Dense,
        Csr,
        Csc,
    }

    /// The quantization a field declares.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct QuantSpec {
        pub scheme: QuantizationScheme,
        pub expressed_type: ElementType,
    }

    /// What the attributes of one field declare.
    #[derive(Debug, Clone, Copy)]
    pub struct FieldSpec {
        /// The field's tensor name, without prefix.
        pub name: &'static str,
        /// The declared shape, if any.
        pub shape: Option<&'static [Dim]>,
        pub layout: LayoutKind,
        pub quantization: Option<QuantSpec>,
    }

    /// A type a derived struct's field may have.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not a tensor field type",
        label = "not a tensor field type",
        note = "tensor fields are `&'a [T]` or `Vec<T>` with `T: hurray::Element`, `Packed`, `Compressed` or `Quantized`"
    )]
    pub trait TensorField<'a>: Sized {
        /// The descriptor of this value, named `name`.
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor>;
        /// The bytes of every buffer, in on-wire order.
        fn buffers(&self) -> Vec<&[u8]>;
        /// Reads the field from `t`, checking it against `spec`.
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self>;
    }

    /// `prefix` + `name`.
    pub fn join(prefix: &str, name: &str) -> String {
        let mut s = String::with_capacity(prefix.len() + name.len());
        s.push_str(prefix);
        s.push_str(name);
        s
    }

    /// The prefix of a nested struct's tensors: `prefix` + `name` + `.`.
    pub fn nested(prefix: &str, name: &str) -> String {
        let mut s = join(prefix, name);
        s.push('.');
        s
    }

    /// The operations of one field type, as function pointers: built once per
    /// field (where an unsatisfied bound is reported, once), then called
    /// without further bounds.
    pub struct FieldOps<'a, F> {
        descriptor: fn(&F, &str, &FieldSpec) -> Result<TensorDescriptor>,
        buffers: fn(&F) -> Vec<&[u8]>,
        load: fn(TensorRef<'a>, &FieldSpec) -> Result<F>,
    }

    impl<F> Clone for FieldOps<'_, F> {
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<F> Copy for FieldOps<'_, F> {}

    impl<F> fmt::Debug for FieldOps<'_, F> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("FieldOps").finish_non_exhaustive()
        }
    }

    /// The operations of field type `F`.
    pub fn field_ops<'a, F: TensorField<'a>>() -> FieldOps<'a, F> {
        FieldOps {
            descriptor: F::descriptor,
            buffers: F::buffers,
            load: F::load,
        }
    }

    impl<'a, F> FieldOps<'a, F> {
        pub fn describe(
            self,
            value: &F,
            prefix: &str,
            spec: &FieldSpec,
            out: &mut Vec<TensorDescriptor>,
        ) -> Result<()> {
            out.push((self.descriptor)(value, &join(prefix, spec.name), spec)?);
            Ok(())
        }

        pub fn describe_optional(
            self,
            value: &Option<F>,
            prefix: &str,
            spec: &FieldSpec,
            out: &mut Vec<TensorDescriptor>,
        ) -> Result<()> {
            match value {
                Some(v) => self.describe(v, prefix, spec, out),
                None => Ok(()),
            }
        }

        pub fn write(
            self,
            value: &F,
            prefix: &str,
            spec: &FieldSpec,
            sink: &mut dyn TensorSink,
        ) -> Result<()> {
            let desc = (self.descriptor)(value, &join(prefix, spec.name), spec)?;
            sink.add_tensor(&desc, &(self.buffers)(value))
        }

        pub fn write_optional(
            self,
            value: &Option<F>,
            prefix: &str,
            spec: &FieldSpec,
            sink: &mut dyn TensorSink,
        ) -> Result<()> {
            match value {
                Some(v) => self.write(v, prefix, spec, sink),
                None => Ok(()),
            }
        }

        pub fn read(self, reader: Reader<'a>, prefix: &str, spec: &FieldSpec) -> Result<F> {
            (self.load)(reader.tensor(&join(prefix, spec.name))?, spec)
        }

        pub fn read_optional(
            self,
            reader: Reader<'a>,
            prefix: &str,
            spec: &FieldSpec,
        ) -> Result<Option<F>> {
            match reader.get(&join(prefix, spec.name)) {
                Some(t) => (self.load)(t, spec).map(Some),
                None => Ok(None),
            }
        }
    }

    /// The operations of a nested struct, as function pointers (see [`FieldOps`]).
    pub struct NestedOps<'a, T> {
        describe: fn(&T, &str, &mut Vec<TensorDescriptor>) -> Result<()>,
        write: fn(&T, &str, &mut dyn TensorSink) -> Result<()>,
        read: fn(Reader<'a>, &str) -> Result<T>,
    }

    impl<T> Clone for NestedOps<'_, T> {
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<T> Copy for NestedOps<'_, T> {}

    impl<T> fmt::Debug for NestedOps<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("NestedOps").finish_non_exhaustive()
        }
    }

    /// The operations of nested struct type `T`.
    pub fn nested_ops<'a, T: TensorSet<'a>>() -> NestedOps<'a, T> {
        NestedOps {
            describe: T::describe_tensors,
            write: T::write_tensors,
            read: T::read_tensors,
        }
    }

    impl<'a, T> NestedOps<'a, T> {
        pub fn describe(
            self,
            value: &T,
            prefix: &str,
            name: &str,
            out: &mut Vec<TensorDescriptor>,
        ) -> Result<()> {
            (self.describe)(value, &nested(prefix, name), out)
        }

        pub fn write(
            self,
            value: &T,
            prefix: &str,
            name: &str,
            sink: &mut dyn TensorSink,
        ) -> Result<()> {
            (self.write)(value, &nested(prefix, name), sink)
        }

        pub fn read(self, reader: Reader<'a>, prefix: &str, name: &str) -> Result<T> {
            (self.read)(reader, &nested(prefix, name))
        }
    }

    fn invalid(tensor: &str, field: impl Into<String>, value: String, reason: String) -> Error {
        Error::InvalidField {
            tensor: tensor.to_owned(),
            field: field.into(),
            value,
            reason,
        }
    }

    fn dims_text(dims: &[Dim]) -> String {
        let d: Vec<String> = dims.iter().map(Dim::to_string).collect();
        format!("[{}]", d.join(", "))
    }

    /// The shape of `len` elements under the declared shape: `[len]` without
    /// one; else the declared shape with its one dynamic dimension (if any)
    /// inferred from `len`.
    pub fn infer_shape(name: &str, spec: &FieldSpec, len: u64) -> Result<Vec<Dim>> {
        let Some(declared) = spec.shape else {
            return Ok(vec![Dim::Fixed(len)]);
        };
        let fixed: u64 = declared
            .iter()
            .filter_map(|d| match d {
                Dim::Fixed(n) => Some(*n),
                Dim::Dynamic => None,
            })
            .try_fold(1u64, u64::checked_mul)
            .ok_or(Error::SizeOverflow {
                tensor: name.to_owned(),
                field: "shape",
            })?;
        let dynamic = declared.iter().filter(|d| **d == Dim::Dynamic).count();
        let wrong = |reason: String| {
            invalid(
                name,
                "shape",
                format!("{len} element(s)"),
                format!("the field declares shape {}: {reason}", dims_text(declared)),
            )
        };
        let resolved = match dynamic {
            0 if fixed == len => None,
            0 => return Err(wrong(format!("that holds {fixed}"))),
            1 if fixed != 0 && len.is_multiple_of(fixed) => Some(len / fixed),
            1 if fixed == 0 => {
                return Err(wrong(
                    "a dynamic dimension beside an empty one cannot be inferred".into(),
                ));
            }
            1 => return Err(wrong(format!("not a multiple of {fixed}"))),
            _ => {
                return Err(wrong(
                    "only one dynamic dimension can be inferred from the data".into(),
                ));
            }
        };
        Ok(declared
            .iter()
            .map(|d| match d {
                Dim::Dynamic => Dim::Fixed(resolved.unwrap_or(0)),
                fixed => *fixed,
            })
            .collect())
    }

    /// Checks a stored tensor against the field: element type, rank, fixed
    /// dimensions (a declared `?` accepts any size), and quantization.
    pub fn check(
        t: &TensorRef<'_>,
        spec: &FieldSpec,
        element_type: ElementType,
        default_rank: usize,
    ) -> Result<()> {
        let name = t.name();
        if t.element_type() != element_type {
            return Err(Error::TypeMismatch {
                tensor: name.to_owned(),
                requested: element_type,
                found: t.element_type(),
            });
        }
        let shape = t.shape();
        let declared_rank = spec.shape.map_or(default_rank, <[Dim]>::len);
        if shape.rank() != declared_rank {
            return Err(invalid(
                name,
                "rank",
                shape.rank().to_string(),
                format!("the field declares rank {declared_rank}"),
            ));
        }
        if let Some(declared) = spec.shape {
            for (i, (want, got)) in declared.iter().zip(shape.iter()).enumerate() {
                if let Dim::Fixed(w) = want
                    && got != Dim::Fixed(*w)
                {
                    return Err(invalid(
                        name,
                        format!("shape[{i}]"),
                        got.to_string(),
                        format!("the field declares shape {}", dims_text(declared)),
                    ));
                }
            }
        }
        let expected = spec.quantization;
        match (t.quantization(), expected) {
            (None, None) => {}
            (Some(found), Some(want))
                if found.scheme == want.scheme && found.expressed_type == want.expressed_type => {}
            (found, want) => {
                return Err(invalid(
                    name,
                    "quantization",
                    found.map_or("absent".into(), |q| format!("{:?}", q.scheme)),
                    match want {
                        Some(w) => format!(
                            "the field declares {:?} expressed as {}",
                            w.scheme,
                            w.expressed_type.name()
                        ),
                        None => "the field is not quantized".into(),
                    },
                ));
            }
        }
        Ok(())
    }

    /// Checks a value's own shape against the declared one (rank and fixed dims).
    fn check_declared(name: &str, spec: &FieldSpec, shape: &[Dim]) -> Result<()> {
        let Some(declared) = spec.shape else {
            return Ok(());
        };
        if declared.len() != shape.len() {
            return Err(invalid(
                name,
                "rank",
                shape.len().to_string(),
                format!("the field declares shape {}", dims_text(declared)),
            ));
        }
        for (i, (want, got)) in declared.iter().zip(shape).enumerate() {
            if matches!(want, Dim::Fixed(_)) && want != got {
                return Err(invalid(
                    name,
                    format!("shape[{i}]"),
                    got.to_string(),
                    format!("the field declares shape {}", dims_text(declared)),
                ));
            }
        }
        Ok(())
    }

    /// The typed views' own cast: an empty buffer is never dereferenced (ADR-007).
    use crate::views::cast;

    fn dense_layout(t: &TensorRef<'_>) -> Result<()> {
        match t.layout() {
            Layout::Dense | Layout::Strided(_) => Ok(()),
            other => Err(Error::LayoutMismatch {
                tensor: t.name().to_owned(),
                found: other.name(),
                needed: "dense",
                operation: "loading a dense field",
            }),
        }
    }

    impl<'a, T: Element> TensorField<'a> for &'a [T] {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            let shape = infer_shape(name, spec, self.len() as u64)?;
            Ok(TensorDescriptor::new(name, T::TYPE, shape))
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![bytemuck::cast_slice(self)]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            check(&t, spec, T::TYPE, 1)?;
            dense_layout(&t)?;
            t.as_slice::<T>()
        }
    }

    impl<'a, T: Element> TensorField<'a> for Vec<T> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            self.as_slice().descriptor(name, spec)
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![bytemuck::cast_slice(self)]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            <&'a [T]>::load(t, spec).map(<[T]>::to_vec)
        }
    }

    impl<'a, P: PackedElement> TensorField<'a> for Packed<'a, P> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            let shape = infer_shape(name, spec, self.len)?;
            Ok(TensorDescriptor::new(name, P::TYPE, shape))
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![&self.bytes]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            check(&t, spec, P::TYPE, 1)?;
            if !matches!(t.layout(), Layout::Dense) {
                return Err(Error::LayoutMismatch {
                    tensor: t.name().to_owned(),
                    found: t.layout().name(),
                    needed: "dense",
                    operation: "loading a packed field",
                });
            }
            let view = t.packed()?;
            Ok(Packed {
                bytes: Cow::Borrowed(view.bytes()),
                len: view.len(),
                marker: PhantomData,
            })
        }
    }

    impl<'a, T: Element, I: SparseIndex> TensorField<'a> for Compressed<'a, T, I> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            let shape = vec![Dim::Fixed(self.shape[0]), Dim::Fixed(self.shape[1])];
            check_declared(name, spec, &shape)?;
            let nnz = self.nnz();
            let layout = match spec.layout {
                LayoutKind::Csc => Layout::Csc {
                    nnz,
                    index_type: I::TYPE,
                },
                _ => Layout::Csr {
                    nnz,
                    index_type: I::TYPE,
                },
            };
            Ok(TensorDescriptor::new(name, T::TYPE, shape).with_layout(layout))
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![
                bytemuck::cast_slice(&self.pointers),
                bytemuck::cast_slice(&self.indices),
                bytemuck::cast_slice(&self.values),
            ]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            check(&t, spec, T::TYPE, 2)?;
            let view = match spec.layout {
                LayoutKind::Csc => t.csc()?,
                _ => t.csr()?,
            };
            let wrong_index = || Error::TypeMismatch {
                tensor: t.name().to_owned(),
                requested: I::TYPE,
                found: match view.pointers {
                    Indices::I32(_) => ElementType::Int32,
                    Indices::I64(_) => ElementType::Int64,
                },
            };
            let pointers = I::from_indices(view.pointers).ok_or_else(wrong_index)?;
            let indices = I::from_indices(view.indices).ok_or_else(wrong_index)?;
            let dims = t.shape().to_wire();
            Ok(Compressed {
                shape: [dims[0], dims[1]],
                pointers: Cow::Borrowed(pointers),
                indices: Cow::Borrowed(indices),
                values: Cow::Borrowed(view.values_as::<T>().map_err(|_| Error::TypeMismatch {
                    tensor: t.name().to_owned(),
                    requested: T::TYPE,
                    found: t.element_type(),
                })?),
            })
        }
    }

    impl<'a, T: Element, S: Element> TensorField<'a> for Quantized<'a, T, S> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            let shape = infer_shape(name, spec, self.values.len() as u64)?;
            let q = quantization::<S>(name, spec, self.zero_points.as_ref().map(|_| T::TYPE))?;
            Ok(TensorDescriptor::new(name, T::TYPE, shape).with_quantization(q))
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![
                bytemuck::cast_slice(&self.values),
                bytemuck::cast_slice(&self.scales),
                self.zero_points
                    .as_deref()
                    .map_or(&[], bytemuck::cast_slice),
            ]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            let view = quantized_view(&t, spec, T::TYPE, S::TYPE)?;
            Ok(Quantized {
                values: Cow::Borrowed(t.as_slice::<T>()?),
                scales: Cow::Borrowed(cast::<S>(t.name(), view.scales)?),
                zero_points: match view.quantization.zero_point_type {
                    Some(_) => Some(Cow::Borrowed(cast::<T>(t.name(), view.zero_points)?)),
                    None => None,
                },
            })
        }
    }

    /// Checks a stored quantized tensor against the field (element, scale and
    /// zero-point types, layout) and returns its view.
    fn quantized_view<'a>(
        t: &TensorRef<'a>,
        spec: &FieldSpec,
        storage: ElementType,
        scale: ElementType,
    ) -> Result<crate::QuantizedView<'a>> {
        check(t, spec, storage, 1)?;
        if !matches!(t.layout(), Layout::Dense) {
            return Err(Error::LayoutMismatch {
                tensor: t.name().to_owned(),
                found: t.layout().name(),
                needed: "dense",
                operation: "loading a quantized field",
            });
        }
        let view = t.quantized()?;
        let q = &view.quantization;
        let typed = |want: ElementType, found: ElementType| {
            if want == found {
                Ok(())
            } else {
                Err(Error::TypeMismatch {
                    tensor: t.name().to_owned(),
                    requested: want,
                    found,
                })
            }
        };
        typed(scale, q.scale_type)?;
        if let Some(zp) = q.zero_point_type {
            typed(storage, zp)?;
        }
        Ok(view)
    }

    fn quantization<S: Element>(
        name: &str,
        spec: &FieldSpec,
        zero_point_type: Option<ElementType>,
    ) -> Result<Quantization> {
        let Some(q) = spec.quantization else {
            return Err(invalid(
                name,
                "quantization",
                "absent".into(),
                "a quantized field needs a scheme".into(),
            ));
        };
        Ok(Quantization {
            scheme: q.scheme,
            expressed_type: q.expressed_type,
            scale_type: S::TYPE,
            zero_point_type,
            storage_min: 0,
            storage_max: 0,
        })
    }

    impl<'a, P: PackedElement, S: Element> TensorField<'a> for PackedQuantized<'a, P, S> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            let shape = infer_shape(name, spec, self.values.len())?;
            let q = quantization::<S>(name, spec, self.zero_points.as_ref().map(|_| P::TYPE))?;
            Ok(TensorDescriptor::new(name, P::TYPE, shape).with_quantization(q))
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![
                self.values.bytes(),
                bytemuck::cast_slice(&self.scales),
                self.zero_points.as_ref().map_or(&[], Packed::bytes),
            ]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            let view = quantized_view(&t, spec, P::TYPE, S::TYPE)?;
            let scales = cast::<S>(t.name(), view.scales)?;
            let packed = t.packed()?;
            Ok(PackedQuantized {
                values: Packed {
                    bytes: Cow::Borrowed(packed.bytes()),
                    len: packed.len(),
                    marker: PhantomData,
                },
                scales: Cow::Borrowed(scales),
                zero_points: match view.quantization.zero_point_type {
                    // One zero point per scale.
                    Some(_) => Some(Packed::from_bytes(view.zero_points, scales.len() as u64)?),
                    None => None,
                },
            })
        }
    }

    /// `ndarray` fields (the `ndarray` feature): the array's own shape is
    /// written; on load the stored shape becomes the view's.
    #[cfg(feature = "ndarray")]
    mod nd {
        use super::*;
        use ndarray::{Array, ArrayView, Dimension, IxDyn};

        fn describe<T: Element>(
            name: &str,
            spec: &FieldSpec,
            dims: &[usize],
            standard: bool,
        ) -> Result<TensorDescriptor> {
            if !standard {
                return Err(invalid(
                    name,
                    "layout",
                    "non-standard strides".into(),
                    "an ndarray field is written in standard (row-major, contiguous) layout: \
                     make it so with `as_standard_layout()`"
                        .into(),
                ));
            }
            let shape: Vec<Dim> = dims.iter().map(|&d| Dim::Fixed(d as u64)).collect();
            check_declared(name, spec, &shape)?;
            Ok(TensorDescriptor::new(name, T::TYPE, shape))
        }

        fn view<'a, T: Element, D: Dimension>(
            t: TensorRef<'a>,
            spec: &FieldSpec,
        ) -> Result<ArrayView<'a, T, D>> {
            let rank = D::NDIM.unwrap_or_else(|| t.shape().rank());
            check(&t, spec, T::TYPE, rank)?;
            dense_layout(&t)?;
            let data = t.as_slice::<T>()?;
            let too_big = || Error::SizeOverflow {
                tensor: t.name().to_owned(),
                field: "shape",
            };
            let dims = t
                .shape()
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => usize::try_from(n).map_err(|_| too_big()),
                    Dim::Dynamic => Err(Error::NoData {
                        tensor: t.name().to_owned(),
                    }),
                })
                .collect::<Result<Vec<usize>>>()?;
            let wrong_rank = || {
                invalid(
                    t.name(),
                    "rank",
                    dims.len().to_string(),
                    format!("the field's array type has rank {rank}"),
                )
            };
            let dim = D::from_dimension(&IxDyn(&dims)).ok_or_else(wrong_rank)?;
            ArrayView::from_shape(dim, data)
                .map_err(|e| invalid(t.name(), "shape", format!("{dims:?}"), e.to_string()))
        }

        impl<'a, T: Element, D: Dimension> TensorField<'a> for ArrayView<'a, T, D> {
            fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
                describe::<T>(name, spec, self.shape(), self.is_standard_layout())
            }
            fn buffers(&self) -> Vec<&[u8]> {
                vec![self.as_slice().map_or(&[][..], bytemuck::cast_slice)]
            }
            fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
                view(t, spec)
            }
        }

        impl<'a, T: Element, D: Dimension> TensorField<'a> for Array<T, D> {
            fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
                describe::<T>(name, spec, self.shape(), self.is_standard_layout())
            }
            fn buffers(&self) -> Vec<&[u8]> {
                vec![self.as_slice().map_or(&[][..], bytemuck::cast_slice)]
            }
            fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
                view::<T, D>(t, spec).map(|v| v.to_owned())
            }
        }
    }

    /// A dimension list as a descriptor shape (for `#[derive(Descriptor)]`).
    pub fn static_descriptor(
        name: &str,
        element_type: ElementType,
        shape: &[Dim],
        quantization: Option<(QuantSpec, ElementType)>,
    ) -> TensorDescriptor {
        let mut d = TensorDescriptor::new(name, element_type, shape.to_vec());
        if let Some((q, scale_type)) = quantization {
            d = d.with_quantization(Quantization {
                scheme: q.scheme,
                expressed_type: q.expressed_type,
                scale_type,
                zero_point_type: None,
                storage_min: 0,
                storage_max: 0,
            });
        }
        if shape.contains(&Dim::Dynamic) {
            d = d.into_descriptor_only();
        }
        d
    }

    /// Evaluated in a const by `#[derive(Element)]`: a newtype has the size of its field.
    pub const fn assert_same_size<A, B>() {
        assert!(
            std::mem::size_of::<A>() == std::mem::size_of::<B>(),
            "an Element newtype must have the size of its field"
        );
    }
}
