//! The semantic rules of a tensor descriptor, shared by the reader (on every
//! tensor of a file it opens) and the writer (before it writes a byte).
//!
//! [`plan`] checks the descriptor fields and computes the exact byte length of
//! every buffer they imply, with overflow-checked 64-bit arithmetic. It is
//! generic over where the shape and strides come from, so the reader checks a
//! FlatBuffer in place without allocating. [`tensor_name`],
//! [`tensor_alignment`] and [`file_alignment`] are the rules outside the
//! plan that both sides apply too.

use crate::buffer::BufferRole;
use crate::count::{self, ElementCount};
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;
use crate::scheme::{OFFSET_TYPES, QuantizationKind, SCALE_TYPES};
use crate::{ElementClass, ElementType};

mod name_and_alignment;
mod seq;

pub(crate) use name_and_alignment::{file_alignment, tensor_alignment, tensor_name};
pub(crate) use seq::Seq;

/// Layout fields as stored.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LayoutParams<S> {
    Dense { strides: Option<S> },
    Coo { nnz: u64, index_type: u8 },
    Csr { nnz: u64, index_type: u8 },
    Csc { nnz: u64, index_type: u8 },
    Unknown(u8),
}

/// Quantization fields as stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuantParams {
    pub(crate) scheme: u8,
    pub(crate) expressed_type: u8,
    pub(crate) scale_type: u8,
    pub(crate) zero_point_type: u8,
    pub(crate) axis: u32,
    pub(crate) block_size: u64,
    /// Format 1.2: 1.0 when unused.
    pub(crate) tensor_scale: f64,
    /// Format 1.2: 0 (`Invalid`) when there are no offsets.
    pub(crate) offset_type: u8,
}

impl QuantParams {
    /// Whether the quantization uses a 1.2 field that a 1.1 reader would
    /// silently ignore: the file must then set the footer flag that makes
    /// such readers refuse it.
    pub(crate) fn is_extended(&self) -> bool {
        self.tensor_scale != 1.0 || self.offset_type != 0
    }
}

/// The buffers each layout needs, in wire order.
pub(crate) const DENSE_BUFFERS: &[BufferRole] = &[BufferRole::Values];
pub(crate) const COO_BUFFERS: &[BufferRole] = &[BufferRole::Indices, BufferRole::Values];
pub(crate) const COMPRESSED_BUFFERS: &[BufferRole] = &[
    BufferRole::Pointers,
    BufferRole::Indices,
    BufferRole::Values,
];

/// What a valid descriptor implies about its buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Layout name: dense, strided, coo, csr, csc.
    pub layout: &'static str,
    /// The layout's buffers, in wire order.
    pub roles: &'static [BufferRole],
    /// Expected byte length of each of `roles` (all 0 for a descriptor-only or an empty tensor).
    pub lengths: [u64; 3],
    /// Whether the tensor is quantized (it then has scales and zero points buffers).
    pub quantized: bool,
    /// Expected byte length of the scales and the zero points (0 without quantization).
    pub scales: u64,
    pub zero_points: u64,
    /// Expected byte length of the offsets, when the quantization has them
    /// (format 1.2); `None` otherwise, and then the tensor has no such buffer.
    pub offsets: Option<u64>,
    /// Number of logical elements; `None` when a dimension is dynamic.
    pub elements: Option<u64>,
}

impl Plan {
    /// Every buffer of the tensor with its expected length, in wire order:
    /// the layout's, then `scales` and `zero_points` when quantized, then
    /// `offsets` when the quantization has them. This is the list a writer is
    /// given and a reader checks.
    pub fn buffers(&self) -> Vec<(BufferRole, u64)> {
        let mut v: Vec<_> = self.roles.iter().copied().zip(self.lengths).collect();
        if self.quantized {
            v.push((BufferRole::Scales, self.scales));
            v.push((BufferRole::ZeroPoints, self.zero_points));
        }
        if let Some(offsets) = self.offsets {
            v.push((BufferRole::Offsets, offsets));
        }
        v
    }

    /// How many buffers [`buffers`](Self::buffers) lists, without building it.
    pub fn buffer_count(&self) -> usize {
        self.roles.len() + 2 * usize::from(self.quantized) + usize::from(self.offsets.is_some())
    }

    /// The expected length of the buffer of `role`, if the tensor has one.
    pub fn length(&self, role: BufferRole) -> Option<u64> {
        match role {
            BufferRole::Scales => self.quantized.then_some(self.scales),
            BufferRole::ZeroPoints => self.quantized.then_some(self.zero_points),
            BufferRole::Offsets => self.offsets,
            _ => {
                let i = self.roles.iter().position(|r| *r == role)?;
                Some(self.lengths[i])
            }
        }
    }

    /// Total bytes of all buffers.
    pub fn total(&self) -> u64 {
        self.lengths.iter().sum::<u64>()
            + self.scales
            + self.zero_points
            + self.offsets.unwrap_or(0)
    }
}

const INDEX_TYPES: &[ElementType] = &[ElementType::Int32, ElementType::Int64];

fn element_type(tensor: &str, field: &'static str, v: u8) -> Result<ElementType> {
    ElementType::from_wire(v).ok_or_else(|| Error::InvalidElementType {
        tensor: tensor.to_owned(),
        field,
        value: v,
        allowed: &[],
    })
}

fn one_of(
    tensor: &str,
    field: &'static str,
    v: u8,
    allowed: &'static [ElementType],
) -> Result<ElementType> {
    match ElementType::from_wire(v) {
        Some(t) if allowed.contains(&t) => Ok(t),
        _ => Err(Error::InvalidElementType {
            tensor: tensor.to_owned(),
            field,
            value: v,
            allowed,
        }),
    }
}

fn invalid(
    tensor: &str,
    field: impl Into<String>,
    value: impl ToString,
    reason: impl Into<String>,
) -> Error {
    Error::InvalidField {
        tensor: tensor.to_owned(),
        field: field.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// The facts about a shape every later rule needs.
struct ShapeFacts<'s, D: ?Sized> {
    name: &'s str,
    shape: &'s D,
    rank: usize,
    /// A resolved 0 somewhere (ADR-007): no elements, no bytes.
    empty: bool,
    /// `None` when a dimension is dynamic.
    elements: Option<u64>,
}

impl<D: Seq<u64> + ?Sized> ShapeFacts<'_, D> {
    fn overflow(&self, field: &'static str) -> Error {
        Error::SizeOverflow {
            tensor: self.name.to_owned(),
            field,
        }
    }

    fn bytes(&self, count: u64, t: ElementType, field: &'static str) -> Result<u64> {
        t.byte_len(count).ok_or_else(|| self.overflow(field))
    }
}

/// The byte length [`plan`] gives the values of a plain dense tensor (no
/// layout table, no quantization, not descriptor-only) whose element type
/// is known, whose dimensions are all resolved and whose sizes fit in 64
/// bits: the common case, without the general walk. `None` for anything
/// else, which the caller sends to [`plan`] (that gives the error, if
/// there is one).
#[inline]
pub(crate) fn plain_dense_len<D: Seq<u64> + ?Sized>(
    element_type_wire: u8,
    shape: &D,
) -> Option<u64> {
    let et = ElementType::from_wire(element_type_wire)?;
    let mut empty = false;
    for i in 0..shape.len() {
        match shape.at(i) {
            DYNAMIC_DIM => return None,
            0 => empty = true,
            _ => {}
        }
    }
    let mut elements = 0;
    if !empty {
        elements = 1u64;
        for i in 0..shape.len() {
            elements = elements.checked_mul(shape.at(i))?;
        }
    }
    et.byte_len(elements)
}

/// Checks a descriptor and computes its buffer lengths (see the module docs).
pub(crate) fn plan<D: Seq<u64> + ?Sized, S: Seq<i64> + Copy>(
    name: &str,
    element_type_wire: u8,
    shape: &D,
    layout: LayoutParams<S>,
    descriptor_only: bool,
    quant: Option<QuantParams>,
) -> Result<Plan> {
    let et = element_type(name, "element_type", element_type_wire)?;
    let rank = shape.len();
    for i in 0..rank {
        if shape.at(i) == DYNAMIC_DIM && !descriptor_only {
            return Err(Error::DynamicWithData {
                tensor: name.to_owned(),
                dim: i,
            });
        }
    }
    let elements = match count::element_count_of((0..rank).map(|i| shape.at(i))) {
        ElementCount::Known(n) => Some(n),
        // With a dynamic dimension nothing about the data can be computed,
        // and nothing needs to be: such a tensor is descriptor-only.
        ElementCount::Dynamic => None,
        ElementCount::Overflow => {
            return Err(Error::SizeOverflow {
                tensor: name.to_owned(),
                field: "shape",
            });
        }
    };
    let facts = ShapeFacts {
        name,
        shape,
        rank,
        empty: elements == Some(0),
        elements,
    };
    let (layout_name, roles, mut lengths) = layout_lengths(&facts, et, layout)?;
    let (mut scales, mut zero_points, mut offsets) = match quant {
        Some(q) => quant_lengths(&facts, et, q)?,
        None => (0, 0, None),
    };
    if descriptor_only || facts.empty {
        // A descriptor-only tensor has no data at all; an empty tensor's
        // buffers, index pointers and scales included, are all 0 bytes
        // (ADR-007 section 4).
        lengths = [0; 3];
        scales = 0;
        zero_points = 0;
        offsets = offsets.map(|_| 0);
    }
    Ok(Plan {
        layout: layout_name,
        roles,
        lengths,
        quantized: quant.is_some(),
        scales,
        zero_points,
        offsets,
        elements,
    })
}

type LayoutLengths = (&'static str, &'static [BufferRole], [u64; 3]);

/// The layout's name, buffers and their lengths.
fn layout_lengths<D: Seq<u64> + ?Sized, S: Seq<i64> + Copy>(
    f: &ShapeFacts<'_, D>,
    et: ElementType,
    layout: LayoutParams<S>,
) -> Result<LayoutLengths> {
    let name = f.name;
    let known = f.elements.unwrap_or(0);
    Ok(match layout {
        LayoutParams::Unknown(v) => {
            return Err(Error::UnsupportedLayout {
                tensor: name.to_owned(),
                value: v,
            });
        }
        LayoutParams::Dense { strides: None } => (
            "dense",
            DENSE_BUFFERS,
            [f.bytes(known, et, "values")?, 0, 0],
        ),
        LayoutParams::Dense {
            strides: Some(strides),
        } => {
            let extent = strided_extent(f, et, strides)?;
            let count = if known == 0 { 0 } else { extent };
            (
                "strided",
                DENSE_BUFFERS,
                [f.bytes(count, et, "values")?, 0, 0],
            )
        }
        LayoutParams::Coo { nnz, index_type } => {
            let it = one_of(name, "layout.index_type", index_type, INDEX_TYPES)?;
            if f.rank == 0 {
                return Err(invalid(name, "shape", "[]", "a COO tensor needs rank >= 1"));
            }
            check_nnz(name, nnz, f.elements)?;
            let coords = nnz
                .checked_mul(f.rank as u64)
                .ok_or_else(|| f.overflow("indices"))?;
            (
                "coo",
                COO_BUFFERS,
                [
                    f.bytes(coords, it, "indices")?,
                    f.bytes(nnz, et, "values")?,
                    0,
                ],
            )
        }
        LayoutParams::Csr { nnz, index_type } | LayoutParams::Csc { nnz, index_type } => {
            let is_csr = matches!(layout, LayoutParams::Csr { .. });
            let it = one_of(name, "layout.index_type", index_type, INDEX_TYPES)?;
            if f.rank != 2 {
                return Err(invalid(
                    name,
                    "shape",
                    format!("rank {}", f.rank),
                    "CSR and CSC tensors have rank 2",
                ));
            }
            check_nnz(name, nnz, f.elements)?;
            let major = f.shape.at(if is_csr { 0 } else { 1 });
            // An empty tensor has no pointer bytes; don't size them.
            let pointers = if major == DYNAMIC_DIM || f.empty {
                0
            } else {
                major.checked_add(1).ok_or_else(|| f.overflow("pointers"))?
            };
            (
                if is_csr { "csr" } else { "csc" },
                COMPRESSED_BUFFERS,
                [
                    f.bytes(pointers, it, "pointers")?,
                    f.bytes(nnz, it, "indices")?,
                    f.bytes(nnz, et, "values")?,
                ],
            )
        }
    })
}

/// The element count a strided tensor's values buffer spans: 1 plus the
/// largest offset any index reaches.
fn strided_extent<D: Seq<u64> + ?Sized, S: Seq<i64>>(
    f: &ShapeFacts<'_, D>,
    et: ElementType,
    strides: S,
) -> Result<u64> {
    let (name, rank) = (f.name, f.rank);
    if strides.len() != rank {
        return Err(invalid(
            name,
            "layout.strides",
            format!("{} strides", strides.len()),
            format!("need one per dimension ({rank})"),
        ));
    }
    if !et.bits().is_multiple_of(8) {
        return Err(invalid(
            name,
            "layout.strides",
            et.name(),
            "packed sub-byte element types cannot be strided",
        ));
    }
    let mut extent: u64 = 1;
    for i in 0..rank {
        let s = strides.at(i);
        if s < 0 {
            return Err(invalid(
                name,
                format!("layout.strides[{i}]"),
                s,
                "strides must be non-negative",
            ));
        }
        let d = f.shape.at(i);
        if !f.empty && d != DYNAMIC_DIM {
            let reach = (d - 1)
                .checked_mul(s as u64)
                .ok_or_else(|| f.overflow("layout.strides"))?;
            extent = extent
                .checked_add(reach)
                .ok_or_else(|| f.overflow("layout.strides"))?;
        }
    }
    Ok(extent)
}

/// The byte lengths of the scales and the zero points.
fn quant_lengths<D: Seq<u64> + ?Sized>(
    f: &ShapeFacts<'_, D>,
    et: ElementType,
    q: QuantParams,
) -> Result<(u64, u64, Option<u64>)> {
    let (name, rank) = (f.name, f.rank);
    if matches!(et.class(), ElementClass::Bool | ElementClass::Complex) {
        return Err(invalid(
            name,
            "element_type",
            et.name(),
            "a quantized tensor stores integers or small floats",
        ));
    }
    let expressed = element_type(name, "quantization.expressed_type", q.expressed_type)?;
    if expressed.class() != ElementClass::Float {
        return Err(invalid(
            name,
            "quantization.expressed_type",
            expressed.name(),
            "the expressed type is a floating-point type",
        ));
    }
    let scale_type = one_of(name, "quantization.scale_type", q.scale_type, SCALE_TYPES)?;
    let zp_type = match q.zero_point_type {
        0 => None,
        v => {
            let t = element_type(name, "quantization.zero_point_type", v)?;
            if !matches!(
                t.class(),
                ElementClass::SignedInt | ElementClass::UnsignedInt
            ) {
                return Err(invalid(
                    name,
                    "quantization.zero_point_type",
                    t.name(),
                    "zero points are integers",
                ));
            }
            Some(t)
        }
    };
    if !q.tensor_scale.is_finite() {
        return Err(invalid(
            name,
            "quantization.tensor_scale",
            q.tensor_scale,
            "the tensor scale is a finite number",
        ));
    }
    let offset_type = match q.offset_type {
        0 => None,
        v => Some(one_of(name, "quantization.offset_type", v, OFFSET_TYPES)?),
    };
    let kind = match QuantizationKind::from_wire(q.scheme) {
        Some(k) => k,
        None if q.scheme == 0 => {
            return Err(invalid(
                name,
                "quantization.scheme",
                "Invalid (0)",
                "a quantization names its scheme",
            ));
        }
        None => {
            return Err(Error::UnsupportedQuantization {
                tensor: name.to_owned(),
                value: q.scheme,
            });
        }
    };
    let what = match kind {
        QuantizationKind::PerBlock => "per-block",
        _ => "per-axis",
    };
    let axis_dim = || -> Result<u64> {
        let axis = q.axis as usize;
        if axis >= rank {
            return Err(invalid(
                name,
                "quantization.axis",
                q.axis,
                format!("{what} quantization needs an axis below the rank {rank}"),
            ));
        }
        Ok(f.shape.at(axis))
    };
    // The number of scales; `None` when a dynamic dimension leaves it unknown.
    let count = match kind {
        QuantizationKind::PerTensor => Some(1),
        QuantizationKind::PerAxis => {
            let d = axis_dim()?;
            (d != DYNAMIC_DIM).then_some(d)
        }
        QuantizationKind::PerBlock => {
            let d = axis_dim()?;
            if q.block_size == 0 {
                return Err(invalid(
                    name,
                    "quantization.block_size",
                    0,
                    "per-block quantization needs a block size > 0",
                ));
            }
            match f.elements {
                None => None,
                // An empty axis has no blocks, so no scales (ADR-007 section 8).
                Some(_) if d == 0 => Some(0),
                Some(e) => (e / d).checked_mul(d.div_ceil(q.block_size)),
            }
        }
    };
    // An empty tensor has no scales; don't size them.
    let count = if f.empty { 0 } else { count.unwrap_or(0) };
    let scales = f.bytes(count, scale_type, "scales")?;
    let zero_points = match zp_type {
        Some(t) => f.bytes(count, t, "zero_points")?,
        None => 0,
    };
    let offsets = match offset_type {
        Some(t) => Some(f.bytes(count, t, "offsets")?),
        None => None,
    };
    Ok((scales, zero_points, offsets))
}

fn check_nnz(name: &str, nnz: u64, elements: Option<u64>) -> Result<()> {
    match elements {
        Some(e) if nnz > e => Err(invalid(
            name,
            "layout.nnz",
            nnz,
            format!("more stored elements than the {e} the shape holds"),
        )),
        _ => Ok(()),
    }
}
