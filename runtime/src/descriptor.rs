//! Owned tensor descriptors: what a writer is given and what
//! [`TensorRef::descriptor`](crate::TensorRef::descriptor) returns.

use crate::ElementType;
use crate::block_format::BlockFormat;
use crate::buffer::BufferRole;
use crate::count;
use crate::error::{Error, Result};
use crate::format::DYNAMIC_DIM;
pub use crate::scheme::QuantizationKind;
use crate::validate::{self, LayoutParams, LevelParams, Plan, QuantParams};
use std::collections::BTreeMap;
use std::fmt;

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

/// The granularity of quantization parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantizationScheme {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per index of dimension `axis`.
    PerAxis { axis: u32 },
    /// One scale per `block_size` consecutive indices along `axis`.
    PerBlock { axis: u32, block_size: u64 },
    /// One scale per `block_size` consecutive elements of the whole tensor,
    /// row-major (format 1.4; bitsandbytes' blocks): the scales are 1-D.
    PerFlatBlock { block_size: u64 },
}

impl QuantizationScheme {
    /// The scheme without its parameters.
    pub const fn kind(&self) -> QuantizationKind {
        match self {
            QuantizationScheme::PerTensor => QuantizationKind::PerTensor,
            QuantizationScheme::PerAxis { .. } => QuantizationKind::PerAxis,
            QuantizationScheme::PerBlock { .. } => QuantizationKind::PerBlock,
            QuantizationScheme::PerFlatBlock { .. } => QuantizationKind::PerFlatBlock,
        }
    }

    /// The quantized axis (`None` per tensor and per flat block).
    pub const fn axis(&self) -> Option<u32> {
        match self {
            QuantizationScheme::PerTensor | QuantizationScheme::PerFlatBlock { .. } => None,
            QuantizationScheme::PerAxis { axis } | QuantizationScheme::PerBlock { axis, .. } => {
                Some(*axis)
            }
        }
    }

    /// The block size (`None` unless per block).
    pub const fn block_size(&self) -> Option<u64> {
        match self {
            QuantizationScheme::PerBlock { block_size, .. }
            | QuantizationScheme::PerFlatBlock { block_size } => Some(*block_size),
            _ => None,
        }
    }

    /// The shape of the array of scales (zero points, offsets) this scheme
    /// gives a tensor of `dims`: the tensor's with the axis divided into
    /// blocks (a dynamic axis stays dynamic), the axis alone, one block
    /// count for flat blocks, or a scalar. The shape a second level of
    /// quantization (format 1.4) applies to.
    pub(crate) fn scale_shape(&self, dims: &[u64]) -> Vec<u64> {
        match *self {
            QuantizationScheme::PerTensor => Vec::new(),
            QuantizationScheme::PerAxis { axis } => vec![dims[axis as usize]],
            QuantizationScheme::PerBlock { axis, block_size } => {
                let mut s = dims.to_vec();
                let d = &mut s[axis as usize];
                if *d != DYNAMIC_DIM {
                    *d = d.div_ceil(block_size.max(1));
                }
                s
            }
            QuantizationScheme::PerFlatBlock { block_size } => {
                let count = count::element_count_of(dims.iter().copied()).known();
                vec![count.unwrap_or(0).div_ceil(block_size.max(1))]
            }
        }
    }

    /// The scheme of `kind` with its parameters; those the kind does not use are ignored.
    pub const fn from_parts(kind: QuantizationKind, axis: u32, block_size: u64) -> Self {
        match kind {
            QuantizationKind::PerTensor => QuantizationScheme::PerTensor,
            QuantizationKind::PerAxis => QuantizationScheme::PerAxis { axis },
            QuantizationKind::PerBlock => QuantizationScheme::PerBlock { axis, block_size },
            QuantizationKind::PerFlatBlock => QuantizationScheme::PerFlatBlock { block_size },
        }
    }
}

/// Affine quantization: `expressed = (stored - zero_point) * scale`, and
/// since format 1.2 `* tensor_scale + offset` (evaluated in f64, in that
/// order).
#[derive(Debug, Clone)]
pub struct Quantization {
    pub scheme: QuantizationScheme,
    /// The type values stand for once dequantized.
    pub expressed_type: ElementType,
    /// Type of the scales: one of [`Quantization::SCALE_TYPES`].
    pub scale_type: ElementType,
    /// Type of the zero points; `None` for symmetric quantization.
    pub zero_point_type: Option<ElementType>,
    /// Stored value range the producer uses (informational); `(0, 0)` when unset.
    pub storage_min: i64,
    pub storage_max: i64,
    /// One more factor for every element (format 1.2): NVFP4's per-tensor
    /// scale, MXINT8's implied 2^-6. 1.0 when unused. Finite.
    pub tensor_scale: f64,
    /// Type of the additive offsets (format 1.2; GGUF Q4_1's block minimum),
    /// one of [`Quantization::OFFSET_TYPES`] (an integer type when
    /// `offset_quantization` is set); `None` when there are none.
    pub offset_type: Option<ElementType>,
    /// Type of the code table (format 1.4), one of
    /// [`Quantization::CODE_TABLE_TYPES`]: a stored code `q` stands for
    /// `code_table[q]`. `None` without a table.
    pub code_table_type: Option<ElementType>,
    /// The scales' own quantization (format 1.4: two-level scales); the
    /// scales are then codes of `scale_type`, an integer type. It may set
    /// its scheme, types, code table, tensor scale and tensor offset only.
    pub scale_quantization: Option<Box<Quantization>>,
    /// The offsets' own quantization (format 1.4), as `scale_quantization`.
    pub offset_quantization: Option<Box<Quantization>>,
    /// A term added to every element last (format 1.4). 0.0 when unused. Finite.
    pub tensor_offset: f64,
    /// Type of the group index (format 1.4, per-block only): `Int32`, or
    /// `None` when blocks are consecutive indices.
    pub group_index_type: Option<ElementType>,
    /// The block format the values are held in (format 1.4); the stored
    /// type is then `UInt8` and the scales, zero points and offsets empty.
    pub block_format: Option<BlockFormat>,
}

impl Quantization {
    /// A quantization with no zero points, no tensor scale and no offsets
    /// (the caller sets those fields it needs).
    pub fn new(
        scheme: QuantizationScheme,
        expressed_type: ElementType,
        scale_type: ElementType,
    ) -> Self {
        Quantization {
            scheme,
            expressed_type,
            scale_type,
            zero_point_type: None,
            storage_min: 0,
            storage_max: 0,
            tensor_scale: 1.0,
            offset_type: None,
            code_table_type: None,
            scale_quantization: None,
            offset_quantization: None,
            tensor_offset: 0.0,
            group_index_type: None,
            block_format: None,
        }
    }

    /// The quantization of a tensor held in `format`'s blocks, of rank `rank`
    /// (the blocks run along the last axis), expressed as `f32`.
    pub fn blocks(format: BlockFormat, rank: usize) -> Self {
        let scheme = QuantizationScheme::PerBlock {
            axis: rank.saturating_sub(1) as u32,
            block_size: format.elements(),
        };
        let mut q = Quantization::new(scheme, ElementType::Float32, ElementType::Float32);
        q.block_format = Some(format);
        q
    }

    /// The types scales may have: the floats of at least 16 bits, and (since
    /// format 1.2) the 8-bit block scales of microscaling: E8M0 (OCP MX) and
    /// E4M3FN (NVFP4). The verifier, the derive attributes and the lowering
    /// all check against this list.
    pub const SCALE_TYPES: &'static [ElementType] = crate::scheme::SCALE_TYPES;

    /// The types offsets may have (format 1.2): the floats of at least 16 bits.
    pub const OFFSET_TYPES: &'static [ElementType] = crate::scheme::OFFSET_TYPES;

    /// The types a code table may have (format 1.4).
    pub const CODE_TABLE_TYPES: &'static [ElementType] = crate::scheme::CODE_TABLE_TYPES;

    /// The roles of the buffers the quantization adds after the layout's, in
    /// wire order: scales, zero points (0 bytes when symmetric), offsets when
    /// it has them, then each format 1.4 buffer it has.
    pub fn buffer_roles(&self) -> Vec<BufferRole> {
        let mut v = vec![BufferRole::Scales, BufferRole::ZeroPoints];
        if self.offset_type.is_some() {
            v.push(BufferRole::Offsets);
        }
        let p = self.params();
        v.extend(
            BufferRole::QUANTIZATION_1_4
                .into_iter()
                .filter(|r| p.has_buffer(*r)),
        );
        v
    }

    /// How many buffers the quantization adds after the layout's
    /// ([`buffer_roles`](Self::buffer_roles)).
    pub fn buffer_count(&self) -> usize {
        self.buffer_roles().len()
    }

    /// Whether this quantization uses a field a 1.1 reader would ignore (a
    /// tensor scale other than 1, offsets), so that its file must set
    /// [`FLAG_EXTENDED_QUANTIZATION`](crate::format::FLAG_EXTENDED_QUANTIZATION).
    pub fn is_extended(&self) -> bool {
        self.params().is_extended()
    }

    /// Whether this quantization uses a field a 1.2 or 1.3 reader would
    /// ignore (format 1.4), so that its file must set
    /// [`FLAG_COMPOSITE_QUANTIZATION`](crate::format::FLAG_COMPOSITE_QUANTIZATION).
    pub fn is_composite(&self) -> bool {
        self.params().is_composite()
    }

    /// The first format 1.4 field this quantization uses (`code_table_type`,
    /// `scale_quantization`, `offset_quantization`, `tensor_offset`,
    /// `group_index_type`, `block_format`), for refusals that name it.
    pub fn composite_field(&self) -> Option<&'static str> {
        self.params().composite_field().map(|(field, _)| field)
    }
}

/// Per tensor, `f32` scales standing for `f32`, nothing else: the base that
/// struct-update syntax (`..Default::default()`) fills in from.
impl Default for Quantization {
    fn default() -> Self {
        Quantization::new(
            QuantizationScheme::PerTensor,
            ElementType::Float32,
            ElementType::Float32,
        )
    }
}

// `tensor_scale` is compared and hashed by its bits, so that a descriptor
// equals itself (a NaN never passes the verifier anyway).
impl PartialEq for Quantization {
    fn eq(&self, other: &Self) -> bool {
        self.scheme == other.scheme
            && self.expressed_type == other.expressed_type
            && self.scale_type == other.scale_type
            && self.zero_point_type == other.zero_point_type
            && self.storage_min == other.storage_min
            && self.storage_max == other.storage_max
            && self.tensor_scale.to_bits() == other.tensor_scale.to_bits()
            && self.offset_type == other.offset_type
            && self.code_table_type == other.code_table_type
            && self.scale_quantization == other.scale_quantization
            && self.offset_quantization == other.offset_quantization
            && self.tensor_offset.to_bits() == other.tensor_offset.to_bits()
            && self.group_index_type == other.group_index_type
            && self.block_format == other.block_format
    }
}

impl Eq for Quantization {}

impl std::hash::Hash for Quantization {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.scheme.hash(state);
        self.expressed_type.hash(state);
        self.scale_type.hash(state);
        self.zero_point_type.hash(state);
        self.storage_min.hash(state);
        self.storage_max.hash(state);
        self.tensor_scale.to_bits().hash(state);
        self.offset_type.hash(state);
        self.code_table_type.hash(state);
        self.scale_quantization.hash(state);
        self.offset_quantization.hash(state);
        self.tensor_offset.to_bits().hash(state);
        self.group_index_type.hash(state);
        self.block_format.hash(state);
    }
}

impl Quantization {
    pub(crate) fn params(&self) -> QuantParams {
        QuantParams {
            scheme: self.scheme.kind().to_wire(),
            axis: self.scheme.axis().unwrap_or(0),
            block_size: self.scheme.block_size().unwrap_or(0),
            expressed_type: self.expressed_type.to_wire(),
            scale_type: self.scale_type.to_wire(),
            zero_point_type: self.zero_point_type.map_or(0, ElementType::to_wire),
            tensor_scale: self.tensor_scale,
            offset_type: self.offset_type.map_or(0, ElementType::to_wire),
            code_table_type: self.code_table_type.map_or(0, ElementType::to_wire),
            tensor_offset: self.tensor_offset,
            group_index_type: self.group_index_type.map_or(0, ElementType::to_wire),
            block_format: self.block_format.map_or(0, BlockFormat::to_wire),
            scale_level: self.scale_quantization.as_deref().map(Quantization::level),
            offset_level: self.offset_quantization.as_deref().map(Quantization::level),
        }
    }

    /// This quantization's fields as a second level's.
    fn level(&self) -> LevelParams {
        let forbidden = if self.zero_point_type.is_some() {
            Some("zero_point_type")
        } else if self.offset_type.is_some() {
            Some("offset_type")
        } else if self.scale_quantization.is_some() {
            Some("scale_quantization")
        } else if self.offset_quantization.is_some() {
            Some("offset_quantization")
        } else if self.group_index_type.is_some() {
            Some("group_index_type")
        } else if self.block_format.is_some() {
            Some("block_format")
        } else {
            None
        };
        LevelParams {
            scheme: self.scheme.kind().to_wire(),
            axis: self.scheme.axis().unwrap_or(0),
            block_size: self.scheme.block_size().unwrap_or(0),
            expressed_type: self.expressed_type.to_wire(),
            scale_type: self.scale_type.to_wire(),
            code_table_type: self.code_table_type.map_or(0, ElementType::to_wire),
            tensor_scale: self.tensor_scale,
            tensor_offset: self.tensor_offset,
            forbidden,
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
    /// [`element_count`](crate::element_count)); `None` when a dimension is
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
