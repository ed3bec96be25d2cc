//! [`QuantizedView`]: a dense quantized tensor's stored values with their
//! scales, zero points and offsets, and the one dequantization formula.

use crate::buffer::BufferRole;
use crate::error::{Error, Result};
use crate::reader::TensorRef;
use crate::{ElementClass, ElementType, Layout, QuantizationScheme, minifloat, pack};

#[derive(Debug, Clone, Copy)]
pub(super) struct PackedOrWide<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) element_type: ElementType,
}

impl PackedOrWide<'_> {
    /// Element `i` as a number (integers exact; floats decoded exactly).
    pub(super) fn get(&self, i: u64) -> f64 {
        let t = self.element_type;
        let bits = t.bits();
        let raw = if bits < 8 || !bits.is_multiple_of(8) {
            u64::from(pack::code_at(self.bytes, bits, i).unwrap_or(0))
        } else {
            let n = (bits / 8) as usize;
            let at = i as usize * n;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&self.bytes[at..at + n]);
            u64::from_le_bytes(w)
        };
        match t.class() {
            ElementClass::SignedInt => ((raw << (64 - bits)) as i64 >> (64 - bits)) as f64,
            ElementClass::Float => minifloat::to_f64(t, raw).unwrap_or(f64::NAN),
            _ => raw as f64,
        }
    }
}

/// A dense quantized tensor: stored values plus their scales, zero points
/// and offsets.
#[derive(Debug, Clone)]
pub struct QuantizedView<'a> {
    stored: PackedOrWide<'a>,
    /// The scales' bytes, in `quantization.scale_type`.
    pub scales: &'a [u8],
    /// The zero points' bytes (empty for symmetric quantization).
    pub zero_points: &'a [u8],
    /// The offsets' bytes, in `quantization.offset_type` (empty without offsets).
    pub offsets: &'a [u8],
    pub quantization: crate::Quantization,
    dims: Vec<u64>,
}

impl QuantizedView<'_> {
    /// The stored bytes.
    pub fn stored_bytes(&self) -> &[u8] {
        self.stored.bytes
    }

    /// Dequantizes every element: `(stored - zero_point) * scale *
    /// tensor_scale + offset`, evaluated in f64 in that order and rounded
    /// once to f32. Every factor is decoded exactly (an E8M0 scale is a
    /// power of two, a NaN E8M0 scale makes its block NaN, as the OCP MX
    /// specification says).
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.len() as usize];
        self.dequantize_into(0, &mut out);
        out
    }

    /// The number of elements: the runtime's count (ADR-007: a 0 dimension
    /// first, so an empty `[2^40, 2^40, 0]` is 0, not an overflow). A
    /// non-empty count is bounded by the verified stored buffer.
    pub fn len(&self) -> u64 {
        crate::element_count(&self.dims).known().unwrap_or(0)
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`dequantize`](Self::dequantize) of the elements `start..start +
    /// out.len()` (row-major), into `out`: a caller streams a tensor of any
    /// size through a buffer of its own. Elements past the end are left as
    /// they are.
    pub fn dequantize_into(&self, start: u64, out: &mut [f32]) {
        let count = self.len();
        if start >= count {
            // Nothing to do; and an empty tensor's other dimensions may
            // multiply past u64 (ADR-007), so they are not multiplied.
            return;
        }
        let q = &self.quantization;
        let scales = PackedOrWide {
            bytes: self.scales,
            element_type: q.scale_type,
        };
        let zps = q.zero_point_type.map(|t| PackedOrWide {
            bytes: self.zero_points,
            element_type: t,
        });
        let offsets = q.offset_type.map(|t| PackedOrWide {
            bytes: self.offsets,
            element_type: t,
        });
        // Per-axis scales are indexed by the axis coordinate alone; per-block
        // scales have the tensor's shape with the axis divided into blocks.
        let (axis, block, per_axis) = match q.scheme {
            QuantizationScheme::PerTensor => (None, 1, false),
            QuantizationScheme::PerAxis { axis } => (Some(axis as usize), 1, true),
            QuantizationScheme::PerBlock { axis, block_size } => {
                (Some(axis as usize), block_size, false)
            }
        };
        let (inner, d_axis) = match axis {
            Some(a) => (self.dims[a + 1..].iter().product::<u64>(), self.dims[a]),
            None => (1, 1),
        };
        let blocks = d_axis.div_ceil(block);
        for (i, o) in (start..count).zip(out.iter_mut()) {
            let s = match axis {
                None => 0,
                Some(_) if per_axis => (i / inner) % d_axis,
                Some(_) => {
                    let outer = i / (d_axis * inner);
                    let a = (i / inner) % d_axis;
                    let r = i % inner;
                    (outer * blocks + a / block) * inner + r
                }
            };
            let zp = zps.as_ref().map_or(0.0, |z| z.get(s));
            let scaled = (self.stored.get(i) - zp) * scales.get(s) * q.tensor_scale;
            // No offsets add nothing, not +0.0 (which would turn a -0.0 into +0.0).
            let value = match &offsets {
                Some(o) => scaled + o.get(s),
                None => scaled,
            };
            *o = value as f32;
        }
    }
}

impl<'a> TensorRef<'a> {
    /// A quantized view: the stored values with their scales and zero points.
    pub fn quantized(&self) -> Result<QuantizedView<'a>> {
        let Some(quantization) = self.quantization() else {
            return Err(Error::InvalidField {
                tensor: self.name().to_owned(),
                field: "quantization".into(),
                value: "absent".into(),
                reason: "the tensor is not quantized".into(),
            });
        };
        let data = self.data()?;
        if matches!(self.layout(), Layout::Strided(_)) {
            return Err(self.layout_mismatch("dense", "quantized()"));
        }
        Ok(QuantizedView {
            stored: PackedOrWide {
                bytes: data,
                element_type: self.element_type(),
            },
            scales: self.buffer(BufferRole::Scales).unwrap_or(&[]),
            zero_points: self.buffer(BufferRole::ZeroPoints).unwrap_or(&[]),
            offsets: self.buffer(BufferRole::Offsets).unwrap_or(&[]),
            quantization,
            dims: self.dims_u64(),
        })
    }
}
