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
mod block_format;
mod buffer;
mod checksum;
mod count;
mod descriptor;
mod digest;
mod element;
mod error;
mod file_id;
pub mod limits;
pub mod minifloat;
pub mod pack;
mod scheme;
mod shard_index;
mod structure;
mod validate;

// Reading: verify once, then zero-copy views, over one source of bytes.
mod aligned;
mod describe;
pub mod dlpack;
mod reader;
mod slice;
pub mod source;
pub mod views;

// Writing: streaming, atomic.
mod atomic;
mod writer;

// Beyond one file: a sharded checkpoint's index and members.
pub mod sharded;

// What the derive macros stand on.
mod derive_support;

#[cfg(test)]
mod tests;

/// The README's Rust example, compiled by `cargo test --doc -p hurray`, so
/// that a change to the API it uses cannot leave it broken.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeExample;

/// Element types held in memory beyond Rust's primitives: minifloats and
/// complex numbers, packed sub-byte codes, and the schema's float formats.
pub mod elements {
    pub use crate::count::ElementCount;
    pub use crate::derive_support::{
        Bool, Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Int2, Int4, PackedElement, UInt2, UInt4,
    };
    pub use crate::element::{
        Complex64, Complex128, Float8E3M4, Float8E4M3, Float8E4M3B11FNUZ, Float8E4M3FN,
        Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ, Float8E8M0FNU,
    };
    pub use crate::generated::element_type::{FloatFormat, FloatSpecials};
}

/// The field types of structs that derive [`Tensors`](macro@crate::Tensors)
/// beyond slices, vectors and arrays: packed, sparse and quantized tensors.
pub mod fields {
    pub use crate::derive_support::{
        Compressed, Coo, Packed, PackedQuantized, Quantized, SparseIndex,
    };
}

// Opening and reading.
pub use aligned::AlignedBytes;
pub use describe::Validation;
pub use reader::{Fetched, File, MapMode, Reader, TensorRef};
pub use slice::{SliceData, SliceRange, parse_slice};

// Describing tensors.
pub use block_format::BlockFormat;
pub use buffer::{BufferRole, UnknownBufferRole};
pub use checksum::ChecksumAlgorithm;
pub use count::{element_count, packed_len};
pub use descriptor::{
    Dim, Layout, Quantization, QuantizationKind, QuantizationScheme, TensorDescriptor, shape,
};
pub use digest::{DIGEST_LEN, Digest, DigestAlgorithm};
pub use element::Element;
pub use generated::element_type::{ElementClass, ElementType};
pub use validate::Plan;

// Writing.
pub use atomic::{AtomicFile, Durability, OutputFile};
pub use sharded::{ShardedFile, ShardedWriter};
pub use writer::{TensorWriter, Writer};

pub use error::{Error, Result};

// Deriving: the macros (the `derive` feature, on by default; see
// `docs/impl/derive.md`) and the traits they implement.
#[doc(hidden)]
pub use derive_support::private as __private;
pub use derive_support::{StaticDescriptor, TensorSet, TensorSink};
#[cfg(feature = "derive")]
pub use hurray_derive::{Descriptor, Element, Tensors};

// A test hook, not part of the documented API.
#[doc(hidden)]
pub use reader::verifiers;

/// The stored bytes of a slice of elements (little-endian hosts store elements as they are in memory).
pub fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}
