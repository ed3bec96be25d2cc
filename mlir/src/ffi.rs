//! Safe wrappers over the parts of the MLIR C API (mlir-sys) melior does not
//! wrap (or wraps in a way hostile input can make panic; see
//! [`crate::typed`] for what goes through melior), plus the one C++ accessor
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

use melior::ir::{Attribute, AttributeLike, Type, TypeLike};
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

/// The properties of an operation of an unregistered dialect, as the one
/// attribute MLIR holds them in: a dictionary when parsed from generic text,
/// whatever single attribute MLIR 22's bytecode reader decoded when the
/// producer wrote them with its dialect's own encoding. `None` for a
/// registered operation or one without properties.
pub(crate) fn unregistered_properties<'c>(
    op: &melior::ir::OperationRef<'c, '_>,
) -> Option<Attribute<'c>> {
    use melior::ir::operation::OperationLike;
    // SAFETY: `op` is a live operation; the shim only reads its properties
    // storage, an attribute owned by the context (null when absent), which
    // `from_option_raw` null-checks.
    unsafe { Attribute::from_option_raw(hurray_mlir_properties(op.to_raw())) }
}

/// The name of a bare named location `loc("name")` (a name given to a value,
/// with no source position under it); `None` for any other location,
/// including a name wrapping a position (`loc("jit(f)/add"(...))`, the
/// scope-path names JAX attaches to every op).
pub(crate) fn bare_location_name(loc: melior::ir::Location<'_>) -> Option<String> {
    // SAFETY: kind query on a live location, then the accessors of a name
    // location; the unknown location of the same context is uniqued, so
    // `mlirLocationEqual` tells whether the child is unknown.
    unsafe {
        if !sys::mlirLocationIsAName(loc.to_raw()) {
            return None;
        }
        let child = sys::mlirLocationNameGetChildLoc(loc.to_raw());
        let unknown = sys::mlirLocationUnknownGet(sys::mlirLocationGetContext(loc.to_raw()));
        if !sys::mlirLocationEqual(child, unknown) {
            return None;
        }
        let name = string_ref(sys::mlirIdentifierStr(sys::mlirLocationNameGetName(
            loc.to_raw(),
        )));
        (!name.is_empty()).then_some(name)
    }
}

/// The dialect namespace and body of an opaque type (a type of a dialect
/// the context does not have: `!torch.vtensor<[2,3],f32>` is
/// `("torch", "vtensor<[2,3],f32>")`).
pub(crate) fn opaque_type(ty: Type<'_>) -> Option<(String, String)> {
    // SAFETY: kind query on a live type, then the accessors of an opaque type.
    unsafe {
        if !sys::mlirTypeIsAOpaque(ty.to_raw()) {
            return None;
        }
        let dialect = string_ref(sys::mlirOpaqueTypeGetDialectNamespace(ty.to_raw()));
        Some((dialect, string_ref(sys::mlirOpaqueTypeGetData(ty.to_raw()))))
    }
}

/// Parses `text` as a type in the context of `like`; `None` if it does not
/// parse (MLIR reports that as a diagnostic, which the caller ignores).
pub(crate) fn parse_type_in<'c>(like: Type<'c>, text: &str) -> Option<Type<'c>> {
    let source = sys::MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    };
    // SAFETY: the context of a live type; `source` points at `text`, alive
    // for the call (MLIR copies what it keeps); a null result is `None`.
    unsafe {
        let context = sys::mlirTypeGetContext(like.to_raw());
        Type::from_option_raw(sys::mlirTypeParseGet(context, source))
    }
}

/// The location of a value (a block argument's, or its defining op's).
pub(crate) fn value_location<'c>(
    value: &impl melior::ir::ValueLike<'c>,
) -> melior::ir::Location<'c> {
    // SAFETY: a live value; MLIR returns its (context-owned, non-null) location.
    unsafe { melior::ir::Location::from_raw(sys::mlirValueGetLocation(value.to_raw())) }
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

/// A ranked shaped type's shape: `Ok(Some(d))` for a static size `d`,
/// `Ok(None)` for a dynamic one (MLIR's `kDynamic`, INT64_MIN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawDim {
    Static(u64),
    Dynamic,
    /// A negative size that is not `kDynamic`: malformed.
    Invalid(i64),
}

/// Shape facts of a type: `None` unless it is a ranked shaped type.
pub(crate) fn ranked_shape(ty: Type<'_>) -> Option<Vec<RawDim>> {
    // SAFETY: type queries, then bounded dimension accessors on a checked
    // ranked shaped type.
    unsafe {
        let raw = ty.to_raw();
        if !sys::mlirTypeIsAShaped(raw) || !sys::mlirShapedTypeHasRank(raw) {
            return None;
        }
        let rank = sys::mlirShapedTypeGetRank(raw);
        Some(
            (0..rank)
                .map(|i| {
                    let d = sys::mlirShapedTypeGetDimSize(raw, i as isize);
                    // kDynamic is translated explicitly: it is never a size.
                    if sys::mlirShapedTypeIsDynamicSize(d) {
                        RawDim::Dynamic
                    } else if d < 0 {
                        RawDim::Invalid(d)
                    } else {
                        RawDim::Static(d as u64)
                    }
                })
                .collect(),
        )
    }
}

/// The element type of a shaped type.
pub(crate) fn element_type<'c>(ty: Type<'c>) -> Option<Type<'c>> {
    // SAFETY: a type query, then the accessor on a checked shaped type.
    unsafe {
        if !sys::mlirTypeIsAShaped(ty.to_raw()) {
            return None;
        }
        Some(Type::from_raw(sys::mlirShapedTypeGetElementType(
            ty.to_raw(),
        )))
    }
}

/// The bit width MLIR stores one element of `ty` with, in a dense elements
/// attribute: 1 for i1 (bit-packed), otherwise the width rounded up to whole
/// bytes, complex counting both parts. `None` for other types.
pub(crate) fn dense_storage_bits(ty: Type<'_>) -> Option<u64> {
    // SAFETY: type queries, then width accessors on checked types.
    unsafe {
        let raw = ty.to_raw();
        if sys::mlirTypeIsAComplex(raw) {
            let inner = Type::from_raw(sys::mlirComplexTypeGetElementType(raw));
            return dense_storage_bits(inner).map(|b| 2 * b);
        }
        let bits = if sys::mlirTypeIsAInteger(raw) {
            u64::from(sys::mlirIntegerTypeGetWidth(raw))
        } else if sys::mlirTypeIsAFloat(raw) {
            u64::from(sys::mlirFloatTypeGetWidth(raw))
        } else if sys::mlirTypeIsAIndex(raw) {
            64
        } else {
            return None;
        };
        Some(if bits == 1 { 1 } else { bits.div_ceil(8) * 8 })
    }
}

// ---- sparse_tensor encodings ----

/// A `#sparse_tensor.encoding` reduced to what Hurray's layouts need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SparseEncoding {
    /// Level formats, outermost first.
    pub(crate) levels: Vec<SparseLevel>,
    /// The level order as dimension positions (`None` when the map is not a
    /// permutation).
    pub(crate) dim_of_level: Option<Vec<usize>>,
    pub(crate) pos_width: u32,
    pub(crate) crd_width: u32,
}

/// One level's storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SparseLevel {
    Dense,
    Compressed { unique: bool },
    Singleton { unique: bool },
    Other(u64),
}

/// The sparse encoding of `attr`, if it is a `#sparse_tensor.encoding`.
pub(crate) fn sparse_encoding(attr: Attribute<'_>) -> Option<SparseEncoding> {
    // SAFETY: a type query, then bounded level accessors on a checked
    // sparse tensor encoding; the affine map handles belong to the context.
    unsafe {
        let raw = attr.to_raw();
        if !sys::mlirAttributeIsASparseTensorEncodingAttr(raw) {
            return None;
        }
        let rank = sys::mlirSparseTensorEncodingGetLvlRank(raw);
        let mut levels = Vec::new();
        for l in 0..rank {
            let lt = sys::mlirSparseTensorEncodingAttrGetLvlType(raw, l);
            let fmt = u64::from(sys::mlirSparseTensorEncodingAttrGetLvlFmt(raw, l));
            let unique =
                lt & u64::from(
                    sys::MlirSparseTensorLevelPropertyNondefault_MLIR_SPARSE_PROPERTY_NON_UNIQUE,
                ) == 0;
            levels.push(match fmt {
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_DENSE,
                    ) =>
                {
                    SparseLevel::Dense
                }
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_COMPRESSED,
                    ) =>
                {
                    SparseLevel::Compressed { unique }
                }
                f if f
                    == u64::from(
                        sys::MlirSparseTensorLevelFormat_MLIR_SPARSE_TENSOR_LEVEL_SINGLETON,
                    ) =>
                {
                    SparseLevel::Singleton { unique }
                }
                f => SparseLevel::Other(f),
            });
        }
        let map = sys::mlirSparseTensorEncodingAttrGetDimToLvl(raw);
        let dim_of_level = if map.ptr.is_null() {
            Some((0..levels.len()).collect())
        } else if sys::mlirAffineMapIsPermutation(map) {
            let n = sys::mlirAffineMapGetNumResults(map);
            let mut dims = Vec::new();
            for i in 0..n {
                let e = sys::mlirAffineMapGetResult(map, i);
                if !sys::mlirAffineExprIsADim(e) {
                    break;
                }
                dims.push(sys::mlirAffineDimExprGetPosition(e) as usize);
            }
            (dims.len() == n as usize).then_some(dims)
        } else {
            None
        };
        Some(SparseEncoding {
            levels,
            dim_of_level,
            pos_width: sys::mlirSparseTensorEncodingAttrGetPosWidth(raw) as u32,
            crd_width: sys::mlirSparseTensorEncodingAttrGetCrdWidth(raw) as u32,
        })
    }
}

// ---- quant types ----

/// A `!quant.uniform` type reduced to Hurray's quantization descriptor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuantType<'c> {
    pub(crate) storage: Type<'c>,
    pub(crate) expressed: Type<'c>,
    pub(crate) storage_min: i64,
    pub(crate) storage_max: i64,
    pub(crate) kind: QuantKind,
}

/// The granularity of a uniform quantized type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QuantKind {
    PerTensor {
        scale: f64,
        zero_point: i64,
    },
    PerAxis {
        axis: i32,
        scales: Vec<f64>,
        zero_points: Vec<i64>,
    },
    /// Sub-channel (blockwise): block sizes per quantized dimension, and the
    /// scales / zero points as dense elements attributes.
    SubChannel {
        dims: Vec<(i32, i64)>,
        scales: String,
        zero_points: String,
        scale_values: Vec<f64>,
        zero_point_values: Vec<i64>,
    },
    /// A quantized type Hurray has no descriptor for (any, calibrated).
    Other,
}

/// The quantized type `ty`, if it is one.
pub(crate) fn quant_type(ty: Type<'_>) -> Option<QuantType<'_>> {
    // SAFETY: type queries, then accessors on checked quantized types with
    // indices bounded by the reported counts.
    unsafe {
        let raw = ty.to_raw();
        if !sys::mlirTypeIsAQuantizedType(raw) {
            return None;
        }
        let kind = if sys::mlirTypeIsAUniformQuantizedType(raw) {
            QuantKind::PerTensor {
                scale: sys::mlirUniformQuantizedTypeGetScale(raw),
                zero_point: sys::mlirUniformQuantizedTypeGetZeroPoint(raw),
            }
        } else if sys::mlirTypeIsAUniformQuantizedPerAxisType(raw) {
            let n = sys::mlirUniformQuantizedPerAxisTypeGetNumDims(raw);
            QuantKind::PerAxis {
                axis: sys::mlirUniformQuantizedPerAxisTypeGetQuantizedDimension(raw),
                scales: (0..n)
                    .map(|i| sys::mlirUniformQuantizedPerAxisTypeGetScale(raw, i))
                    .collect(),
                zero_points: (0..n)
                    .map(|i| sys::mlirUniformQuantizedPerAxisTypeGetZeroPoint(raw, i))
                    .collect(),
            }
        } else if sys::mlirTypeIsAUniformQuantizedSubChannelType(raw) {
            let n = sys::mlirUniformQuantizedSubChannelTypeGetNumBlockSizes(raw);
            let dims = (0..n)
                .map(|i| {
                    (
                        sys::mlirUniformQuantizedSubChannelTypeGetQuantizedDimension(raw, i),
                        sys::mlirUniformQuantizedSubChannelTypeGetBlockSize(raw, i),
                    )
                })
                .collect();
            let scales = Attribute::from_raw(sys::mlirUniformQuantizedSubChannelTypeGetScales(raw));
            let zps =
                Attribute::from_raw(sys::mlirUniformQuantizedSubChannelTypeGetZeroPoints(raw));
            let count = sys::mlirElementsAttrGetNumElements(scales.to_raw());
            let count_zp = sys::mlirElementsAttrGetNumElements(zps.to_raw());
            // Typed accessors do not check the element width: dispatch on it.
            let float_at = |a: Attribute<'_>, i: i64| -> f64 {
                let el = sys::mlirShapedTypeGetElementType(sys::mlirAttributeGetType(a.to_raw()));
                match (sys::mlirTypeIsAFloat(el), sys::mlirFloatTypeGetWidth(el)) {
                    (true, 32) => f64::from(sys::mlirDenseElementsAttrGetFloatValue(
                        a.to_raw(),
                        i as isize,
                    )),
                    (true, 64) => sys::mlirDenseElementsAttrGetDoubleValue(a.to_raw(), i as isize),
                    _ => f64::NAN,
                }
            };
            let int_at = |a: Attribute<'_>, i: i64| -> i64 {
                let el = sys::mlirShapedTypeGetElementType(sys::mlirAttributeGetType(a.to_raw()));
                if !sys::mlirTypeIsAInteger(el) {
                    return 0;
                }
                let p = i as isize;
                match sys::mlirIntegerTypeGetWidth(el) {
                    8 => i64::from(sys::mlirDenseElementsAttrGetInt8Value(a.to_raw(), p)),
                    16 => i64::from(sys::mlirDenseElementsAttrGetInt16Value(a.to_raw(), p)),
                    32 => i64::from(sys::mlirDenseElementsAttrGetInt32Value(a.to_raw(), p)),
                    64 => sys::mlirDenseElementsAttrGetInt64Value(a.to_raw(), p),
                    _ => 0,
                }
            };
            let dense = |a: Attribute<'_>| sys::mlirAttributeIsADenseElements(a.to_raw());
            QuantKind::SubChannel {
                dims,
                scales: attr_str(scales),
                zero_points: attr_str(zps),
                scale_values: if dense(scales) {
                    (0..count).map(|i| float_at(scales, i)).collect()
                } else {
                    Vec::new()
                },
                zero_point_values: if dense(zps) {
                    (0..count_zp).map(|i| int_at(zps, i)).collect()
                } else {
                    Vec::new()
                },
            }
        } else {
            QuantKind::Other
        };
        Some(QuantType {
            storage: Type::from_raw(sys::mlirQuantizedTypeGetStorageType(raw)),
            expressed: Type::from_raw(sys::mlirQuantizedTypeGetExpressedType(raw)),
            storage_min: sys::mlirQuantizedTypeGetStorageTypeMin(raw),
            storage_max: sys::mlirQuantizedTypeGetStorageTypeMax(raw),
            kind,
        })
    }
}

/// Whether `ty` is a quantized type whose storage is signed; false for any
/// other type.
pub(crate) fn quant_is_signed(ty: Type<'_>) -> bool {
    // SAFETY: the accessor runs only on a type checked to be a quantized type,
    // which is what it requires.
    ty.is_quantized_type() && unsafe { sys::mlirQuantizedTypeIsSigned(ty.to_raw()) }
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

/// A type for messages.
pub(crate) fn describe(ty: Type<'_>) -> String {
    type_str(ty)
}

/// The result types of the operations using `value`, with their op names.
pub(crate) fn user_results<'c>(value: melior::ir::Value<'c, '_>) -> Vec<(String, Vec<Type<'c>>)> {
    use melior::ir::ValueLike;
    let mut out = Vec::new();
    // SAFETY: `value` is a live SSA value; the use list is walked with the C
    // API's own null checks, and each owner is a live operation of the same
    // context whose name and result types are read only.
    unsafe {
        let mut use_ = sys::mlirValueGetFirstUse(value.to_raw());
        while !sys::mlirOpOperandIsNull(use_) {
            let owner = sys::mlirOpOperandGetOwner(use_);
            let name = sys::mlirIdentifierStr(sys::mlirOperationGetName(owner));
            let results = (0..sys::mlirOperationGetNumResults(owner))
                .map(|i| {
                    Type::from_raw(sys::mlirValueGetType(sys::mlirOperationGetResult(owner, i)))
                })
                .collect();
            out.push((string_ref(name), results));
            use_ = sys::mlirOpOperandGetNextUse(use_);
        }
    }
    out
}

// ---- printing ----
//
// melior's `Display` impls fail (and `to_string` then panics) when MLIR
// prints bytes that are not UTF-8, which malformed input can cause (a mangled
// file name in a location, a mangled string attribute). A panic inside the
// diagnostic callback would abort. Everything is printed here, lossily.

unsafe extern "C" fn collect_bytes(s: sys::MlirStringRef, data: *mut std::ffi::c_void) {
    if s.data.is_null() || s.length == 0 || data.is_null() {
        return;
    }
    // SAFETY: `data` is the `&mut Vec<u8>` passed by `printed` below, alive for
    // the duration of the print call; `s` points at `length` bytes from MLIR.
    let (out, bytes) = unsafe {
        (
            &mut *data.cast::<Vec<u8>>(),
            std::slice::from_raw_parts(s.data.cast::<u8>(), s.length),
        )
    };
    out.extend_from_slice(bytes);
}

type Printer = unsafe extern "C" fn(sys::MlirStringRef, *mut std::ffi::c_void);

/// Runs an MLIR print function with a callback collecting its bytes.
fn printed(print: impl FnOnce(Printer, *mut std::ffi::c_void)) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    print(collect_bytes, (&mut out as *mut Vec<u8>).cast());
    out
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// An MLIR type as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn type_str(ty: Type<'_>) -> String {
    // SAFETY: prints a valid type through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirTypePrint(ty.to_raw(), Some(cb), data)
    }))
}

/// An MLIR attribute as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn attr_str(attr: Attribute<'_>) -> String {
    // SAFETY: prints a valid attribute through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirAttributePrint(attr.to_raw(), Some(cb), data)
    }))
}

/// A location as MLIR prints it (non-UTF-8 bytes replaced).
pub(crate) fn location_str(loc: melior::ir::Location<'_>) -> String {
    // SAFETY: prints a valid location through `collect_bytes` into a live Vec.
    lossy(printed(|cb, data| unsafe {
        sys::mlirLocationPrint(loc.to_raw(), Some(cb), data)
    }))
}

/// A diagnostic as `location: message`, with its notes (non-UTF-8 bytes
/// replaced).
///
/// # Safety
/// `d` must be a diagnostic being handled (valid for the handler call).
pub(crate) unsafe fn diagnostic_str(d: sys::MlirDiagnostic) -> String {
    // SAFETY: `d` is valid (caller contract); its location and notes are
    // owned by it; every print goes through `collect_bytes` into a live Vec.
    unsafe {
        let loc = sys::mlirDiagnosticGetLocation(d);
        let mut text = lossy(printed(|cb, data| {
            sys::mlirLocationPrint(loc, Some(cb), data)
        }));
        text.push_str(": ");
        text.push_str(&lossy(printed(|cb, data| {
            sys::mlirDiagnosticPrint(d, Some(cb), data)
        })));
        for i in 0..sys::mlirDiagnosticGetNumNotes(d) {
            let note = sys::mlirDiagnosticGetNote(d, i);
            text.push_str("\n  note: ");
            text.push_str(&lossy(printed(|cb, data| {
                sys::mlirDiagnosticPrint(note, Some(cb), data)
            })));
        }
        text
    }
}

/// An operation (with its regions, and resources for a top-level module)
/// as MLIR prints it.
pub(crate) fn operation_bytes(op: melior::ir::OperationRef<'_, '_>) -> Vec<u8> {
    // SAFETY: prints a valid operation through `collect_bytes` into a live Vec.
    printed(|cb, data| unsafe { sys::mlirOperationPrint(op.to_raw(), Some(cb), data) })
}

/// The operation defining `value`, if it is an operation result (not a block
/// argument).
pub(crate) fn defining_op<'c, 'a>(
    value: melior::ir::Value<'c, 'a>,
) -> Option<melior::ir::OperationRef<'c, 'a>> {
    use melior::ir::ValueLike;
    // SAFETY: a kind query on a live value, then its owner, a live operation
    // of the same context (null-checked by `from_option_raw`).
    unsafe {
        if !sys::mlirValueIsAOpResult(value.to_raw()) {
            return None;
        }
        melior::ir::OperationRef::from_option_raw(sys::mlirOpResultGetOwner(value.to_raw()))
    }
}
