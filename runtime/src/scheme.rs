//! [`QuantizationKind`]: the vocabulary of quantization schemes, as
//! [`BufferRole`](crate::BufferRole) is the vocabulary of buffers: what the
//! descriptor rules and every front door name a scheme by; and the element
//! types a scheme's scales and offsets may have.
//!
//! The type lists live here, below both the descriptor rules (`validate`) and
//! the owned descriptor (`descriptor`), so that neither imports the other to
//! learn them.

use crate::ElementType;
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
