//! MLIR element types <-> Hurray element types.
//!
//! The mapping is the schema's: `ElementType::mlir_name()` is the MLIR
//! spelling declared by `hurray_mlir`, so an MLIR type maps to the Hurray type
//! whose spelling it prints as, and back by parsing that spelling. No table
//! is written here.

use hurray::ElementType;
use melior::Context;
use melior::ir::Type;

/// The Hurray element type of an MLIR element type, if the schema has one.
pub fn hurray_type(ty: Type<'_>) -> Option<ElementType> {
    ElementType::from_mlir_name(&crate::ffi::type_str(ty))
}

/// The MLIR type of a Hurray element type.
pub fn mlir_type(context: &Context, et: ElementType) -> Option<Type<'_>> {
    Type::parse(context, et.mlir_name())
}

/// How MLIR's dense storage holds elements of `et`, compared with Hurray's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Byte-aligned: identical bytes (little-endian), `bytes` per element.
    Same { bytes: usize },
    /// i1: bit-packed LSB-first in both; trailing bits must be cleared.
    Bits,
    /// 2- and 4-bit types: one byte per element in MLIR (value in the low
    /// bits), packed LSB-first in Hurray.
    BytePerElement { bits: u32 },
}

impl Storage {
    /// Bits of one element in Hurray's encoding (the element type's width),
    /// for `hurray::packed_len`, the runtime's bytes-of-`n`-elements rule
    /// (`ElementType::byte_len`).
    pub(crate) fn bits(self) -> u32 {
        match self {
            Storage::Same { bytes } => bytes as u32 * 8,
            Storage::Bits => 1,
            Storage::BytePerElement { bits } => bits,
        }
    }
}

pub(crate) fn storage(et: ElementType) -> Storage {
    match et.bits() {
        1 => Storage::Bits,
        b if b % 8 == 0 => Storage::Same {
            bytes: (b / 8) as usize,
        },
        b => Storage::BytePerElement { bits: b },
    }
}
