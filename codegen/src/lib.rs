//! The Hurray code generator.
//!
//! `schema/hurray.fbs` is the single source of truth. From it this crate
//! produces, byte-for-byte reproducibly:
//!
//! - `runtime/src/gen/hurray_generated.rs`: the FlatBuffers reader, by the pinned [`flatc`];
//! - `runtime/src/gen/element_type.rs`: the element-type table (bit widths, names,
//!   MLIR spellings, DLPack codes, NumPy and safetensors names), read from the
//!   schema's enum-value attributes through the binary schema ([`schema`], [`element_table`]);
//! - `python/hurray_reader/`: the Python reader module (`flatc --python`) and its element-type table.
//! - `mlir/src/gen/hurray.irdl.mlir`: the `hurray` MLIR dialect as IRDL ([`irdl`]).
//!
//! [`Generator::check`] compares what would be generated with what is checked in
//! and reports every stale file; `cargo xtask codegen --check` runs it and the
//! test suite runs that. [`evolution`] checks the schema against every released one.

pub mod element_table;
pub mod evolution;
pub mod flatc;
pub mod generator;
pub mod irdl;
pub mod schema;

pub use generator::{GeneratedFile, Generator, Staleness};
