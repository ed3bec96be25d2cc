//! Safe wrappers over the parts of the MLIR C API (mlir-sys) melior does not
//! wrap (or wraps in a way hostile input can make panic; see
//! the `typed` module for what goes through melior), plus the one C++ accessor
//! in `csrc/shim.cpp`. Each wrapper checks the kind of the handle it is given
//! before the accessor that needs it, so every safe function here is sound
//! whatever its caller passes.
//!
//! Every function takes melior handles (`Attribute<'c>`, `Type<'c>`), which
//! are non-null and valid for the context lifetime `'c` by construction. Each
//! C function called here only reads the object it is given (and its
//! context-owned storage), returns plain values or handles owned by the same
//! context, and is documented not to fail on a handle of the kind checked
//! just before. That is the safety argument of every `unsafe` block below,
//! spelled out where it needs more.
//!
//! A query followed by the accessor it guards forms one unsafe block here
//! (one safety argument per C API contract), hence the lint allowance.
#![allow(clippy::multiple_unsafe_ops_per_block)]

mod attributes;
mod ir;
mod print;
mod quant;
mod sparse;
mod types;

pub(crate) use attributes::{
    Blob, dense_from_raw, dense_is_splat, dense_raw, dictionary_attr, is_dense_resource,
    resource_blob, sparse_parts, string_attr, unmanaged_resource,
};
pub(crate) use ir::{
    bare_location_name, defining_op, unregistered_properties, user_results, value_location,
};
pub(crate) use print::{
    attr_str, describe, diagnostic_str, location_str, operation_bytes, type_str,
};
pub(crate) use quant::{QuantKind, QuantType, quant_is_signed, quant_type};
pub(crate) use sparse::{SparseEncoding, SparseLevel, sparse_encoding};
pub(crate) use types::{
    RawDim, dense_storage_bits, element_type, opaque_type, parse_type_in, ranked_shape,
};

use mlir_sys as sys;
use std::ffi::c_char;

unsafe extern "C" {
    /// `csrc/shim.cpp`: the bytes of a `dense_resource` blob.
    fn hurray_mlir_resource_blob(
        attr: sys::MlirAttribute,
        data: *mut *const c_char,
        len: *mut usize,
        key: *mut sys::MlirStringRef,
    ) -> i32;
    /// `csrc/shim.cpp`: the properties attribute of an unregistered op (null
    /// for a registered one).
    fn hurray_mlir_properties(op: sys::MlirOperation) -> sys::MlirAttribute;
}

pub(crate) fn string_ref(s: sys::MlirStringRef) -> String {
    if s.data.is_null() || s.length == 0 {
        return String::new();
    }
    // SAFETY: a non-null MlirStringRef from MLIR (or from the pass shells,
    // a view of their option's std::string) points at `length` readable
    // bytes alive for the duration of this call.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.length) };
    String::from_utf8_lossy(bytes).into_owned()
}
