//! Hurray: zero-copy tensor interchange files.
//!
//! A Hurray file holds tensors (dense, strided, COO, CSR, CSC; any element
//! type of the schema, down to packed 1-, 2- and 4-bit types; optionally
//! quantized) described by a FlatBuffers header and stored in a 64-byte
//! aligned data region. Opening verifies the header once and costs nothing
//! per byte of data; every view afterwards borrows the file's bytes.
//!
//! ```
//! use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
//!
//! let mut bytes = Vec::new();
//! let mut w = Writer::new(&mut bytes)?;
//! let weights = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
//! w.add_tensor(
//!     &TensorDescriptor::new("w", ElementType::Float32, shape(&[2, 3])),
//!     &[bytemuck::cast_slice(&weights)],
//! )?;
//! // An empty tensor (ADR-007): a real, resolved shape with no elements.
//! w.add_tensor(&TensorDescriptor::new("empty", ElementType::Float32, shape(&[3, 0, 5])), &[&[]])?;
//! w.finish()?;
//!
//! let file = File::from_bytes(&bytes)?;
//! assert_eq!(file.tensor("w")?.as_slice::<f32>()?, &weights);
//! assert_eq!(file.tensor("empty")?.as_slice::<f32>()?, &[] as &[f32]);
//! # Ok::<(), hurray::Error>(())
//! ```

// Stored elements are little-endian and typed views reinterpret them in place.
#[cfg(target_endian = "big")]
compile_error!("hurray's zero-copy views need a little-endian target");

// The file format: layout constants, the schema's generated code.
pub mod format;
#[path = "gen/mod.rs"]
mod generated;

// The format's rules, each with one owner (docs/ARCHITECTURE.md).
mod buffer;
mod checksum;
mod count;
mod descriptor;
mod element;
mod error;
pub mod limits;
pub mod minifloat;
pub mod pack;
mod scheme;
mod shard_index;
mod validate;

// Reading: verify once, then zero-copy views.
mod aligned;
mod describe;
pub mod dlpack;
mod reader;
mod slice;
mod views;

// Where a file's bytes are: a map, memory, pread, an object store.
pub mod source;

// Writing: streaming, atomic.
mod atomic;
mod writer;

// Beyond one file: a sharded checkpoint's index and members.
mod sharded;

// What the derive macros stand on.
mod derive_support;

#[cfg(test)]
mod tests;

pub use aligned::AlignedBytes;
pub use atomic::{AtomicFile, Durability};
pub use buffer::{BufferRole, UnknownBufferRole};
pub use checksum::ChecksumAlgorithm;
pub use count::{ElementCount, element_count, packed_len};
#[doc(hidden)]
pub use derive_support::private as __private;
pub use derive_support::{
    Bool, Compressed, Coo, Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Int2, Int4, Packed,
    PackedElement, PackedQuantized, Quantized, SparseIndex, StaticDescriptor, TensorSet,
    TensorSink, UInt2, UInt4,
};
pub use describe::Validation;
pub use descriptor::{
    Dim, Layout, Quantization, QuantizationKind, QuantizationScheme, TensorDescriptor, shape,
};
pub use element::{
    Complex64, Complex128, Element, Float8E3M4, Float8E4M3, Float8E4M3B11FNUZ, Float8E4M3FN,
    Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ, Float8E8M0FNU,
};
pub use error::{Error, Result};
pub use generated::element_type::{ElementClass, ElementType, FloatFormat, FloatSpecials};
/// Derive macros (the `derive` feature, on by default); see `docs/impl/derive.md`.
#[cfg(feature = "derive")]
pub use hurray_derive::{Descriptor, Element, Tensors};
#[doc(hidden)]
pub use reader::verifiers;
pub use reader::{
    Fetched, File, MapMode, Metadata, OPEN_SUFFIX, Reader, Shape, TensorRef, Tensors,
};
pub use sharded::{
    AdoptedChunk, DEFAULT_MAX_SHARD_SIZE, ShardMember, ShardPiece, ShardedFile, ShardedTensor,
    ShardedWriter,
};
pub use slice::{SliceData, SliceRange, parse_slice};
pub use validate::Plan;
pub use views::{CompressedView, CooView, Indices, PackedView, QuantizedView, row_major_strides};
pub use writer::{TensorWriter, Writer};

pub use pack::pack_codes;

/// The stored bytes of a slice of elements (little-endian hosts store elements as they are in memory).
pub fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}
