//! Types: opaque types of dialects the context does not have, parsing a
//! type, and the shape, element type and dense storage width of shaped types.

use super::string_ref;
use melior::ir::{Type, TypeLike};
use mlir_sys as sys;

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
