//! `!quant` element types to Hurray quantization descriptors: storage type,
//! scheme, and the scale / zero-point bytes.

use super::Collector;
use crate::error::{Error, Result};
use crate::ffi::{self, QuantKind};
use crate::types::Storage;
use hurray::{
    Dim, ElementType, Quantization, descriptor::QuantizationScheme, elements::ElementClass,
};
use melior::ir::Type;

/// Storage element type, descriptor, and the scale / zero-point bytes.
pub(crate) type QuantParts = (ElementType, Quantization, (Vec<u8>, Vec<u8>));

impl<'c> Collector<'c> {
    /// The quantization descriptor of `q` (on a tensor of `shape`): storage
    /// element type, descriptor, and the scale / zero-point bytes.
    pub(crate) fn quantization(
        &self,
        q: &ffi::QuantType<'c>,
        el: Type<'c>,
        shape: &[Dim],
        desc: &str,
        context: &str,
    ) -> Result<QuantParts> {
        let unsupported = |reason: String| Error::Unsupported {
            op: desc.to_owned(),
            what: format!("quantized type {}", ffi::type_str(el)),
            reason,
        };
        let storage = self.storage_type(q, el, desc, context)?;
        let expressed = self.element(q.expressed, desc, &format!("{context}, expressed type"))?;
        if expressed.class() != ElementClass::Float {
            return Err(unsupported(format!(
                "expressed type {} is not a float",
                ffi::type_str(q.expressed)
            )));
        }
        let (scheme, scales, zps): (QuantizationScheme, Vec<f64>, Vec<i64>) = match &q.kind {
            QuantKind::PerTensor { scale, zero_point } => (
                QuantizationScheme::PerTensor,
                vec![*scale],
                vec![*zero_point],
            ),
            QuantKind::PerAxis {
                axis,
                scales,
                zero_points,
            } => {
                let axis = u32::try_from(*axis)
                    .map_err(|_| unsupported(format!("negative quantized dimension {axis}")))?;
                (
                    QuantizationScheme::PerAxis { axis },
                    scales.clone(),
                    zero_points.clone(),
                )
            }
            QuantKind::SubChannel {
                dims,
                scale_values,
                zero_point_values,
                ..
            } => {
                let blocked: Vec<_> = dims.iter().filter(|(_, b)| *b != 1).collect();
                let [(axis, block)] = blocked.as_slice() else {
                    return Err(unsupported(format!(
                        "sub-channel quantization with block sizes {dims:?}: Hurray's per-block \
                         scheme blocks exactly one axis"
                    )));
                };
                let axis = u32::try_from(*axis)
                    .map_err(|_| unsupported(format!("negative quantized dimension {axis}")))?;
                let block_size = u64::try_from(*block)
                    .ok()
                    .filter(|b| *b > 0)
                    .ok_or_else(|| unsupported(format!("block size {block}")))?;
                (
                    QuantizationScheme::PerBlock { axis, block_size },
                    scale_values.clone(),
                    zero_point_values.clone(),
                )
            }
            QuantKind::Other => {
                return Err(unsupported(
                    "only !quant.uniform (per-tensor, per-axis, sub-channel) has a Hurray descriptor"
                        .into(),
                ));
            }
        };
        let _ = shape;
        let symmetric = zps.iter().all(|z| *z == 0);
        let quant = Quantization {
            scheme,
            expressed_type: expressed,
            scale_type: ElementType::Float64,
            zero_point_type: (!symmetric).then_some(ElementType::Int64),
            storage_min: q.storage_min,
            storage_max: q.storage_max,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        };
        let scale_bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        let zp_bytes: Vec<u8> = if symmetric {
            Vec::new()
        } else {
            zps.iter().flat_map(|z| z.to_le_bytes()).collect()
        };
        Ok((storage, quant, (scale_bytes, zp_bytes)))
    }

    pub(crate) fn storage_type(
        &self,
        q: &ffi::QuantType<'c>,
        el: Type<'c>,
        desc: &str,
        context: &str,
    ) -> Result<ElementType> {
        let st = q.storage;
        let spelled = ffi::type_str(st);
        // Integer storage is signless in MLIR, with a signedness flag.
        if let Some(width) = spelled
            .strip_prefix('i')
            .filter(|w| w.parse::<u32>().is_ok())
        {
            let name = if ffi::quant_is_signed(el) {
                format!("i{width}")
            } else {
                format!("ui{width}")
            };
            return ElementType::from_mlir_name(&name).ok_or_else(|| Error::UnsupportedType {
                op: desc.to_owned(),
                ty: format!("{name} (storage of {})", ffi::type_str(el)),
                context: context.to_owned(),
                hint: "",
            });
        }
        self.element(st, desc, &format!("{context}, storage type"))
    }
}

/// Checks that MLIR stores elements of `data_el` the way `storage` expects.
pub(crate) fn check_storage(data_el: Type<'_>, storage: Storage, desc: &str) -> Result<()> {
    let bits = ffi::dense_storage_bits(data_el);
    let ok = match storage {
        Storage::Same { bytes } => bits == Some(bytes as u64 * 8),
        Storage::Bits => bits == Some(1),
        Storage::BytePerElement { .. } => bits == Some(8),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::Malformed {
            op: desc.to_owned(),
            reason: format!(
                "values of element type {} do not match the declared type",
                ffi::type_str(data_el)
            ),
        })
    }
}
