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
//! | [`Packed<'a, P>`] | packed sub-byte (`P`: [`Int4`], [`UInt4`], [`Int2`], [`UInt2`], [`Bool`], [`Float4E2M1FN`], [`Float6E2M3FN`], [`Float6E3M2FN`]) | borrowed |
//! | [`Compressed<'a, T, I>`] | CSR (default) or CSC, rank 2, `I` = `i32` or `i64` | borrowed |
//! | [`Coo<'a, T, I>`] | COO of any rank, canonical when its coordinates are sorted and unique | borrowed |
//! | [`Quantized<'a, T, S>`] | dense storage `T` with scales `S` and optional zero points | borrowed |
//! | `ndarray::ArrayView<'a, T, D>` (feature `ndarray`) | dense, the array's shape | borrowed |
//! | `ndarray::Array<T, D>` (feature `ndarray`) | dense, the array's shape | copied |
//! | [`PackedQuantized<'a, P, S>`] | the same with packed sub-byte storage | borrowed |
//! | `Option<F>` | an optional tensor of field type `F` | `None` when absent |
//! | a struct deriving `Tensors` | its tensors, named `field.inner` | as that struct |

mod fields;
pub mod private;

pub use fields::{
    Bool, Compressed, Coo, Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Int2, Int4, Packed,
    PackedElement, PackedQuantized, Quantized, SparseIndex, UInt2, UInt4,
};

use crate::ElementType;
use crate::descriptor::{Dim, TensorDescriptor};
use crate::error::Result;
use crate::reader::{File, Reader};
use crate::writer::Writer;
use std::io::Write;
use std::path::Path;

/// A struct whose fields are tensors: what `#[derive(Tensors)]` implements.
///
/// `'a` is the lifetime of the file data the struct may borrow on load. The
/// derive also generates inherent `descriptors`, `save`, `write_to`, `load`
/// and `from_reader` methods that call these.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a struct of tensors",
    label = "a field of this type is read as a nested struct of tensors",
    note = "derive `hurray::Tensors` for `{Self}`, or use a tensor field type (`&'a [T]`, `Vec<T>`, `Packed`, `Compressed`, `Coo`, `Quantized`)"
)]
pub trait TensorSet<'a>: Sized {
    /// Appends the descriptor of every tensor, names prefixed by `prefix`.
    fn describe_tensors(&self, prefix: &str, out: &mut Vec<TensorDescriptor>) -> Result<()>;

    /// Writes every tensor to `sink` (a [`Writer`]), names prefixed by `prefix`.
    fn write_tensors(&self, prefix: &str, sink: &mut dyn TensorSink) -> Result<()>;

    /// Reads every tensor named with `prefix`, checking each against the
    /// declared element type, rank, fixed dimensions, layout and quantization.
    fn read_tensors(reader: &Reader<'a>, prefix: &str) -> Result<Self>;

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
        Self::read_tensors(&file.reader(), "")
    }
}

/// Where [`TensorSet::write_tensors`] sends tensors: a [`Writer`], or
/// anything else that takes whole tensors.
pub trait TensorSink {
    /// Adds one tensor: its descriptor and the bytes of every buffer it needs.
    fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()>;

    /// Sets a file-wide metadata entry (a later value for the same key wins).
    fn set_metadata(&mut self, key: &str, value: &str) -> Result<()>;
}

impl<W: Write> TensorSink for Writer<W> {
    fn add_tensor(&mut self, desc: &TensorDescriptor, buffers: &[&[u8]]) -> Result<()> {
        Writer::add_tensor(self, desc, buffers)
    }

    fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        Writer::set_metadata(self, key, value);
        Ok(())
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
