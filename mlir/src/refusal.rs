//! Why MLIR refused an input, in terms a user can act on.
//!
//! MLIR's parser reports the first thing it could not read. Two refusals have
//! a remedy MLIR does not say, and both come from producers outside LLVM
//! (JAX/XLA, torch-mlir, IREE, TFLite):
//!
//! - text in the custom (pretty) syntax of a dialect MLIR 22 does not have
//!   (`stablehlo.constant dense<...>`): only the dialect can read its custom
//!   syntax, while the generic op form is readable by any MLIR;
//! - bytecode from a newer MLIR, or whose dialects wrote their own encodings:
//!   the header names the producer and the bytecode version.

use crate::error::{BYTECODE_VERSIONS, Error};

/// The magic number that opens MLIR bytecode.
pub(crate) const BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// The header of an MLIR bytecode file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BytecodeHeader {
    pub(crate) version: u64,
    /// The producer string (`MLIR23.0.0git`, `StableHLO_v1.15.0`, ...),
    /// cut at 128 bytes.
    pub(crate) producer: String,
}

/// Reads the version and producer of MLIR bytecode; `None` when `bytes` is
/// not bytecode or its header is cut short.
pub(crate) fn bytecode_header(bytes: &[u8]) -> Option<BytecodeHeader> {
    let rest = bytes.strip_prefix(BYTECODE_MAGIC)?;
    let (version, used) = prefix_varint(rest)?;
    let rest = rest.get(used..)?;
    let end = rest.iter().take(128).position(|&b| b == 0)?;
    Some(BytecodeHeader {
        version,
        producer: String::from_utf8_lossy(&rest[..end]).into_owned(),
    })
}

/// MLIR bytecode's "PrefixVarInt": the number of trailing zero bits of the
/// first byte is the number of bytes that follow; a zero first byte is
/// followed by a full 8-byte little-endian value.
fn prefix_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let first = *bytes.first()?;
    if first == 0 {
        let raw: [u8; 8] = bytes.get(1..9)?.try_into().ok()?;
        return Some((u64::from_le_bytes(raw), 9));
    }
    let len = first.trailing_zeros() as usize + 1;
    let mut value = 0u64;
    for (i, b) in bytes.get(..len)?.iter().enumerate() {
        value |= u64::from(*b) << (8 * i);
    }
    Some((value >> len, len))
}

/// The dialect named by MLIR's "Dialect `x' not found for custom op 'x.op'".
fn foreign_custom_syntax(diagnostics: &str) -> Option<String> {
    let (_, rest) = diagnostics.split_once("Dialect `")?;
    let (dialect, rest) = rest.split_once('\'')?;
    rest.trim_start()
        .starts_with("not found for custom op")
        .then(|| dialect.to_owned())
}

/// The producer prefix of bytecode MLIR 22 itself writes (`MLIR22.1.0`).
const OWN_PRODUCER: &str = "MLIR22";

/// The error for an input MLIR refused: `head` is the input's first bytes
/// (enough for a bytecode header). Bytecode from another producer or of a
/// newer version is [`Error::Bytecode`]; MLIR 22's own bytecode that does
/// not read is plain corruption, [`Error::Parse`].
pub(crate) fn parse_error(head: &[u8], source_name: &str, diagnostics: String) -> Error {
    let source_name = source_name.to_owned();
    if let Some(header) = bytecode_header(head).filter(|h| {
        !h.producer.starts_with(OWN_PRODUCER) || !BYTECODE_VERSIONS.contains(&h.version)
    }) {
        return Error::Bytecode {
            source_name,
            producer: header.producer,
            version: header.version,
            diagnostics,
        };
    }
    if let Some(dialect) = foreign_custom_syntax(&diagnostics) {
        return Error::ForeignSyntax {
            source_name,
            dialect,
            diagnostics,
        };
    }
    Error::Parse {
        source_name,
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_headers_real_producers_write() {
        // The first bytes of jaxlib 0.10's bytecode and of a `jax.export`
        // artifact (mlir/tests/fixtures/jax/).
        let jaxlib = b"ML\xefR\x0dMLIR23.0.0git\x00\x01\x23";
        assert_eq!(
            bytecode_header(jaxlib),
            Some(BytecodeHeader {
                version: 6,
                producer: "MLIR23.0.0git".into()
            })
        );
        let vhlo = b"ML\xefR\x0dStableHLO_v1.15.0\x00";
        assert_eq!(bytecode_header(vhlo).unwrap().producer, "StableHLO_v1.15.0");
        assert_eq!(bytecode_header(b"ML\xefR\x0dMLIR"), None, "no terminator");
        assert_eq!(bytecode_header(b"module {}"), None);
    }

    #[test]
    fn prefix_varints_of_every_width() {
        assert_eq!(prefix_varint(&[0x0d]), Some((6, 1)));
        // 300 in two bytes: (300 << 2) | 0b10.
        let two = ((300u16 << 2) | 0b10).to_le_bytes();
        assert_eq!(prefix_varint(&two), Some((300, 2)));
        let mut nine = vec![0u8];
        nine.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(prefix_varint(&nine), Some((u64::MAX, 9)));
        assert_eq!(prefix_varint(&[0b100]), None, "cut short");
    }

    #[test]
    fn names_the_dialect_of_foreign_custom_syntax() {
        let d =
            "x.mlir:3:10: error: Dialect `stablehlo' not found for custom op 'stablehlo.constant' ";
        assert_eq!(foreign_custom_syntax(d).as_deref(), Some("stablehlo"));
        assert_eq!(
            foreign_custom_syntax("x.mlir:1:1: error: expected op"),
            None
        );
    }
}
