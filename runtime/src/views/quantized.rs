//! [`QuantizedView`]: a dense quantized tensor's stored values with their
//! scales, zero points, offsets and (format 1.4) code table, group index
//! and quantized scales and offsets, and the one dequantization formula.

use super::values::PackedOrWide;
use crate::buffer::BufferRole;
use crate::error::{Error, Result};
use crate::quantization::QuantizationKind as Kind;
use crate::reader::TensorRef;
use crate::{Layout, Quantization, quantization::QuantizationScheme};

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
    pub quantization: Quantization,
    /// The format 1.4 buffers, in the order of
    /// [`BufferRole::QUANTIZATION_1_4`] (empty when absent).
    extra: [&'a [u8]; 6],
    dims: Vec<u64>,
}

impl QuantizedView<'_> {
    /// The stored bytes.
    pub fn stored_bytes(&self) -> &[u8] {
        self.stored.bytes
    }

    /// The bytes of the format 1.4 buffer of `role` (empty when absent).
    pub fn buffer(&self, role: BufferRole) -> &[u8] {
        match role {
            BufferRole::Values => self.stored.bytes,
            BufferRole::Scales => self.scales,
            BufferRole::ZeroPoints => self.zero_points,
            BufferRole::Offsets => self.offsets,
            _ => BufferRole::QUANTIZATION_1_4
                .iter()
                .position(|r| *r == role)
                .map_or(&[], |i| self.extra[i]),
        }
    }

    /// Dequantizes every element (data-model.md section 7): `v = (stored -
    /// zero_point)`, or `code_table[stored]` with a code table; `x = v *
    /// scale * tensor_scale + offset`, evaluated in f64 in that order and
    /// rounded once to f32; then, when the tensor offset is not 0, `x +
    /// tensor_offset` rounded to f32 again. Quantized scales and offsets
    /// are first dequantized to f32 by the same rule. Every factor is decoded
    /// exactly (an E8M0 scale is a power of two, a NaN E8M0 scale makes its
    /// block NaN, as the OCP MX specification says). A block format's blocks
    /// are decoded as their format defines.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.len() as usize];
        self.dequantize_into(0, &mut out);
        out
    }

    /// The number of elements: the runtime's count (ADR-007: a 0 dimension
    /// first, so an empty `[2^40, 2^40, 0]` is 0, not an overflow). A
    /// non-empty count is bounded by the verified stored buffer.
    pub fn len(&self) -> u64 {
        crate::count::element_count(&self.dims).known().unwrap_or(0)
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
        let n = out.len().min((count - start) as usize);
        if let Some(format) = self.quantization.block_format {
            super::blocks::dequantize_into(format, self.stored.bytes, start, &mut out[..n]);
            return;
        }
        let level = self.top_level();
        for (i, o) in (start..count).zip(out.iter_mut()) {
            *o = level.value(i);
        }
    }

    fn top_level(&self) -> Level<'_> {
        let q = &self.quantization;
        let extra = |role: BufferRole| self.buffer(role);
        let scales = match q.scale_quantization.as_deref() {
            None => Factor::Direct(PackedOrWide {
                bytes: self.scales,
                element_type: q.scale_type,
            }),
            Some(l) => Factor::Quantized(Box::new(Level::second(
                l,
                PackedOrWide {
                    bytes: self.scales,
                    element_type: q.scale_type,
                },
                &q.scheme.scale_shape(&self.dims),
                extra(BufferRole::ScaleScales),
                extra(BufferRole::ScaleCodeTable),
            ))),
        };
        let offsets = q.offset_type.map(|t| {
            let codes = PackedOrWide {
                bytes: self.offsets,
                element_type: t,
            };
            match q.offset_quantization.as_deref() {
                None => Factor::Direct(codes),
                Some(l) => Factor::Quantized(Box::new(Level::second(
                    l,
                    codes,
                    &q.scheme.scale_shape(&self.dims),
                    extra(BufferRole::OffsetScales),
                    extra(BufferRole::OffsetCodeTable),
                ))),
            }
        });
        Level {
            codes: self.stored,
            table: q.code_table_type.map(|t| PackedOrWide {
                bytes: extra(BufferRole::CodeTable),
                element_type: t,
            }),
            zero_points: q.zero_point_type.map(|t| PackedOrWide {
                bytes: self.zero_points,
                element_type: t,
            }),
            scales,
            offsets,
            geometry: Geometry::new(
                &q.scheme,
                &self.dims,
                group_index(q, extra(BufferRole::GroupIndex)),
            ),
            tensor_scale: q.tensor_scale,
            tensor_offset: q.tensor_offset,
        }
    }
}

fn group_index<'a>(q: &Quantization, bytes: &'a [u8]) -> Option<&'a [u8]> {
    q.group_index_type.map(|_| bytes)
}

/// Where an element's scale is: the scheme over a shape.
#[derive(Debug, Clone, Copy)]
struct Geometry<'a> {
    kind: Kind,
    /// Elements per index of the axis (the product of the later dimensions).
    inner: u64,
    d_axis: u64,
    block: u64,
    blocks: u64,
    /// Per block with a group index: the `i32` group of each axis index.
    group: Option<&'a [u8]>,
}

impl<'a> Geometry<'a> {
    fn new(scheme: &QuantizationScheme, dims: &[u64], group: Option<&'a [u8]>) -> Self {
        let (kind, axis, block) = match *scheme {
            QuantizationScheme::PerTensor => (Kind::PerTensor, None, 1),
            QuantizationScheme::PerAxis { axis } => (Kind::PerAxis, Some(axis as usize), 1),
            QuantizationScheme::PerBlock { axis, block_size } => {
                (Kind::PerBlock, Some(axis as usize), block_size.max(1))
            }
            QuantizationScheme::PerFlatBlock { block_size } => {
                (Kind::PerFlatBlock, None, block_size.max(1))
            }
        };
        let (inner, d_axis) = match axis {
            Some(a) if a < dims.len() => (dims[a + 1..].iter().product::<u64>(), dims[a]),
            _ => (1, 1),
        };
        Geometry {
            kind,
            inner: inner.max(1),
            d_axis: d_axis.max(1),
            block,
            blocks: d_axis.div_ceil(block),
            group,
        }
    }

    /// The index of element `i`'s scale.
    fn index(&self, i: u64) -> u64 {
        match self.kind {
            Kind::PerTensor => 0,
            Kind::PerAxis => (i / self.inner) % self.d_axis,
            Kind::PerFlatBlock => i / self.block,
            Kind::PerBlock => {
                let outer = i / (self.d_axis * self.inner);
                let a = (i / self.inner) % self.d_axis;
                let r = i % self.inner;
                let b = match self.group {
                    // Checked in range when the view was made.
                    Some(g) => group_at(g, a).unwrap_or(0),
                    None => a / self.block,
                };
                (outer * self.blocks + b) * self.inner + r
            }
        }
    }
}

/// Entry `a` of a group index, if it is there and not negative.
fn group_at(g: &[u8], a: u64) -> Option<u64> {
    let at = usize::try_from(a).ok()?.checked_mul(4)?;
    let b: [u8; 4] = g.get(at..at + 4)?.try_into().ok()?;
    u64::try_from(i32::from_le_bytes(b)).ok()
}

/// A scale or offset: read as stored, or dequantized by a second level.
#[derive(Debug)]
enum Factor<'a> {
    Direct(PackedOrWide<'a>),
    Quantized(Box<Level<'a>>),
}

impl Factor<'_> {
    fn get(&self, j: u64) -> f64 {
        match self {
            Factor::Direct(p) => p.get(j),
            Factor::Quantized(l) => f64::from(l.value(j)),
        }
    }
}

/// One level of the formula: codes, their table or zero points, scales,
/// offsets, and where each element's scale is.
#[derive(Debug)]
struct Level<'a> {
    codes: PackedOrWide<'a>,
    table: Option<PackedOrWide<'a>>,
    zero_points: Option<PackedOrWide<'a>>,
    scales: Factor<'a>,
    offsets: Option<Factor<'a>>,
    geometry: Geometry<'a>,
    tensor_scale: f64,
    tensor_offset: f64,
}

impl<'a> Level<'a> {
    /// The second level `l` over the scale (or offset) array of `shape`,
    /// whose codes are `codes`.
    fn second(
        l: &Quantization,
        codes: PackedOrWide<'a>,
        shape: &[u64],
        scales: &'a [u8],
        table: &'a [u8],
    ) -> Self {
        Level {
            codes,
            table: l.code_table_type.map(|t| PackedOrWide {
                bytes: table,
                element_type: t,
            }),
            zero_points: None,
            scales: Factor::Direct(PackedOrWide {
                bytes: scales,
                element_type: l.scale_type,
            }),
            offsets: None,
            geometry: Geometry::new(&l.scheme, shape, None),
            tensor_scale: l.tensor_scale,
            tensor_offset: l.tensor_offset,
        }
    }

    /// Element `i`, dequantized.
    fn value(&self, i: u64) -> f32 {
        let s = self.geometry.index(i);
        let v = match &self.table {
            // Codes under a table are unsigned and index it (sized 2^bits).
            Some(t) => t.get(self.codes.raw(i)),
            None => {
                let zp = self.zero_points.as_ref().map_or(0.0, |z| z.get(s));
                self.codes.get(i) - zp
            }
        };
        let scaled = v * self.scales.get(s) * self.tensor_scale;
        // No offsets add nothing, not +0.0 (which would turn a -0.0 into +0.0).
        let x = match &self.offsets {
            Some(o) => (scaled + o.get(s)) as f32,
            None => scaled as f32,
        };
        if self.tensor_offset == 0.0 {
            x
        } else {
            (f64::from(x) + self.tensor_offset) as f32
        }
    }
}

impl<'a> TensorRef<'a> {
    /// A quantized view: the stored values with their scales and zero
    /// points. A group index is checked here, entry by entry, before any
    /// value is computed with it.
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
        let buffer = |role| self.buffer(role).unwrap_or(&[]);
        let extra = BufferRole::QUANTIZATION_1_4.map(buffer);
        let dims = self.dims_u64();
        if let (Some(_), QuantizationScheme::PerBlock { axis, block_size }) =
            (quantization.group_index_type, quantization.scheme)
        {
            check_group_index(self.name(), extra[1], dims[axis as usize], block_size)?;
        }
        Ok(QuantizedView {
            stored: PackedOrWide {
                bytes: data,
                element_type: self.element_type(),
            },
            scales: buffer(BufferRole::Scales),
            zero_points: buffer(BufferRole::ZeroPoints),
            offsets: buffer(BufferRole::Offsets),
            quantization,
            extra,
            dims,
        })
    }
}

/// Every entry of a group index names one of the axis's blocks.
fn check_group_index(tensor: &str, g: &[u8], d_axis: u64, block: u64) -> Result<()> {
    let groups = d_axis.div_ceil(block.max(1));
    for (j, e) in g.chunks_exact(4).enumerate() {
        let v = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        if v < 0 || v as u64 >= groups {
            return Err(Error::InvalidField {
                tensor: tensor.to_owned(),
                field: format!("group_index[{j}]"),
                value: v.to_string(),
                reason: format!("a group of the axis's {groups}"),
            });
        }
    }
    Ok(())
}
