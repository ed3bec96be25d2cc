//! The semantic rules of a tensor descriptor, shared by the reader (on every
//! tensor of a file it opens) and the writer (before it writes a byte).
//!
//! [`plan`] checks the descriptor fields and computes the exact byte length of
//! every buffer they imply, with overflow-checked 64-bit arithmetic. It is
//! generic over where the shape and strides come from, so the reader checks a
//! FlatBuffer in place without allocating. [`tensor_name`],
//! [`tensor_alignment`] and [`file_alignment`] are the rules outside the
//! plan that both sides apply too.

use crate::ElementType;
use crate::buffer::BufferRole;
use crate::count::{self, ElementCount};
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;
use crate::quantization::QuantParams;

mod name_and_alignment;
mod quant;
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
    /// Expected byte length of each format 1.4 quantization buffer, in the
    /// order of [`BufferRole::QUANTIZATION_1_4`]; `None` for those the
    /// quantization does not have.
    pub quantization_1_4: [Option<u64>; 6],
    /// Number of logical elements; `None` when a dimension is dynamic.
    pub elements: Option<u64>,
}

impl Plan {
    /// Every buffer of the tensor with its expected length, in wire order:
    /// the layout's, then `scales` and `zero_points` when quantized, then
    /// `offsets` when the quantization has them, then its format 1.4
    /// buffers. This is the list a writer is given and a reader checks.
    pub fn buffers(&self) -> Vec<(BufferRole, u64)> {
        let mut v: Vec<_> = self.roles.iter().copied().zip(self.lengths).collect();
        if self.quantized {
            v.push((BufferRole::Scales, self.scales));
            v.push((BufferRole::ZeroPoints, self.zero_points));
        }
        if let Some(offsets) = self.offsets {
            v.push((BufferRole::Offsets, offsets));
        }
        for (role, len) in BufferRole::QUANTIZATION_1_4
            .into_iter()
            .zip(self.quantization_1_4)
        {
            if let Some(len) = len {
                v.push((role, len));
            }
        }
        v
    }

    /// How many buffers [`buffers`](Self::buffers) lists, without building it.
    pub fn buffer_count(&self) -> usize {
        self.roles.len()
            + 2 * usize::from(self.quantized)
            + usize::from(self.offsets.is_some())
            + self.quantization_1_4.iter().flatten().count()
    }

    /// The expected length of the buffer of `role`, if the tensor has one.
    pub fn length(&self, role: BufferRole) -> Option<u64> {
        match role {
            BufferRole::Scales => self.quantized.then_some(self.scales),
            BufferRole::ZeroPoints => self.quantized.then_some(self.zero_points),
            BufferRole::Offsets => self.offsets,
            BufferRole::Pointers | BufferRole::Indices | BufferRole::Values => {
                let i = self.roles.iter().position(|r| *r == role)?;
                Some(self.lengths[i])
            }
            _ => {
                let i = BufferRole::QUANTIZATION_1_4
                    .iter()
                    .position(|r| *r == role)?;
                self.quantization_1_4[i]
            }
        }
    }

    /// Total bytes of all buffers.
    pub fn total(&self) -> u64 {
        self.lengths.iter().sum::<u64>()
            + self.scales
            + self.zero_points
            + self.offsets.unwrap_or(0)
            + self.quantization_1_4.iter().flatten().sum::<u64>()
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
    let mut q = match quant {
        Some(q) => quant::lengths(&facts, et, layout_name, q)?,
        None => quant::Lengths::default(),
    };
    if let Some(values) = q.block_values {
        lengths[0] = values;
    }
    if descriptor_only || facts.empty {
        // A descriptor-only tensor has no data at all; an empty tensor's
        // buffers, index pointers and scales included, are all 0 bytes
        // (ADR-007 section 4).
        lengths = [0; 3];
        q.clear();
    }
    Ok(Plan {
        layout: layout_name,
        roles,
        lengths,
        quantized: quant.is_some(),
        scales: q.scales,
        zero_points: q.zero_points,
        offsets: q.offsets,
        quantization_1_4: q.tail,
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
