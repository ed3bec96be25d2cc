//! Owned tensor descriptors: what a writer is given and what
//! [`TensorRef::descriptor`](crate::TensorRef::descriptor) returns, and the
//! vocabulary their fields use beyond the crate root's names: quantization
//! schemes, buffer roles, block formats, and the [`Plan`] of a tensor's
//! buffers that the descriptor rules compute.

use crate::ElementType;
use crate::count;
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;
use crate::quantization::Quantization;
use crate::validate::{self, LayoutParams};
use std::collections::BTreeMap;
use std::fmt;

pub use crate::block_format::BlockFormat;
pub use crate::buffer::{BufferRole, UnknownBufferRole};
pub use crate::quantization::{QuantizationKind, QuantizationScheme};
pub use crate::validate::Plan;

/// One dimension of a shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A resolved size. `Fixed(0)` is an empty dimension: fully known, zero elements.
    Fixed(u64),
    /// Not resolved yet; the channel supplies it later. Never the same as `Fixed(0)`.
    Dynamic,
}

impl Dim {
    /// The on-wire value (`u64::MAX` for dynamic).
    pub const fn to_wire(self) -> u64 {
        match self {
            Dim::Fixed(n) => n,
            Dim::Dynamic => DYNAMIC_DIM,
        }
    }

    /// The dimension an on-wire value stands for.
    pub const fn from_wire(v: u64) -> Self {
        if v == DYNAMIC_DIM {
            Dim::Dynamic
        } else {
            Dim::Fixed(v)
        }
    }
}

impl From<u64> for Dim {
    /// A fixed size. `u64::MAX` is *not* turned into `Dynamic`: use [`Dim::from_wire`] for that.
    fn from(n: u64) -> Self {
        Dim::Fixed(n)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Dynamic => f.write_str("?"),
        }
    }
}

/// Builds a shape from fixed sizes: `shape(&[3, 0, 5])`.
pub fn shape(dims: &[u64]) -> Vec<Dim> {
    dims.iter().map(|&d| Dim::Fixed(d)).collect()
}

/// How the elements are arranged in the tensor's buffers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Row-major, contiguous. Buffers: `values`.
    Dense,
    /// Dense with explicit strides in elements, one per dimension. Buffers: `values`.
    Strided(Vec<i64>),
    /// Coordinate list. Buffers: `indices` (nnz x rank), `values`.
    Coo {
        nnz: u64,
        index_type: ElementType,
        canonical: bool,
    },
    /// Compressed sparse rows (rank 2). Buffers: `pointers`, `indices`, `values`.
    Csr { nnz: u64, index_type: ElementType },
    /// Compressed sparse columns (rank 2). Buffers: `pointers`, `indices`, `values`.
    Csc { nnz: u64, index_type: ElementType },
}

impl Layout {
    /// Every layout's canonical short name, in declaration order: the
    /// position of a name is its layout's [`ordinal`](Self::ordinal).
    pub const NAMES: [&'static str; 5] = ["dense", "strided", "coo", "csr", "csc"];

    /// The layout's position in declaration order (dense 0 ... csc 4), the
    /// number the C API gives it.
    pub fn ordinal(&self) -> usize {
        match self {
            Layout::Dense => 0,
            Layout::Strided(_) => 1,
            Layout::Coo { .. } => 2,
            Layout::Csr { .. } => 3,
            Layout::Csc { .. } => 4,
        }
    }

    /// Canonical short name: `dense`, `strided`, `coo`, `csr`, `csc`.
    pub fn name(&self) -> &'static str {
        Self::NAMES[self.ordinal()]
    }

    pub(crate) fn params(&self) -> LayoutParams<&[i64]> {
        match self {
            Layout::Dense => LayoutParams::Dense { strides: None },
            Layout::Strided(s) => LayoutParams::Dense {
                strides: Some(s.as_slice()),
            },
            Layout::Coo {
                nnz, index_type, ..
            } => LayoutParams::Coo {
                nnz: *nnz,
                index_type: index_type.to_wire(),
            },
            Layout::Csr { nnz, index_type } => LayoutParams::Csr {
                nnz: *nnz,
                index_type: index_type.to_wire(),
            },
            Layout::Csc { nnz, index_type } => LayoutParams::Csc {
                nnz: *nnz,
                index_type: index_type.to_wire(),
            },
        }
    }
}

/// Everything needed to interpret a tensor's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDescriptor {
    pub name: String,
    /// The stored type (for quantized tensors, the storage type).
    pub element_type: ElementType,
    pub shape: Vec<Dim>,
    pub layout: Layout,
    pub quantization: Option<Quantization>,
    /// The tensor carries no data at all (a signature, an uninitialised value).
    /// Distinct from a present buffer of 0 bytes. Required when a dim is dynamic.
    pub descriptor_only: bool,
    /// Alignment of this tensor's non-empty buffers; `None` uses the file's.
    pub alignment: Option<u64>,
    pub metadata: BTreeMap<String, String>,
}

impl TensorDescriptor {
    /// A dense tensor with data.
    pub fn new(name: impl Into<String>, element_type: ElementType, shape: Vec<Dim>) -> Self {
        Self {
            name: name.into(),
            element_type,
            shape,
            layout: Layout::Dense,
            quantization: None,
            descriptor_only: false,
            alignment: None,
            metadata: BTreeMap::new(),
        }
    }

    /// The same descriptor with another layout.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// The same descriptor, quantized.
    pub fn with_quantization(mut self, q: Quantization) -> Self {
        self.quantization = Some(q);
        self
    }

    /// The same descriptor, carrying no data.
    pub fn into_descriptor_only(mut self) -> Self {
        self.descriptor_only = true;
        self
    }

    /// The same descriptor with a larger buffer alignment.
    pub fn with_alignment(mut self, alignment: u64) -> Self {
        self.alignment = Some(alignment);
        self
    }

    /// The same descriptor with one more metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The on-wire shape.
    pub fn wire_shape(&self) -> Vec<u64> {
        self.shape.iter().map(|d| d.to_wire()).collect()
    }

    /// Number of logical elements, in ADR-0007's order (see
    /// [`element_count`](crate::count::element_count)); `None` when a dimension is
    /// dynamic (and none is 0) or the product overflows.
    pub fn element_count(&self) -> Option<u64> {
        count::element_count_of(self.shape.iter().map(|d| d.to_wire())).known()
    }

    /// Whether a resolved dimension is 0 (ADR-007: an empty tensor).
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&Dim::Fixed(0))
    }

    /// Checks the descriptor and returns the byte length of every buffer it
    /// needs, in on-wire order (layout buffers, then scales, zero points and
    /// offsets).
    pub fn buffer_plan(&self) -> Result<Plan> {
        if let Some(i) = self
            .shape
            .iter()
            .position(|d| *d == Dim::Fixed(DYNAMIC_DIM))
        {
            // On the wire u64::MAX *is* the dynamic sentinel: writing it as a
            // size would silently turn a resolved dimension into a dynamic one.
            return Err(Error::InvalidField {
                tensor: self.name.clone(),
                field: format!("shape[{i}]"),
                value: DYNAMIC_DIM.to_string(),
                reason: "u64::MAX is the dynamic sentinel, not a size; use Dim::Dynamic".into(),
            });
        }
        validate::plan(
            &self.name,
            self.element_type.to_wire(),
            &self.wire_shape()[..],
            self.layout.params(),
            self.descriptor_only,
            self.quantization.as_ref().map(Quantization::params),
        )
    }

    /// Fills the dynamic dimensions from `dims` (a full concrete shape).
    ///
    /// Fixed dimensions must be given unchanged; in particular a resolved
    /// empty dimension (0) is never replaced, and the dynamic sentinel is not
    /// a size (ADR-007 section 5).
    pub fn resolve(&self, dims: &[u64]) -> Result<TensorDescriptor> {
        let err = |dim: usize, current: Dim, requested: u64, reason| Error::Resolve {
            tensor: self.name.clone(),
            dim,
            current: current.to_string(),
            requested: Dim::from_wire(requested).to_string(),
            reason,
        };
        if dims.len() != self.shape.len() {
            return Err(Error::Resolve {
                tensor: self.name.clone(),
                dim: dims.len().min(self.shape.len()),
                current: format!("rank {}", self.shape.len()),
                requested: format!("rank {}", dims.len()),
                reason: "the rank differs",
            });
        }
        let mut out = self.clone();
        for (i, (&cur, &req)) in self.shape.iter().zip(dims).enumerate() {
            out.shape[i] = match cur {
                _ if req == DYNAMIC_DIM => {
                    return Err(err(i, cur, req, "the dynamic sentinel is not a size"));
                }
                Dim::Dynamic => Dim::Fixed(req),
                Dim::Fixed(0) if req != 0 => {
                    return Err(err(
                        i,
                        cur,
                        req,
                        "a resolved empty dimension is never replaced",
                    ));
                }
                Dim::Fixed(n) if n != req => {
                    return Err(err(i, cur, req, "a fixed dimension cannot change"));
                }
                Dim::Fixed(n) => Dim::Fixed(n),
            };
        }
        Ok(out)
    }
}

impl fmt::Display for TensorDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(Dim::to_string).collect();
        write!(
            f,
            "{} {}[{}] {}",
            self.name,
            self.element_type.name(),
            dims.join(","),
            self.layout.name()
        )
    }
}
