//! Element type names the attributes accept, and the `ElementType` variant
//! each stands for: a table generated from the schema, plus a test against the
//! runtime's generated `ElementType::ALL`.

// The table itself is generated from the schema (`cargo xtask codegen`).
#[rustfmt::skip]
#[path = "gen/dtype_table.rs"]
mod table;
pub(crate) use table::TABLE;

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

/// Scale types: the floats of at least 16 bits and the 8-bit microscaling
/// block scales (the runtime's `Quantization::SCALE_TYPES`).
pub(crate) const SCALE_TYPES: &[&str] = &["f16", "bf16", "f32", "f64", "f8e8m0fnu", "f8e4m3fn"];

/// Expressed types: every floating-point type, as the runtime's validation
/// says (`quantization.expressed_type`).
pub(crate) fn expressed_types() -> Vec<&'static str> {
    TABLE
        .iter()
        .filter(|(_, _, class)| *class == Class::Float)
        .map(|(name, _, _)| *name)
        .collect()
}
