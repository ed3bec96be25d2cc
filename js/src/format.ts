// The container's fixed facts (docs/spec/buffer-protocol.md), and the
// reader's limits, as the Rust reader has them.

/** The first 8 bytes of every Hurray file. */
export const MAGIC = new Uint8Array([0x89, 0x48, 0x55, 0x52, 0x52, 0x41, 0x59, 0x0a]);
/** The last 8 bytes: `HRRY_END`. */
export const FOOTER_MAGIC = new Uint8Array([0x48, 0x52, 0x52, 0x59, 0x5f, 0x45, 0x4e, 0x44]);
export const VERSION_MAJOR = 1;
export const PREFIX_LEN = 64;
export const FOOTER_LEN = 32;
export const MIN_ALIGNMENT = 64n;
export const MAX_ALIGNMENT = 1n << 30n;
/** The dynamic-dimension sentinel, and the largest u64. */
export const U64_MAX = 0xffff_ffff_ffff_ffffn;
export const DYNAMIC = U64_MAX;
/** Footer flag bit 0 (1.2): a tensor scale other than 1, or offsets. */
export const FLAG_EXTENDED_QUANTIZATION = 1n;
/** Footer flag bit 1 (1.3): the file is a sharded checkpoint's index. */
export const FLAG_SHARD_INDEX = 2n;
/** Footer flag bit 2 (1.4): a code table, a second level, a tensor offset, a group index or a block format. */
export const FLAG_COMPOSITE_QUANTIZATION = 4n;
export const KNOWN_FLAGS = FLAG_EXTENDED_QUANTIZATION | FLAG_SHARD_INDEX | FLAG_COMPOSITE_QUANTIZATION;
/** A BLAKE3 digest's length (Header.digest_algorithm 1). */
export const DIGEST_LEN = 32;
/** A file identity's length (Header.file_id, 1.5). */
export const FILE_ID_LEN = 16;
/** The verifier's table nesting limit, as the Rust reader's. */
export const MAX_DEPTH = 16;

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Byte-wise comparison, as the format sorts names and keys. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

export function validAlignment(a: bigint): boolean {
  return a > 0n && (a & (a - 1n)) === 0n && a >= MIN_ALIGNMENT && a <= MAX_ALIGNMENT;
}
