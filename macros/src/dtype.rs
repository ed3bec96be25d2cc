//! Element type names the attributes accept, and the `ElementType` variant
//! each stands for. A test checks this table against the runtime's generated
//! `ElementType::ALL`, so it cannot drift from the schema.

/// `(canonical name, ElementType variant, class)`.
pub(crate) const TABLE: &[(&str, &str, Class)] = &[
    ("bool", "Bool", Class::Bool),
    ("i2", "Int2", Class::Int),
    ("u2", "UInt2", Class::Int),
    ("i4", "Int4", Class::Int),
    ("u4", "UInt4", Class::Int),
    ("i8", "Int8", Class::Int),
    ("u8", "UInt8", Class::Int),
    ("i16", "Int16", Class::Int),
    ("u16", "UInt16", Class::Int),
    ("i32", "Int32", Class::Int),
    ("u32", "UInt32", Class::Int),
    ("i64", "Int64", Class::Int),
    ("u64", "UInt64", Class::Int),
    ("f16", "Float16", Class::Float),
    ("bf16", "BFloat16", Class::Float),
    ("f32", "Float32", Class::Float),
    ("f64", "Float64", Class::Float),
    ("f8e4m3fn", "Float8E4M3FN", Class::Float),
    ("f8e5m2", "Float8E5M2", Class::Float),
    ("f4e2m1fn", "Float4E2M1FN", Class::Float),
    ("c64", "Complex64", Class::Complex),
    ("c128", "Complex128", Class::Complex),
];

/// What kind of number a type holds, as far as the attributes care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Bool,
    Int,
    Float,
    Complex,
}

/// The variant and class of a canonical element type name.
pub(crate) fn lookup(name: &str) -> Option<(&'static str, Class)> {
    TABLE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, v, c)| (*v, *c))
}

/// Every canonical name, for error messages.
pub(crate) fn names() -> String {
    TABLE
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Scale and expressed types: the floats of at least 16 bits.
pub(crate) const SCALE_TYPES: &[&str] = &["f16", "bf16", "f32", "f64"];
