//! [`BlockFormat`]: the block formats a quantized tensor's values may be
//! held in as they are (format 1.4), with their sizes. Which formats are held
//! this way, rather than as codes, scales and tables, and why: ADR-0013. The
//! decoders are in [`views::blocks`](crate::views).

use crate::generated::fb;
use std::fmt;

/// A block format (the schema's `BlockFormat`): GGUF types whose bits are
/// not affine codes and scales. Each block holds [`elements`](Self::elements)
/// consecutive elements of the last dimension in [`bytes`](Self::bytes) bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum BlockFormat {
    GgmlQ8_1,
    GgmlQ8_K,
    GgmlTq1_0,
    GgmlIq2Xxs,
    GgmlIq2Xs,
    GgmlIq2S,
    GgmlIq3Xxs,
    GgmlIq3S,
    GgmlIq1S,
    GgmlIq1M,
    GgmlMxfp4,
    GgmlNvfp4,
    GgmlQ1_0,
}

impl BlockFormat {
    /// Every block format, in wire order.
    pub const ALL: [BlockFormat; 13] = [
        BlockFormat::GgmlQ8_1,
        BlockFormat::GgmlQ8_K,
        BlockFormat::GgmlTq1_0,
        BlockFormat::GgmlIq2Xxs,
        BlockFormat::GgmlIq2Xs,
        BlockFormat::GgmlIq2S,
        BlockFormat::GgmlIq3Xxs,
        BlockFormat::GgmlIq3S,
        BlockFormat::GgmlIq1S,
        BlockFormat::GgmlIq1M,
        BlockFormat::GgmlMxfp4,
        BlockFormat::GgmlNvfp4,
        BlockFormat::GgmlQ1_0,
    ];

    /// The schema's value.
    pub const fn to_wire(self) -> u8 {
        match self {
            BlockFormat::GgmlQ8_1 => fb::BlockFormat::GgmlQ8_1.0,
            BlockFormat::GgmlQ8_K => fb::BlockFormat::GgmlQ8_K.0,
            BlockFormat::GgmlTq1_0 => fb::BlockFormat::GgmlTq1_0.0,
            BlockFormat::GgmlIq2Xxs => fb::BlockFormat::GgmlIq2Xxs.0,
            BlockFormat::GgmlIq2Xs => fb::BlockFormat::GgmlIq2Xs.0,
            BlockFormat::GgmlIq2S => fb::BlockFormat::GgmlIq2S.0,
            BlockFormat::GgmlIq3Xxs => fb::BlockFormat::GgmlIq3Xxs.0,
            BlockFormat::GgmlIq3S => fb::BlockFormat::GgmlIq3S.0,
            BlockFormat::GgmlIq1S => fb::BlockFormat::GgmlIq1S.0,
            BlockFormat::GgmlIq1M => fb::BlockFormat::GgmlIq1M.0,
            BlockFormat::GgmlMxfp4 => fb::BlockFormat::GgmlMxfp4.0,
            BlockFormat::GgmlNvfp4 => fb::BlockFormat::GgmlNvfp4.0,
            BlockFormat::GgmlQ1_0 => fb::BlockFormat::GgmlQ1_0.0,
        }
    }

    /// The format of a schema value; `None` for `None` (0) and values this
    /// build does not know.
    pub fn from_wire(value: u8) -> Option<Self> {
        BlockFormat::ALL.into_iter().find(|f| f.to_wire() == value)
    }

    /// The name used in JSON, the CLI and errors: ggml's type name.
    pub const fn name(self) -> &'static str {
        match self {
            BlockFormat::GgmlQ8_1 => "ggml_q8_1",
            BlockFormat::GgmlQ8_K => "ggml_q8_k",
            BlockFormat::GgmlTq1_0 => "ggml_tq1_0",
            BlockFormat::GgmlIq2Xxs => "ggml_iq2_xxs",
            BlockFormat::GgmlIq2Xs => "ggml_iq2_xs",
            BlockFormat::GgmlIq2S => "ggml_iq2_s",
            BlockFormat::GgmlIq3Xxs => "ggml_iq3_xxs",
            BlockFormat::GgmlIq3S => "ggml_iq3_s",
            BlockFormat::GgmlIq1S => "ggml_iq1_s",
            BlockFormat::GgmlIq1M => "ggml_iq1_m",
            BlockFormat::GgmlMxfp4 => "ggml_mxfp4",
            BlockFormat::GgmlNvfp4 => "ggml_nvfp4",
            BlockFormat::GgmlQ1_0 => "ggml_q1_0",
        }
    }

    /// The format called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        BlockFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Elements per block.
    pub const fn elements(self) -> u64 {
        match self {
            BlockFormat::GgmlQ8_1 | BlockFormat::GgmlMxfp4 => 32,
            BlockFormat::GgmlNvfp4 => 64,
            BlockFormat::GgmlQ1_0 => 128,
            _ => 256,
        }
    }

    /// Bytes per block.
    pub const fn bytes(self) -> u64 {
        match self {
            BlockFormat::GgmlQ8_1 => 40,
            BlockFormat::GgmlQ8_K => 292,
            BlockFormat::GgmlTq1_0 => 54,
            BlockFormat::GgmlIq2Xxs => 66,
            BlockFormat::GgmlIq2Xs => 74,
            BlockFormat::GgmlIq2S => 82,
            BlockFormat::GgmlIq3Xxs => 98,
            BlockFormat::GgmlIq3S => 110,
            BlockFormat::GgmlIq1S => 50,
            BlockFormat::GgmlIq1M => 56,
            BlockFormat::GgmlMxfp4 => 17,
            BlockFormat::GgmlNvfp4 => 36,
            BlockFormat::GgmlQ1_0 => 18,
        }
    }
}

impl fmt::Display for BlockFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_and_names_round_trip() {
        for f in BlockFormat::ALL {
            assert_eq!(BlockFormat::from_wire(f.to_wire()), Some(f));
            assert_eq!(BlockFormat::from_name(f.name()), Some(f));
            assert!(f.bytes() > 0 && f.elements() > 0);
        }
        assert_eq!(BlockFormat::from_wire(0), None);
        assert_eq!(BlockFormat::from_wire(14), None);
    }
}
