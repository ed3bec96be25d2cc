//! Reads of attributes and types through melior's checked wrappers
//! (`TryFrom<Attribute>` for `IntegerAttribute`, `ArrayAttribute`, …,
//! `TryFrom<Type>` for `RankedTensorType`, `FunctionType`, and the `is_*`
//! queries of `AttributeLike`/`TypeLike`): no `unsafe` here. What melior does
//! not wrap, or wraps unsoundly for hostile input, stays in [`crate::ffi`]:
//! string values and dictionary keys (melior's `StringRef::as_str` indexes
//! the last byte of the string, so an empty string attribute panics, and
//! `StringAttribute::value` unwraps the UTF-8 check), shapes (melior's
//! `dim_size` turns a malformed negative size into a huge static one),
//! element types of unranked types, blobs, sparse encodings and quantized
//! types.

use melior::ir::attribute::{
    ArrayAttribute, BoolAttribute, DenseI64ArrayAttribute, FloatAttribute, IntegerAttribute,
    TypeAttribute,
};
use melior::ir::r#type::{FunctionType, RankedTensorType};
use melior::ir::{Attribute, AttributeLike, Type, TypeLike};

/// The type of an attribute.
pub(crate) fn attr_type<'c>(attr: Attribute<'c>) -> Type<'c> {
    attr.r#type()
}

/// Whether `attr` is a `DenseElementsAttr` (int, float, complex or string).
pub(crate) fn is_dense_elements(attr: Attribute<'_>) -> bool {
    attr.is_dense_elements()
}

/// Whether `attr` is a `SparseElementsAttr`.
pub(crate) fn is_sparse_elements(attr: Attribute<'_>) -> bool {
    attr.is_sparse_elements()
}

/// Whether `attr` is any elements attribute Hurray knows how to read.
pub(crate) fn is_elements(attr: Attribute<'_>) -> bool {
    is_dense_elements(attr) || is_sparse_elements(attr) || crate::ffi::is_dense_resource(attr)
}

/// The type wrapped by a `TypeAttr`, if `attr` is one.
pub(crate) fn type_attr_value<'c>(attr: Attribute<'c>) -> Option<Type<'c>> {
    TypeAttribute::try_from(attr).ok().map(|t| t.value())
}

/// The value of an `IntegerAttr` (sign-extended), if `attr` is one.
pub(crate) fn integer_attr(attr: Attribute<'_>) -> Option<i64> {
    IntegerAttribute::try_from(attr).ok().map(|i| i.value())
}

/// The value of a `FloatAttr` as an f64 (exact for an `f64` attribute), if
/// `attr` is one.
pub(crate) fn float_attr(attr: Attribute<'_>) -> Option<f64> {
    FloatAttribute::try_from(attr).ok().map(|f| f.value())
}

/// The value of a `BoolAttr`, if `attr` is one.
pub(crate) fn bool_attr(attr: Attribute<'_>) -> Option<bool> {
    BoolAttribute::try_from(attr).ok().map(|b| b.value())
}

/// Whether `attr` is the unit attribute.
pub(crate) fn is_unit(attr: Attribute<'_>) -> bool {
    attr.is_unit()
}

/// The elements of an `ArrayAttr`, if `attr` is one.
pub(crate) fn array_attr<'c>(attr: Attribute<'c>) -> Option<Vec<Attribute<'c>>> {
    let array = ArrayAttribute::try_from(attr).ok()?;
    (0..array.len()).map(|i| array.element(i).ok()).collect()
}

/// The values of a `DenseI64ArrayAttr` (`array<i64: ...>`), if `attr` is one.
pub(crate) fn i64_array_attr(attr: Attribute<'_>) -> Option<Vec<i64>> {
    let array = DenseI64ArrayAttribute::try_from(attr).ok()?;
    (0..array.len()).map(|i| array.element(i).ok()).collect()
}

/// Whether `ty` is a ranked tensor type.
pub(crate) fn is_ranked_tensor(ty: Type<'_>) -> bool {
    ty.is_ranked_tensor()
}

/// Whether `ty` is an unranked tensor or memref type.
pub(crate) fn is_unranked_shaped(ty: Type<'_>) -> bool {
    ty.is_unranked_tensor() || ty.is_unranked_mem_ref()
}

/// The encoding attribute of a ranked tensor type.
pub(crate) fn tensor_encoding<'c>(ty: Type<'c>) -> Option<Attribute<'c>> {
    RankedTensorType::try_from(ty).ok()?.encoding()
}

/// Inputs and results of a `FunctionType`.
pub(crate) fn function_type<'c>(ty: Type<'c>) -> Option<(Vec<Type<'c>>, Vec<Type<'c>>)> {
    let f = FunctionType::try_from(ty).ok()?;
    let inputs: Option<Vec<_>> = (0..f.input_count()).map(|i| f.input(i).ok()).collect();
    let results: Option<Vec<_>> = (0..f.result_count()).map(|i| f.result(i).ok()).collect();
    Some((inputs?, results?))
}
