//! quant types: a quantized type (`!quant.uniform` per tensor, per axis or
//! sub-channel) reduced to Hurray's quantization descriptor.

use super::print::attr_str;
use melior::ir::{Attribute, AttributeLike, Type, TypeLike};
use mlir_sys as sys;

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
