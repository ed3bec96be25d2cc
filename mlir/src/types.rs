//! MLIR element types <-> Hurray element types, and the builtin tensor type
//! a foreign tensor type stands for.
//!
//! The mapping is the schema's: `ElementType::mlir_name()` is the MLIR
//! spelling declared by `hurray_mlir`, so an MLIR type maps to the Hurray type
//! whose spelling it prints as, and back by parsing that spelling. No table
//! is written here.

use hurray::ElementType;
use melior::Context;
use melior::ir::Type;

/// The Hurray element type of an MLIR element type, if the schema has one.
/// Signed integers (`si64`, as torch-mlir writes them) are Hurray's signed
/// integers, whose MLIR spelling is the signless `i64`.
pub fn hurray_type(ty: Type<'_>) -> Option<ElementType> {
    let name = crate::ffi::type_str(ty);
    match name.strip_prefix("si") {
        Some(width) if width.bytes().all(|b| b.is_ascii_digit()) => {
            ElementType::from_mlir_name(&format!("i{width}"))
        }
        _ => ElementType::from_mlir_name(&name),
    }
}

/// The MLIR type of a Hurray element type.
pub fn mlir_type(context: &Context, et: ElementType) -> Option<Type<'_>> {
    Type::parse(context, et.mlir_name())
}

/// The ranked tensor type `ty` is, or stands for: `ty` itself when it is a
/// builtin ranked tensor; for torch-mlir's value-semantic tensors
/// (`!torch.vtensor<[2,?,0],f32>`, and `!torch.tensor<...>`), opaque types
/// here since the context has no `torch` dialect, the builtin
/// `tensor<2x?x0xf32>` (torch's `si64` stays `si64`: [`hurray_type`] reads
/// it as `i64`). `None` for any other type, and for a torch tensor without
/// sizes or with a dtype that has no builtin type (`!torch.qint8`).
pub(crate) fn tensor_type(ty: Type<'_>) -> Option<Type<'_>> {
    if crate::typed::is_ranked_tensor(ty) {
        return Some(ty);
    }
    let (dialect, body) = crate::ffi::opaque_type(ty)?;
    if dialect != "torch" {
        return None;
    }
    let inner = body
        .strip_prefix("vtensor<")
        .or_else(|| body.strip_prefix("tensor<"))?
        .strip_suffix('>')?;
    let (sizes, element) = inner.strip_prefix('[')?.split_once("],")?;
    let mut text = String::from("tensor<");
    for size in sizes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let dynamic = size == "?" || size == "-1";
        if !dynamic && size.parse::<u64>().is_err() {
            return None;
        }
        text.push_str(if dynamic { "?" } else { size });
        text.push('x');
    }
    text.push_str(element.trim());
    text.push('>');
    crate::ffi::parse_type_in(ty, &text)
}

/// How MLIR's dense storage holds elements of `et`, compared with Hurray's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Byte-aligned: identical bytes (little-endian), `bytes` per element.
    Same { bytes: usize },
    /// i1: bit-packed LSB-first in both; trailing bits must be cleared.
    Bits,
    /// Every other width that is not a whole number of bytes (2, 4, 6 bits,
    /// whatever the schema declares): one byte per element in MLIR (value in
    /// the low bits), packed LSB-first in Hurray as one bit stream (a 6-bit
    /// element may span two bytes; `hurray::pack` does the packing).
    BytePerElement { bits: u32 },
}

impl Storage {
    /// Bits of one element in Hurray's encoding (the element type's width),
    /// for `hurray::elements::packed_len`, the runtime's bytes-of-`n`-elements rule
    /// (`ElementType::byte_len`).
    pub(crate) fn bits(self) -> u32 {
        match self {
            Storage::Same { bytes } => bytes as u32 * 8,
            Storage::Bits => 1,
            Storage::BytePerElement { bits } => bits,
        }
    }
}

/// Hurray's stored bytes of `count` elements as the raw buffer of an MLIR
/// `dense` attribute: one code per byte for [`Storage::BytePerElement`]
/// (read with the runtime's unpacker: a 6-bit code may span two bytes), the
/// bytes themselves otherwise (i1 is bit-packed in both).
pub(crate) fn dense_raw(storage: Storage, bytes: &[u8], count: u64) -> std::borrow::Cow<'_, [u8]> {
    match storage {
        Storage::BytePerElement { bits } => hurray::pack::unpack_codes(bytes, bits, count)
            .collect::<Vec<u8>>()
            .into(),
        _ => bytes.into(),
    }
}

pub(crate) fn storage(et: ElementType) -> Storage {
    match et.bits() {
        1 => Storage::Bits,
        b if b.is_multiple_of(8) => Storage::Same {
            bytes: (b / 8) as usize,
        },
        b => Storage::BytePerElement { bits: b },
    }
}
