//! The semantic rules of a tensor descriptor, shared by the reader (on every
//! tensor of a file it opens) and the writer (before it writes a byte).
//!
//! [`plan`] checks the descriptor fields and computes the exact byte length of
//! every buffer they imply, with overflow-checked 64-bit arithmetic. It is
//! generic over where the shape and strides come from, so the reader checks a
//! FlatBuffer in place without allocating.

use crate::ElementClass;
use crate::ElementType;
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;

/// A random-access sequence: a slice, or a FlatBuffers vector read in place.
pub(crate) trait Seq<T> {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> T;
}

impl<T: Copy> Seq<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn at(&self, i: usize) -> T {
        self[i]
    }
}

impl<T, S: Seq<T> + ?Sized> Seq<T> for &S {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn at(&self, i: usize) -> T {
        (**self).at(i)
    }
}

impl<'a, T: flatbuffers::Follow<'a, Inner = T> + 'a> Seq<T> for flatbuffers::Vector<'a, T> {
    fn len(&self) -> usize {
        flatbuffers::Vector::len(self)
    }
    fn at(&self, i: usize) -> T {
        self.get(i)
    }
}

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
}

/// Names of the buffers each layout needs, in on-wire order.
pub(crate) const DENSE_BUFFERS: &[&str] = &["values"];
pub(crate) const COO_BUFFERS: &[&str] = &["indices", "values"];
pub(crate) const COMPRESSED_BUFFERS: &[&str] = &["pointers", "indices", "values"];

/// What a valid descriptor implies about its buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Layout name: dense, strided, coo, csr, csc.
    pub layout: &'static str,
    /// Names of the layout's buffers, in order.
    pub roles: &'static [&'static str],
    /// Expected byte length of each of `roles` (all 0 for a descriptor-only or an empty tensor).
    pub lengths: [u64; 3],
    /// Expected byte length of the scales and the zero points (0 without quantization).
    pub scales: u64,
    pub zero_points: u64,
    /// Number of logical elements; `None` when a dimension is dynamic.
    pub elements: Option<u64>,
}

impl Plan {
    /// Every buffer with its expected length: the layout's, then `scales` and
    /// `zero_points` when quantized.
    pub fn all(&self, quantized: bool) -> Vec<(&'static str, u64)> {
        let mut v: Vec<_> = self.roles.iter().copied().zip(self.lengths).collect();
        if quantized {
            v.push(("scales", self.scales));
            v.push(("zero_points", self.zero_points));
        }
        v
    }

    /// Total bytes of all buffers.
    pub fn total(&self) -> u64 {
        self.lengths.iter().sum::<u64>() + self.scales + self.zero_points
    }
}

/// Bytes of `count` packed elements of `bits` each: ceil(count * bits / 8).
pub(crate) fn packed_bytes(count: u64, bits: u32) -> Option<u64> {
    let total_bits = u128::from(count) * u128::from(bits);
    u64::try_from(total_bits.div_ceil(8)).ok()
}

const INDEX_TYPES: &[ElementType] = &[ElementType::Int32, ElementType::Int64];
const SCALE_TYPES: &[ElementType] = &[
    ElementType::Float16,
    ElementType::BFloat16,
    ElementType::Float32,
    ElementType::Float64,
];

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
    let overflow = |field| Error::SizeOverflow {
        tensor: name.to_owned(),
        field,
    };
    let rank = shape.len();
    // A resolved 0 anywhere makes the tensor empty, whatever else the shape
    // holds (even a dynamic or a huge dimension): 0 elements, ADR-007 section 1.
    let mut empty = false;
    for i in 0..rank {
        let d = shape.at(i);
        if d == DYNAMIC_DIM && !descriptor_only {
            return Err(Error::DynamicWithData {
                tensor: name.to_owned(),
                dim: i,
            });
        }
        empty |= d == 0;
    }
    let mut elements = Some(1u64);
    if empty {
        elements = Some(0);
    } else {
        for i in 0..rank {
            let d = shape.at(i);
            elements = match elements {
                _ if d == DYNAMIC_DIM => None,
                Some(e) => Some(e.checked_mul(d).ok_or_else(|| overflow("shape"))?),
                None => None,
            };
        }
    }
    // With a dynamic dimension nothing about the data can be computed, and
    // nothing needs to be: such a tensor is descriptor-only.
    let known = |v: Option<u64>| v.unwrap_or(0);
    let bytes = |count: u64, t: ElementType, field| {
        packed_bytes(count, t.bits()).ok_or_else(|| overflow(field))
    };

    let (layout_name, roles, mut lengths) = match layout {
        LayoutParams::Unknown(v) => {
            return Err(Error::UnsupportedLayout {
                tensor: name.to_owned(),
                value: v,
            });
        }
        LayoutParams::Dense { strides: None } => (
            "dense",
            DENSE_BUFFERS,
            [bytes(known(elements), et, "values")?, 0, 0],
        ),
        LayoutParams::Dense {
            strides: Some(strides),
        } => {
            if strides.len() != rank {
                return Err(invalid(
                    name,
                    "layout.strides",
                    format!("{} strides", strides.len()),
                    format!("need one per dimension ({rank})"),
                ));
            }
            if et.bits() % 8 != 0 {
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
                let d = shape.at(i);
                if !empty && d != DYNAMIC_DIM {
                    let reach = (d - 1)
                        .checked_mul(s as u64)
                        .ok_or_else(|| overflow("layout.strides"))?;
                    extent = extent
                        .checked_add(reach)
                        .ok_or_else(|| overflow("layout.strides"))?;
                }
            }
            let count = match elements {
                Some(0) | None => 0,
                Some(_) => extent,
            };
            (
                "strided",
                DENSE_BUFFERS,
                [bytes(count, et, "values")?, 0, 0],
            )
        }
        LayoutParams::Coo { nnz, index_type } => {
            let it = one_of(name, "layout.index_type", index_type, INDEX_TYPES)?;
            if rank == 0 {
                return Err(invalid(name, "shape", "[]", "a COO tensor needs rank >= 1"));
            }
            check_nnz(name, nnz, elements)?;
            let coords = nnz
                .checked_mul(rank as u64)
                .ok_or_else(|| overflow("indices"))?;
            (
                "coo",
                COO_BUFFERS,
                [bytes(coords, it, "indices")?, bytes(nnz, et, "values")?, 0],
            )
        }
        LayoutParams::Csr { nnz, index_type } | LayoutParams::Csc { nnz, index_type } => {
            let is_csr = matches!(layout, LayoutParams::Csr { .. });
            let it = one_of(name, "layout.index_type", index_type, INDEX_TYPES)?;
            if rank != 2 {
                return Err(invalid(
                    name,
                    "shape",
                    format!("rank {rank}"),
                    "CSR and CSC tensors have rank 2",
                ));
            }
            check_nnz(name, nnz, elements)?;
            let major = shape.at(if is_csr { 0 } else { 1 });
            // An empty tensor has no pointer bytes (below); don't size them.
            let pointers = if major == DYNAMIC_DIM || empty {
                0
            } else {
                major.checked_add(1).ok_or_else(|| overflow("pointers"))?
            };
            (
                if is_csr { "csr" } else { "csc" },
                COMPRESSED_BUFFERS,
                [
                    bytes(pointers, it, "pointers")?,
                    bytes(nnz, it, "indices")?,
                    bytes(nnz, et, "values")?,
                ],
            )
        }
    };

    let (mut scales, mut zero_points) = (0, 0);
    if let Some(q) = quant {
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
        let axis_dim = |what: &str| -> Result<u64> {
            let axis = q.axis as usize;
            if axis >= rank {
                return Err(invalid(
                    name,
                    "quantization.axis",
                    q.axis,
                    format!("{what} needs an axis below the rank {rank}"),
                ));
            }
            Ok(shape.at(axis))
        };
        let count = match q.scheme {
            1 => Some(1),
            2 => {
                let d = axis_dim("per-axis quantization")?;
                (d != DYNAMIC_DIM).then_some(d)
            }
            3 => {
                let d = axis_dim("per-block quantization")?;
                if q.block_size == 0 {
                    return Err(invalid(
                        name,
                        "quantization.block_size",
                        0,
                        "per-block quantization needs a block size > 0",
                    ));
                }
                match elements {
                    None => None,
                    // An empty axis has no blocks, so no scales (ADR-007 section 8).
                    Some(_) if d == 0 => Some(0),
                    Some(e) => (e / d).checked_mul(d.div_ceil(q.block_size)),
                }
            }
            0 => {
                return Err(invalid(
                    name,
                    "quantization.scheme",
                    "Invalid (0)",
                    "a quantization names its scheme",
                ));
            }
            v => {
                return Err(Error::UnsupportedQuantization {
                    tensor: name.to_owned(),
                    value: v,
                });
            }
        };
        // An empty tensor has no scales (below); don't size them.
        let count = if empty { 0 } else { known(count) };
        scales = bytes(count, scale_type, "scales")?;
        zero_points = match zp_type {
            Some(t) => bytes(count, t, "zero_points")?,
            None => 0,
        };
    }
    if descriptor_only || empty {
        // A descriptor-only tensor has no data at all; an empty tensor's
        // buffers, index pointers and scales included, are all 0 bytes
        // (ADR-007 section 4).
        lengths = [0; 3];
        scales = 0;
        zero_points = 0;
    }
    Ok(Plan {
        layout: layout_name,
        roles,
        lengths,
        scales,
        zero_points,
        elements,
    })
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
