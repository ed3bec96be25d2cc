//! Rust types whose values are stored elements, for typed zero-copy views.

use crate::ElementType;

/// A Rust type that is the in-memory form of one byte-aligned element type.
///
/// Implementations must have `size_of::<Self>() * 8 == Self::TYPE.bits()`;
/// views check it and refuse a type that lies. Packed sub-byte types have no
/// `Element`: read them through [`PackedView`](crate::views::PackedView).
pub trait Element: bytemuck::Pod {
    /// The stored element type this Rust type reads.
    const TYPE: ElementType;
}

/// A `c64` element: two binary32, real part first.
#[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C)]
pub struct Complex64 {
    pub re: f32,
    pub im: f32,
}

/// A `c128` element: two binary64, real part first.
#[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C)]
pub struct Complex128 {
    pub re: f64,
    pub im: f64,
}

/// The raw bits of an OCP FP8 E4M3FN value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(transparent)]
pub struct Float8E4M3FN(pub u8);

/// The raw bits of an OCP FP8 E5M2 value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(transparent)]
pub struct Float8E5M2(pub u8);

/// Declares `#[repr(transparent)]` newtypes over the raw bits of the 8-bit
/// float types, which have no Rust scalar type.
macro_rules! raw_float8 {
    ($($(#[$doc:meta])* $t:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, bytemuck::Zeroable, bytemuck::Pod)]
            #[repr(transparent)]
            pub struct $t(pub u8);
        )*
    };
}

raw_float8! {
    /// The raw bits of an OCP MX E8M0 scale (2^(bits - 127); 0xff is NaN).
    Float8E8M0FNU,
    /// The raw bits of an FP8 E4M3FNUZ value (bias 8, 0x80 is NaN).
    Float8E4M3FNUZ,
    /// The raw bits of an FP8 E5M2FNUZ value (bias 16, 0x80 is NaN).
    Float8E5M2FNUZ,
    /// The raw bits of an IEEE-like FP8 E3M4 value.
    Float8E3M4,
    /// The raw bits of an IEEE-like FP8 E4M3 value.
    Float8E4M3,
    /// The raw bits of an FP8 E4M3B11FNUZ value (bias 11, 0x80 is NaN).
    Float8E4M3B11FNUZ,
}

macro_rules! element {
    ($($t:ty => $e:ident),* $(,)?) => {
        $(impl Element for $t { const TYPE: ElementType = ElementType::$e; })*
    };
}

element! {
    i8 => Int8, u8 => UInt8, i16 => Int16, u16 => UInt16,
    i32 => Int32, u32 => UInt32, i64 => Int64, u64 => UInt64,
    half::f16 => Float16, half::bf16 => BFloat16, f32 => Float32, f64 => Float64,
    Float8E4M3FN => Float8E4M3FN, Float8E5M2 => Float8E5M2,
    Float8E8M0FNU => Float8E8M0FNU, Float8E4M3FNUZ => Float8E4M3FNUZ,
    Float8E5M2FNUZ => Float8E5M2FNUZ, Float8E3M4 => Float8E3M4, Float8E4M3 => Float8E4M3,
    Float8E4M3B11FNUZ => Float8E4M3B11FNUZ,
    Complex64 => Complex64, Complex128 => Complex128,
}

impl ElementType {
    /// The type of a NumPy array-protocol type string (`"<f4"`, `"|b1"`,
    /// `"=i8"`; the spelling of [`numpy_dtype`](Self::numpy_dtype) with any
    /// little-endian or not-applicable byte-order mark). Big-endian (`">f4"`)
    /// and types Hurray does not store give `None`.
    pub fn from_numpy_dtype(descr: &str) -> Option<Self> {
        let (order, code) = descr.split_at_checked(1)?;
        if !matches!(order, "<" | "|" | "=") {
            return None;
        }
        ElementType::ALL
            .iter()
            .copied()
            .find(|t| t.numpy_dtype().is_some_and(|d| &d[1..] == code))
    }
}
