//! Elements attributes: the bytes of dense, splat, `dense_resource` and
//! sparse ones (read without copying), string and dictionary attributes, and
//! dense and `dense_resource` attributes built from bytes.

use super::{hurray_mlir_resource_blob, string_ref};
use melior::ir::{Attribute, AttributeLike, Type, TypeLike};
use mlir_sys as sys;
use std::ffi::c_char;

/// The blob of a `dense_resource` attribute.
#[derive(Debug)]
pub(crate) enum Blob<'c> {
    /// Not a `dense_resource` attribute.
    NotResource,
    /// The resource key, with no data behind it (elided or missing).
    Missing(String),
    /// The resource key and its bytes, borrowed from the context.
    Data(String, &'c [u8]),
}

/// The bytes behind a `dense_resource<key>` attribute, without copying.
pub(crate) fn resource_blob<'c>(attr: Attribute<'c>) -> Blob<'c> {
    let mut data: *const c_char = std::ptr::null();
    let mut len = 0usize;
    let mut key = sys::MlirStringRef {
        data: std::ptr::null(),
        length: 0,
    };
    // SAFETY: `attr` is a valid attribute; the shim only dyn_casts it and
    // writes the three out-parameters, which point at live locals.
    let status = unsafe { hurray_mlir_resource_blob(attr.to_raw(), &mut data, &mut len, &mut key) };
    match status {
        0 => {
            let key = string_ref(key);
            if len == 0 || data.is_null() {
                return Blob::Data(key, &[]);
            }
            // SAFETY: the blob is owned by the context's resource manager and
            // lives as long as the context ('c); MLIR hands out an immutable
            // view of exactly `len` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
            Blob::Data(key, bytes)
        }
        2 => Blob::Missing(string_ref(key)),
        _ => Blob::NotResource,
    }
}

/// Whether `attr` is a `dense_resource` elements attribute.
pub(crate) fn is_dense_resource(attr: Attribute<'_>) -> bool {
    // SAFETY: a type query on a valid attribute.
    unsafe { sys::mlirAttributeIsADenseResourceElements(attr.to_raw()) }
}

/// Whether `attr` is a dense elements attribute that is a splat (one stored
/// element); false for any other attribute.
pub(crate) fn dense_is_splat(attr: Attribute<'_>) -> bool {
    // SAFETY: the accessor runs only on an attribute checked to be a
    // DenseElementsAttr, which is what it requires.
    attr.is_dense_elements() && unsafe { sys::mlirDenseElementsAttrIsSplat(attr.to_raw()) }
}

/// The raw storage of a dense elements attribute: `len` bytes the caller
/// computed from the type (the C API has no length accessor).
///
/// # Safety
/// `attr` must be a `DenseElementsAttr` of int/float/complex elements whose
/// storage holds at least `len` bytes.
pub(crate) unsafe fn dense_raw<'c>(attr: Attribute<'c>, len: usize) -> &'c [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: `attr` is a dense elements attribute (caller contract); its raw
    // data is immutable context-owned storage.
    let ptr = unsafe { sys::mlirDenseElementsAttrGetRawData(attr.to_raw()) };
    if ptr.is_null() {
        return &[];
    }
    // SAFETY: the caller guarantees `len` bytes of storage; the storage is
    // uniqued in the context and never mutated, so it lives for 'c.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// The indices (`nnz x rank` i64) and values of a sparse elements
/// attribute; `None` for any other attribute.
pub(crate) fn sparse_parts<'c>(attr: Attribute<'c>) -> Option<(Attribute<'c>, Attribute<'c>)> {
    if !attr.is_sparse_elements() {
        return None;
    }
    // SAFETY: `attr` was just checked to be a SparseElementsAttr, which both
    // accessors require; they return attributes of the same context.
    Some(unsafe {
        (
            Attribute::from_raw(sys::mlirSparseElementsAttrGetIndices(attr.to_raw())),
            Attribute::from_raw(sys::mlirSparseElementsAttrGetValues(attr.to_raw())),
        )
    })
}

/// The value of a `StringAttr`, if `attr` is one.
pub(crate) fn string_attr(attr: Attribute<'_>) -> Option<String> {
    // SAFETY: a type query, then the accessor on a checked StringAttr.
    unsafe {
        if !sys::mlirAttributeIsAString(attr.to_raw()) {
            return None;
        }
        Some(string_ref(sys::mlirStringAttrGetValue(attr.to_raw())))
    }
}

/// The entries of a `DictionaryAttr`, if `attr` is one.
pub(crate) fn dictionary_attr<'c>(attr: Attribute<'c>) -> Option<Vec<(String, Attribute<'c>)>> {
    // SAFETY: a type query, then bounded element accessors on a checked DictionaryAttr.
    unsafe {
        if !sys::mlirAttributeIsADictionary(attr.to_raw()) {
            return None;
        }
        let n = sys::mlirDictionaryAttrGetNumElements(attr.to_raw());
        Some(
            (0..n)
                .map(|i| {
                    let named = sys::mlirDictionaryAttrGetElement(attr.to_raw(), i);
                    (
                        string_ref(sys::mlirIdentifierStr(named.name)),
                        Attribute::from_raw(named.attribute),
                    )
                })
                .collect(),
        )
    }
}

/// A `dense_resource` attribute of type `ty` whose blob borrows `data`
/// (no copy, no deleter): the caller keeps `data` alive and unchanged for as
/// long as the context may read the blob.
///
/// # Safety
/// `data` must outlive every use of the returned attribute and of the module
/// it is put in (including printing), and must not be mutated meanwhile.
pub(crate) unsafe fn unmanaged_resource<'c>(
    ty: Type<'c>,
    name: &str,
    data: &[u8],
    alignment: usize,
) -> Attribute<'c> {
    let name_ref = sys::MlirStringRef {
        data: name.as_ptr().cast(),
        length: name.len(),
    };
    // SAFETY: `ty` is a valid shaped type, `name` is copied by MLIR, and the
    // caller guarantees `data` outlives the attribute's uses; MLIR treats the
    // immutable blob as read-only (`dataIsMutable = false`).
    unsafe {
        Attribute::from_raw(sys::mlirUnmanagedDenseResourceElementsAttrGet(
            ty.to_raw(),
            name_ref,
            data.as_ptr().cast_mut().cast(),
            data.len(),
            alignment,
            false,
            None,
            std::ptr::null_mut(),
        ))
    }
}

/// A dense elements attribute of type `ty` from MLIR-format raw bytes (copied).
/// `None` if MLIR rejects the buffer size for the type.
pub(crate) fn dense_from_raw<'c>(ty: Type<'c>, raw: &[u8]) -> Option<Attribute<'c>> {
    // SAFETY: `ty` is a valid shaped type; MLIR copies `raw.len()` bytes from
    // a live slice and returns null when the length does not fit the type.
    unsafe {
        Attribute::from_option_raw(sys::mlirDenseElementsAttrRawBufferGet(
            ty.to_raw(),
            raw.len(),
            raw.as_ptr().cast(),
        ))
    }
}
