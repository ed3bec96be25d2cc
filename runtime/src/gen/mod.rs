//! Code generated from `schema/hurray.fbs` by `cargo xtask codegen`.
//!
//! Nothing under this directory except this file is written by hand; the test
//! suite fails when it is stale. The FlatBuffers reader stays crate-private:
//! the public API is the safe layer in `reader`, `writer` and `descriptor`.

#[rustfmt::skip]
#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    clippy::multiple_unsafe_ops_per_block,
    unreachable_pub,
    missing_debug_implementations,
    unused_imports,
    dead_code,
    deprecated,
    non_camel_case_types,
    unsafe_op_in_unsafe_fn,
    mismatched_lifetime_syntaxes,
)]
mod hurray_generated;

#[rustfmt::skip]
#[allow(clippy::all)]
pub(crate) mod element_type;

/// The structural verifier specialised to the schema (`codegen/src/verifier.rs`).
#[rustfmt::skip]
#[allow(clippy::all, unused_variables, dead_code)]
pub(crate) mod verifier;

/// The flatc-generated tables of the `hurray.fb` namespace.
pub(crate) use hurray_generated::hurray::fb;
