//! Quantization: how a quantized tensor's codes become values. The
//! vocabulary ([`QuantizationKind`] and the element types scales, offsets
//! and code tables may have), the scheme and its arithmetic (which elements
//! share a scale: [`QuantizationScheme::scale_shape`]), the owned record
//! [`Quantization`], and the fields as stored that the descriptor rules
//! check (`QuantParams`).
//!
//! The module sits below both the descriptor (`descriptor`) and its rules
//! (`validate`), so that neither imports the other to learn a scheme.

use crate::ElementType;
use crate::block_format::BlockFormat;
use crate::buffer::BufferRole;
use crate::count;
use crate::format::DYNAMIC_DIM;
use crate::generated::fb;
use std::fmt;

/// The types scales may have: the floats of at least 16 bits, and (since
/// format 1.2) the 8-bit block scales of microscaling: E8M0 (OCP MX) and
/// E4M3FN (NVFP4). Public as [`Quantization::SCALE_TYPES`](crate::Quantization::SCALE_TYPES).
pub(crate) const SCALE_TYPES: &[ElementType] = &[
    ElementType::Float16,
    ElementType::BFloat16,
    ElementType::Float32,
    ElementType::Float64,
    ElementType::Float8E8M0FNU,
    ElementType::Float8E4M3FN,
];

/// The types offsets may have (format 1.2): the floats of at least 16 bits.
/// Public as [`Quantization::OFFSET_TYPES`](crate::Quantization::OFFSET_TYPES).
pub(crate) const OFFSET_TYPES: &[ElementType] = &[
    ElementType::Float16,
    ElementType::BFloat16,
    ElementType::Float32,
    ElementType::Float64,
];

/// The types a code table may have (format 1.4): `i8` (GGUF IQ4_NL's
/// levels) and the floats of at least 16 bits (bitsandbytes' NF4 and FP4).
/// Public as [`Quantization::CODE_TABLE_TYPES`](crate::Quantization::CODE_TABLE_TYPES).
pub(crate) const CODE_TABLE_TYPES: &[ElementType] = &[
    ElementType::Int8,
    ElementType::Float16,
    ElementType::BFloat16,
    ElementType::Float32,
    ElementType::Float64,
];

/// The types a group index may have (format 1.4).
pub(crate) const GROUP_INDEX_TYPES: &[ElementType] = &[ElementType::Int32];

/// The kind of a quantization scheme: the schema's `QuantizationScheme`
/// enum, and the one spelling of its names (JSON, derive attributes, the
/// CLI, the C API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantizationKind {
    PerTensor,
    PerAxis,
    PerBlock,
    /// Format 1.4.
    PerFlatBlock,
}

impl QuantizationKind {
    /// Every kind.
    pub const ALL: [QuantizationKind; 4] = [
        QuantizationKind::PerTensor,
        QuantizationKind::PerAxis,
        QuantizationKind::PerBlock,
        QuantizationKind::PerFlatBlock,
    ];

    /// `per_tensor`, `per_axis`, `per_block` or `per_flat_block`.
    pub const fn name(self) -> &'static str {
        match self {
            QuantizationKind::PerTensor => "per_tensor",
            QuantizationKind::PerAxis => "per_axis",
            QuantizationKind::PerBlock => "per_block",
            QuantizationKind::PerFlatBlock => "per_flat_block",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        QuantizationKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The schema's value.
    pub const fn to_wire(self) -> u8 {
        match self {
            QuantizationKind::PerTensor => fb::QuantizationScheme::PerTensor.0,
            QuantizationKind::PerAxis => fb::QuantizationScheme::PerAxis.0,
            QuantizationKind::PerBlock => fb::QuantizationScheme::PerBlock.0,
            QuantizationKind::PerFlatBlock => fb::QuantizationScheme::PerFlatBlock.0,
        }
    }

    /// The kind of a schema value; `None` for `Invalid` (0) and values this
    /// build does not know.
    pub fn from_wire(value: u8) -> Option<Self> {
        QuantizationKind::ALL
            .into_iter()
            .find(|k| k.to_wire() == value)
    }
}

impl fmt::Display for QuantizationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    pub const SCALE_TYPES: &'static [ElementType] = SCALE_TYPES;

    /// The types offsets may have (format 1.2): the floats of at least 16 bits.
    pub const OFFSET_TYPES: &'static [ElementType] = OFFSET_TYPES;

    /// The types a code table may have (format 1.4).
    pub const CODE_TABLE_TYPES: &'static [ElementType] = CODE_TABLE_TYPES;

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
    /// Format 1.4: 0 (`Invalid`) when there is no code table.
    pub(crate) code_table_type: u8,
    /// Format 1.4: 0.0 when unused.
    pub(crate) tensor_offset: f64,
    /// Format 1.4: 0 (`Invalid`) when there is no group index.
    pub(crate) group_index_type: u8,
    /// Format 1.4: 0 (`None`) when the values are codes.
    pub(crate) block_format: u8,
    /// Format 1.4: the scales' own quantization.
    pub(crate) scale_level: Option<LevelParams>,
    /// Format 1.4: the offsets' own quantization.
    pub(crate) offset_level: Option<LevelParams>,
}

/// A second level's fields as stored (format 1.4: the quantization of the
/// scales or of the offsets).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LevelParams {
    pub(crate) scheme: u8,
    pub(crate) axis: u32,
    pub(crate) block_size: u64,
    pub(crate) expressed_type: u8,
    pub(crate) scale_type: u8,
    pub(crate) code_table_type: u8,
    pub(crate) tensor_scale: f64,
    pub(crate) tensor_offset: f64,
    /// The first field set that a second level may not have.
    pub(crate) forbidden: Option<&'static str>,
}

impl QuantParams {
    /// Whether the quantization uses a 1.2 field that a 1.1 reader would
    /// silently ignore: the file must then set the footer flag that makes
    /// such readers refuse it.
    pub(crate) fn is_extended(&self) -> bool {
        self.tensor_scale != 1.0 || self.offset_type != 0
    }

    /// Whether the quantization uses a 1.4 field that a 1.2 or 1.3 reader
    /// would silently ignore (footer flag bit 2); `Some` names the first.
    pub(crate) fn composite_field(&self) -> Option<(&'static str, String)> {
        if self.code_table_type != 0 {
            Some(("code_table_type", self.code_table_type.to_string()))
        } else if self.scale_level.is_some() {
            Some(("scale_quantization", "present".into()))
        } else if self.offset_level.is_some() {
            Some(("offset_quantization", "present".into()))
        } else if self.tensor_offset != 0.0 {
            Some(("tensor_offset", self.tensor_offset.to_string()))
        } else if self.group_index_type != 0 {
            Some(("group_index_type", self.group_index_type.to_string()))
        } else if self.block_format != 0 {
            Some(("block_format", self.block_format.to_string()))
        } else {
            None
        }
    }

    pub(crate) fn is_composite(&self) -> bool {
        self.composite_field().is_some()
    }

    /// Whether the quantization has the format 1.4 buffer of `role`.
    pub(crate) fn has_buffer(&self, role: BufferRole) -> bool {
        match role {
            BufferRole::CodeTable => self.code_table_type != 0,
            BufferRole::GroupIndex => self.group_index_type != 0,
            BufferRole::ScaleScales => self.scale_level.is_some(),
            BufferRole::ScaleCodeTable => self.scale_level.is_some_and(|l| l.code_table_type != 0),
            BufferRole::OffsetScales => self.offset_level.is_some(),
            BufferRole::OffsetCodeTable => {
                self.offset_level.is_some_and(|l| l.code_table_type != 0)
            }
            _ => false,
        }
    }
}
