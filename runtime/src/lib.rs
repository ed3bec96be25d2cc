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

// The file format: its layout constants, resource limits and the schema's
// generated code.
mod error;
pub mod format;
#[path = "gen/mod.rs"]
mod generated;
pub mod limits;

// Element types: the schema's, Rust's primitives and the rest
// (`elements`), minifloat conversions, sub-byte packing.
mod count;
mod element;
pub mod minifloat;
pub mod pack;

// Describing tensors: the owned descriptor and the rules every descriptor
// obeys (`validate`, shared by reader and writer), with one owner for each
// vocabulary the rules use.
mod block_format;
mod buffer;
pub mod descriptor;
mod quantization;
mod validate;

// Integrity and identity: checksums, digests, file identities.
mod checksum;
mod digest;
mod file_id;

// Reading: one source of bytes, verified once, then zero-copy views.
mod aligned;
pub mod dlpack;
pub mod reader;
pub mod slice;
pub mod source;
mod structure;
pub mod views;

// Writing: streaming, to a file that appears whole or not at all.
pub mod atomic;
pub mod writer;

// Beyond one file: a sharded checkpoint's index and members.
mod shard_index;
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

/// Element types held in memory beyond Rust's primitives (minifloats and
/// complex numbers, packed sub-byte codes), the schema's element classes
/// and float formats, and element counting.
pub mod elements {
    pub use crate::count::{ElementCount, element_count, packed_len};
    pub use crate::derive_support::{
        Bool, Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Int2, Int4, PackedElement, UInt2, UInt4,
    };
    pub use crate::element::{
        Complex64, Complex128, Float8E3M4, Float8E4M3, Float8E4M3B11FNUZ, Float8E4M3FN,
        Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ, Float8E8M0FNU,
    };
    pub use crate::generated::element_type::{ElementClass, FloatFormat, FloatSpecials};
}

/// What a file records to check its bytes: per-buffer checksums (format
/// 1.2), digests (format 1.4), and what [`File::validate`] reports.
pub mod integrity {
    pub use crate::checksum::ChecksumAlgorithm;
    pub use crate::digest::{DIGEST_LEN, Digest, DigestAlgorithm};
    pub use crate::reader::Validation;
}

/// What the derive macros implement ([`TensorSet`](derive::TensorSet),
/// [`TensorSink`](derive::TensorSink),
/// [`StaticDescriptor`](derive::StaticDescriptor)) and the field types of
/// structs that derive [`Tensors`](macro@crate::Tensors) beyond slices,
/// vectors and arrays: packed, sparse and quantized tensors.
pub mod derive {
    pub use crate::derive_support::{
        Compressed, Coo, Packed, PackedQuantized, Quantized, SparseIndex, StaticDescriptor,
        TensorSet, TensorSink,
    };
}

// The names a README reader uses.
pub use descriptor::{Dim, Layout, TensorDescriptor, shape};
pub use element::Element;
pub use error::{Error, Result};
pub use generated::element_type::ElementType;
pub use quantization::Quantization;
pub use reader::{File, TensorRef};
pub use sharded::{ShardedFile, ShardedWriter};
pub use writer::Writer;

// The derive macros (the `derive` feature, on by default; see
// `docs/impl/derive.md`).
#[cfg(feature = "derive")]
pub use hurray_derive::{Descriptor, Element, Tensors};

// What the macros' expansions name, and a test hook: not the documented API.
#[doc(hidden)]
pub use derive_support::private as __private;
#[doc(hidden)]
pub use reader::verifiers;

/// The stored bytes of a slice of elements (little-endian hosts store elements as they are in memory).
pub fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    bytemuck::cast_slice(values)
}
