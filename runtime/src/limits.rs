//! Resource limits: every bound a Hurray front door enforces on what an input
//! may make it allocate, read or write, written down once. The policy they
//! implement is `docs/spec/resource-limits.md`; the CLI, the MLIR lowering,
//! the Python extension and the C API take their bounds from here.
//!
//! The rule behind them: nothing is allocated or written because an input
//! *declares* a size. Memory follows the bytes really present (streamed,
//! reserved with `try_reserve`), and an output far larger than the bytes it is
//! made from (a broadcast tensor expanded densely, a splat, a compressed
//! member) needs an explicit opt-in, checked before the first byte is written.

use crate::error::{Error, Result};

/// FlatBuffers verifier bound on table nesting. The schema nests tables
/// three deep (Header > Tensor > a layout table, Quantization or KeyValue);
/// 16 leaves room for tables later versions append while bounding how deep a
/// crafted header can make the verifier recurse. The table count is bounded
/// at one per 4 header bytes.
pub const MAX_HEADER_DEPTH: usize = 16;

/// The most pieces one logical tensor of a sharded checkpoint may have
/// (ADR-0010): opening an index checks every pair of a tensor's pieces for
/// overlap, so this bounds that work (16 M pair checks). A tensor-parallel
/// checkpoint has one piece per rank.
pub const MAX_PIECES_PER_TENSOR: usize = 4096;

/// The most alternates of a member's preferred name
/// (`model-00001.1.hurray`, ...) a sharded checkpoint's writer tries to
/// claim before it gives up (ADR-0010): each taken one is a file already
/// there, so a directory this full holds thousands of files no index lists.
pub const MAX_MEMBER_NAME_ALTERNATES: u64 = 10_000;

/// The most times a sharded checkpoint's writer swaps its index into an
/// object store before it gives up (ADR-0010): each retry means another
/// save put its index in place between this one's read and its conditional
/// put.
pub const MAX_INDEX_SWAP_ATTEMPTS: usize = 64;

/// The most range requests one reader of an object store has in flight at
/// once (`hurray-object-store`): enough to fill a link's bandwidth, few
/// enough that one process does not trip a store's request-rate limits.
pub const REQUESTS_IN_FLIGHT: usize = 16;

/// The size of each part of a multipart upload to an object store
/// (`hurray-object-store`, a member of a sharded checkpoint or a file
/// saved to a URL): above S3's 5 MiB minimum, and, with S3's
/// [`UPLOAD_MAX_PARTS`], room for objects of up to 156 GiB.
pub const UPLOAD_PART_BYTES: usize = 16 << 20;

/// The most parts of one upload (S3's limit): a file that would need more
/// is refused at the write that would pass it, naming its URL, not after
/// the store has taken 156 GiB. Split such a file into members.
pub const UPLOAD_MAX_PARTS: u64 = 10_000;

/// The most parts of one upload in flight at once: what an upload holds in
/// memory is at most this many parts, plus the one being filled.
pub const UPLOADS_IN_FLIGHT: usize = 4;

/// The most times one request to an object store is retried after a
/// transient failure (a connection reset or short body, a 5xx such as
/// `503 SlowDown`, a timeout), waiting a jittered, exponentially growing
/// backoff (100 ms doubling to 15 s) between attempts; a body cut short is
/// resumed from where it stopped, asking for the same version (ETag). Then
/// the read fails, naming the URL. The option `max_retries` lowers or raises
/// it per store.
pub const REMOTE_MAX_RETRIES: usize = 10;

/// ...and for at most this many seconds from the request's first attempt
/// (the option `retry_timeout`, in seconds): a request is retried with its
/// first signature, which must still be valid.
pub const REMOTE_RETRY_TIMEOUT_SECS: u64 = 180;

/// An output may be this many times the bytes it is made from...
pub const EXPANSION_RATIO: u64 = 16;

/// ...or this many bytes, whichever is more, before it needs an opt-in.
/// (Unpacking 1-bit bools is 8x, so it never needs one.)
pub const EXPANSION_ALLOWANCE: u64 = 64 << 20;

/// The most bytes an output made from `stored` input bytes may take without
/// an explicit opt-in.
pub fn expansion_limit(stored: u64) -> u64 {
    stored
        .saturating_mul(EXPANSION_RATIO)
        .max(EXPANSION_ALLOWANCE)
}

/// Checks that writing `output` bytes for `tensor`, made from `stored` bytes
/// of input, stays within [`expansion_limit`]: [`Error::Expansion`] otherwise,
/// naming the tensor and the size it would reach.
pub fn check_expansion(tensor: &str, stored: u64, output: u64) -> Result<()> {
    let limit = expansion_limit(stored);
    if output > limit {
        return Err(Error::Expansion {
            tensor: tensor.to_owned(),
            stored,
            output,
            limit,
        });
    }
    Ok(())
}

/// The largest ONNX model file (`hurray-onnx`) read into memory: protobuf's
/// own limit on one message (2 GiB). Weights past it live in external data
/// files, which are read one tensor at a time and never held whole.
pub const MAX_ONNX_MODEL_BYTES: u64 = 2 << 30;

/// The most dimensions an ONNX initializer may list before `hurray-onnx`
/// refuses it (each costs 8 bytes read from a byte of input).
pub const MAX_ONNX_RANK: usize = 64;

/// How many messages deep `hurray-onnx` walks an ONNX model to its
/// initializers before refusing it (model, graph, then node, attribute and
/// graph again for each level of subgraph, the bodies of `If`, `Loop` and
/// `Scan`): bounds the walk's recursion; about 20 levels of subgraphs.
pub const MAX_ONNX_GRAPH_DEPTH: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_is_bounded_by_ratio_or_allowance() {
        assert!(check_expansion("t", 8, EXPANSION_ALLOWANCE).is_ok());
        assert!(check_expansion("t", 1 << 30, 16 << 30).is_ok());
        assert!(check_expansion("t", u64::MAX, u64::MAX).is_ok());
        let e = check_expansion("b\u{1b}]0;x", 8, 1 << 40).unwrap_err();
        assert_eq!(e.kind(), "Expansion");
        let text = e.to_string();
        assert!(text.contains("1099511627776 bytes"), "{text}");
        assert!(text.contains("\\u{1b}"), "the name is escaped: {text}");
        // The message spells the rule; it must be these constants'.
        let rule = format!(
            "({EXPANSION_RATIO}x the stored bytes, or {} MiB)",
            EXPANSION_ALLOWANCE >> 20
        );
        assert!(text.contains(&rule), "{text}");
    }
}
