//! What each buffer of a tensor holds: the one vocabulary of buffer roles,
//! used by the reader, the writer, every front door and every error.

use std::fmt;
use std::str::FromStr;

/// The role of one buffer of a tensor. A tensor's buffers are, in wire
/// order, its layout's (see [`Plan::buffers`](crate::validate::Plan::buffers)) and
/// then, when quantized, its scales, zero points and (format 1.2, when the
/// quantization has them) offsets, then (format 1.4, each when present) the
/// code table, the group index, and the scales and code tables of the
/// scales' and the offsets' own quantization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferRole {
    /// CSR/CSC: `major + 1` offsets into `indices`.
    Pointers,
    /// COO: `nnz x rank` coordinates; CSR/CSC: `nnz` minor indices.
    Indices,
    /// The elements (the stored elements of a quantized tensor).
    Values,
    /// Quantization scales.
    Scales,
    /// Quantization zero points.
    ZeroPoints,
    /// Quantization offsets, added after scaling (format 1.2).
    Offsets,
    /// The values stored codes stand for (format 1.4).
    CodeTable,
    /// The group (block) of each index along the quantized axis (format 1.4).
    GroupIndex,
    /// The scales of the quantized scales (format 1.4: two-level scales).
    ScaleScales,
    /// The code table of the quantized scales (format 1.4).
    ScaleCodeTable,
    /// The scales of the quantized offsets (format 1.4).
    OffsetScales,
    /// The code table of the quantized offsets (format 1.4).
    OffsetCodeTable,
}

impl BufferRole {
    /// Every role, in the order the names sort in the documentation.
    pub const ALL: [BufferRole; 12] = [
        BufferRole::Pointers,
        BufferRole::Indices,
        BufferRole::Values,
        BufferRole::Scales,
        BufferRole::ZeroPoints,
        BufferRole::Offsets,
        BufferRole::CodeTable,
        BufferRole::GroupIndex,
        BufferRole::ScaleScales,
        BufferRole::ScaleCodeTable,
        BufferRole::OffsetScales,
        BufferRole::OffsetCodeTable,
    ];

    /// The quantization's optional format 1.4 buffers, in wire order (after
    /// the offsets).
    pub const QUANTIZATION_1_4: [BufferRole; 6] = [
        BufferRole::CodeTable,
        BufferRole::GroupIndex,
        BufferRole::ScaleScales,
        BufferRole::ScaleCodeTable,
        BufferRole::OffsetScales,
        BufferRole::OffsetCodeTable,
    ];

    /// The name used in errors, the C API, JSON and the schema's comments.
    pub const fn name(self) -> &'static str {
        match self {
            BufferRole::Pointers => "pointers",
            BufferRole::Indices => "indices",
            BufferRole::Values => "values",
            BufferRole::Scales => "scales",
            BufferRole::ZeroPoints => "zero_points",
            BufferRole::Offsets => "offsets",
            BufferRole::CodeTable => "code_table",
            BufferRole::GroupIndex => "group_index",
            BufferRole::ScaleScales => "scale_scales",
            BufferRole::ScaleCodeTable => "scale_code_table",
            BufferRole::OffsetScales => "offset_scales",
            BufferRole::OffsetCodeTable => "offset_code_table",
        }
    }

    /// [`name`](Self::name) as a C string, for the C API.
    pub const fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            BufferRole::Pointers => c"pointers",
            BufferRole::Indices => c"indices",
            BufferRole::Values => c"values",
            BufferRole::Scales => c"scales",
            BufferRole::ZeroPoints => c"zero_points",
            BufferRole::Offsets => c"offsets",
            BufferRole::CodeTable => c"code_table",
            BufferRole::GroupIndex => c"group_index",
            BufferRole::ScaleScales => c"scale_scales",
            BufferRole::ScaleCodeTable => c"scale_code_table",
            BufferRole::OffsetScales => c"offset_scales",
            BufferRole::OffsetCodeTable => c"offset_code_table",
        }
    }

    /// The role called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        BufferRole::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether the buffer belongs to the quantization rather than the layout.
    pub const fn is_quantization(self) -> bool {
        !matches!(
            self,
            BufferRole::Pointers | BufferRole::Indices | BufferRole::Values
        )
    }
}

impl fmt::Display for BufferRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing an unknown buffer role name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a buffer role (pointers, indices, values, scales, zero_points, offsets, \
     code_table, group_index, scale_scales, scale_code_table, offset_scales, offset_code_table)"
)]
pub struct UnknownBufferRole(pub String);

impl FromStr for BufferRole {
    type Err = UnknownBufferRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BufferRole::from_name(s).ok_or_else(|| UnknownBufferRole(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for r in BufferRole::ALL {
            assert_eq!(r.name().parse::<BufferRole>(), Ok(r));
            assert_eq!(r.c_name().to_str(), Ok(r.name()));
        }
        assert!("scale".parse::<BufferRole>().is_err());
    }
}
