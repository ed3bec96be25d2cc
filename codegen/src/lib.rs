//! The Hurray code generator.
//!
//! `schema/hurray.fbs` is the single source of truth. From it this crate
//! produces, byte-for-byte reproducibly:
//!
//! - `runtime/src/gen/hurray_generated.rs`: the FlatBuffers reader, by the pinned [`flatc`];
//! - `runtime/src/gen/element_type.rs`: the element-type table (bit widths, names,
//!   MLIR spellings, DLPack codes, NumPy and safetensors names), read from the
//!   schema's enum-value attributes through the binary schema ([`schema`], [`element_table`]);
//! - `runtime/src/gen/verifier.rs`: a structural verifier specialised to the
//!   schema, one function per table, with a semantic hook per table ([`verifier`]);
//! - `python/hurray_reader/`: the Python reader module (`flatc --python`) and its element-type table.
//! - `js/src/gen/`: the TypeScript reader's accessors (`flatc --ts`), element-type
//!   table and the structure its verifier walks ([`typescript`]);
//! - `mlir/src/gen/hurray.irdl.mlir`: the `hurray` MLIR dialect as IRDL ([`irdl`]).
//!
//! [`Generator::output`] is everything generated, in memory; [`output`] is the
//! one check-or-write of generated files (this generator's, and xtask's vectors
//! and C header): `--check` reports every missing, differing or extra file.
//! `cargo xtask codegen --check` runs it and the test suite runs that.
//! [`evolution`] checks the schema against every released one.

pub mod element_table;
pub mod evolution;
pub mod flatc;
pub mod generator;
pub mod irdl;
pub mod output;
pub mod schema;
pub mod typescript;
pub mod verifier;

pub use generator::{GeneratedFile, Generator};
pub use output::{Output, Staleness, check_or_write};
