//! The ggml types GGUF files name: ids, names and block sizes as gguf 0.19
//! lists them, and [`GgmlType`], a tensor's type as the parser reads it.

use std::fmt;

/// Every ggml type with its name, elements per block and bytes per block, as
/// `gguf.constants.GGML_QUANT_SIZES` (gguf 0.19.0) lists them. Ids not here
/// (4 and 5 were Q4_2 and Q4_3, 31 to 33 the removed Q4_0_4_4 family) are
/// unknown.
pub(in crate::convert) const GGML_TYPES: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 40),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
    (40, "NVFP4", 64, 36),
    (41, "Q1_0", 128, 18),
];

/// A tensor's ggml type: the ones the converter handles by name, any other
/// type ggml knows (its size is known, so its data is sliced, but the
/// converter refuses it), and ids ggml does not know (no data).
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::convert) enum GgmlType {
    F32,
    F16,
    BF16,
    /// Blocks of 32: `f16 d`, `i8 qs[32]`; `x = d * q`.
    Q8_0,
    /// Blocks of 32: `f16 d`, `u8 qs[16]`, element `j` in the low nibble of
    /// `qs[j]` and element `j + 16` in its high nibble; `x = d * (q - 8)`.
    Q4_0,
    /// Blocks of 32: `f16 d`, `f16 m`, `u8 qs[16]` nibbles as Q4_0; `x = d * q + m`.
    Q4_1,
    /// Another type of [`GGML_TYPES`], by id.
    Other(u32),
    /// An id ggml does not know: its size is unknown.
    Unknown(u32),
}

impl GgmlType {
    pub(super) fn from_id(id: u32) -> GgmlType {
        match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            30 => GgmlType::BF16,
            8 => GgmlType::Q8_0,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            _ if GGML_TYPES.iter().any(|t| t.0 == id) => GgmlType::Other(id),
            _ => GgmlType::Unknown(id),
        }
    }

    /// The type's id in the file.
    pub(super) fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::BF16 => 30,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Other(id) | GgmlType::Unknown(id) => id,
        }
    }

    fn entry(self) -> Option<&'static (u32, &'static str, u64, u64)> {
        let id = self.id();
        GGML_TYPES.iter().find(|t| t.0 == id)
    }

    /// ggml's name of the type (`Q4_K`), `None` for an unknown id.
    pub(super) fn name(self) -> Option<&'static str> {
        self.entry().map(|t| t.1)
    }

    /// Elements per block and bytes per block (1 and the element size for
    /// plain types), `None` for an unknown id.
    pub(super) fn block(self) -> Option<(u64, u64)> {
        self.entry().map(|t| (t.2, t.3))
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown ggml type {}", self.id()),
        }
    }
}
