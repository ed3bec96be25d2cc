// Opening a file: the prefix, the footer, the header's structure, then the
// semantic rules, in the reference reader's order (runtime/src/reader and
// runtime/src/validate) so that an invalid file is reported as the same
// error variant. Only the prefix, the footer and the header are read: the
// checks need no tensor data, so a file behind HTTP is verified from the
// header alone.

import * as flatbuffers from "flatbuffers";
import { HurrayError } from "./errors.js";
import {
  compareBytes,
  DIGEST_LEN,
  DYNAMIC,
  equalBytes,
  FILE_ID_LEN,
  FLAG_COMPOSITE_QUANTIZATION,
  FLAG_EXTENDED_QUANTIZATION,
  FLAG_SHARD_INDEX,
  FOOTER_LEN,
  FOOTER_MAGIC,
  KNOWN_FLAGS,
  MAGIC,
  PREFIX_LEN,
  U64_MAX,
  validAlignment,
  VERSION_MAJOR,
} from "./format.js";
import type { Buffer as BufferStruct } from "./gen/hurray/fb/buffer.js";
import { Header } from "./gen/hurray/fb/header.js";
import type { KeyValue } from "./gen/hurray/fb/key-value.js";
import type { Quantization } from "./gen/hurray/fb/quantization.js";
import type { Tensor as TensorTable } from "./gen/hurray/fb/tensor.js";
import { TABLES } from "./gen/structure.js";
import { BLOCK_FORMATS, compositeField, facts, plan, present, SCHEMES, storedLayout, type Plan, type StoredLayout } from "./plan.js";
import { verifyHeader } from "./verify.js";

const UTF8 = new TextDecoder("utf-8");

/** Where one buffer lies in the file. */
export interface Span {
  readonly offset: number;
  readonly length: number;
}

/**
 * A tensor's quantization, as `hurray inspect --json` writes it: the
 * fields of format 1.4 are present only when used.
 */
export interface QuantizationDescriptor {
  readonly scheme: string;
  /** The quantized axis; null for per-tensor and per-flat-block. */
  readonly axis: number | null;
  /** The block length; null unless per block or per flat block. */
  readonly block_size: number | null;
  readonly expressed_type: string;
  readonly scale_type: string;
  readonly zero_point_type: string | null;
  readonly tensor_scale: number;
  readonly offset_type: string | null;
  readonly code_table_type?: string;
  /** The scales' own quantization (a second level). */
  readonly scale_quantization?: QuantizationDescriptor;
  /** The offsets' own quantization. */
  readonly offset_quantization?: QuantizationDescriptor;
  readonly tensor_offset?: number;
  readonly group_index_type?: string;
  readonly block_format?: string;
}

/** Everything the header says of one tensor, verified. */
export interface TensorDescriptor {
  readonly name: string;
  /** The element type's short name (`f32`, `bf16`, `i4`, ...). */
  readonly dtype: string;
  /** Sizes; `null` for a dynamic dimension, a bigint past 2^53 - 1. */
  readonly shape: readonly (number | bigint | null)[];
  /** `dense`, `strided`, `coo`, `csr` or `csc`. */
  readonly layout: string;
  /** Bytes of all its buffers (0 for a descriptor-only or empty tensor). */
  readonly byteLength: number;
  readonly descriptorOnly: boolean;
  readonly alignment: number;
  /** Element strides of a strided tensor, else null. */
  readonly strides: readonly number[] | null;
  readonly metadata: Readonly<Record<string, string>>;
  readonly quantization: QuantizationDescriptor | null;
  /** What the file records to check its buffers. */
  readonly checksums: "crc32c" | null;
  readonly digests: "blake3" | null;
  /** Every buffer, by role, in file order. */
  readonly buffers: ReadonlyMap<string, Span>;
  /** The sparse layout's parameters; null for dense and strided. */
  readonly sparse: { readonly nnz: number; readonly indexType: string; readonly canonical: boolean } | null;
}

/** Where buffer `role` of tensor `d` lies; `HurrayError` (`NoSuchBuffer`) if it has none. */
export function spanOf(d: TensorDescriptor, role: string): Span {
  const span = d.buffers.get(role);
  if (span === undefined) throw new HurrayError("NoSuchBuffer", `tensor '${d.name}' has no buffer ${role}`, d.name, role);
  return span;
}

/** A verified header. */
export interface Contents {
  readonly version: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** The file's identity (format 1.5) in hexadecimal, or null. */
  readonly fileId: string | null;
  /** Whether the file is a sharded checkpoint's index (it then has no tensors). */
  readonly isShardIndex: boolean;
  readonly tensors: readonly TensorDescriptor[];
}

/** Where the header lies, from the prefix and the footer. */
export interface Located {
  readonly version: [number, number];
  readonly headerOffset: number;
  readonly headerLength: number;
  readonly flags: bigint;
}

const u64 = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(at, true);

/**
 * Checks the prefix (its first 12 bytes at least) and the footer (the
 * file's last 32 bytes) of a file of `length` bytes; says where its header is.
 */
export function locate(prefix: Uint8Array, footer: Uint8Array, length: number): Located {
  const min = PREFIX_LEN + FOOTER_LEN;
  if (length < min) {
    throw new HurrayError("TooShort", `file is ${length} bytes, shorter than the ${min} bytes of an empty Hurray file`);
  }
  if (!equalBytes(prefix.subarray(0, 8), MAGIC)) throw new HurrayError("BadMagic", "not a Hurray file: its magic is wrong");
  const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const major = view.getUint16(8, true);
  const minor = view.getUint16(10, true);
  if (major !== VERSION_MAJOR) throw new HurrayError("UnsupportedVersion", `format version ${major}.${minor} is not supported`);
  if (!equalBytes(footer.subarray(24, 32), FOOTER_MAGIC)) {
    throw new HurrayError("BadFooterMagic", "footer magic is wrong: file truncated or not a Hurray file");
  }
  const headerOffset = u64(footer, 0);
  const headerLength = u64(footer, 8);
  const flags = u64(footer, 16);
  if (headerOffset < BigInt(PREFIX_LEN) || headerOffset % 8n !== 0n) {
    throw new HurrayError("BadFooter", `header_offset ${headerOffset} must be a multiple of 8 after the prefix`, null, "header_offset");
  }
  if (headerLength < 8n) {
    throw new HurrayError("BadFooter", `header_length ${headerLength} is shorter than a FlatBuffer's 8-byte start`, null, "header_length");
  }
  if ((flags & ~KNOWN_FLAGS) !== 0n) {
    throw new HurrayError("BadFooter", `flags 0x${flags.toString(16)}: unknown flags, the file needs a newer reader`, null, "flags");
  }
  if (headerOffset + headerLength !== BigInt(length - FOOTER_LEN)) {
    throw new HurrayError("BadFooter", `header_length ${headerLength}: the header must end where the footer starts`, null, "header_length");
  }
  return { version: [major, minor], headerOffset: Number(headerOffset), headerLength: Number(headerLength), flags };
}

const offsetOf = (table: string, field: string): number => {
  const f = TABLES[table].find((x) => x.name === field);
  if (f === undefined) throw new Error(`schema has no ${table}.${field}`);
  return f.offset;
};
const HEADER_FILE_ID = offsetOf("Header", "file_id");
const HEADER_NAME_INDEX = offsetOf("Header", "name_index");
const HEADER_TENSORS = offsetOf("Header", "tensors");
const TENSOR_CHECKSUMS = offsetOf("Tensor", "checksums");
const TENSOR_DIGESTS = offsetOf("Tensor", "digests");

function checkMetadata(owner: string, count: number, entry: (i: number) => KeyValue): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  let previous: Uint8Array | null = null;
  for (let i = 0; i < count; i++) {
    const kv = entry(i);
    const key = kv.key(flatbuffers.Encoding.UTF8_BYTES) as Uint8Array;
    const value = kv.value(flatbuffers.Encoding.UTF8_BYTES) as Uint8Array;
    if (previous !== null && compareBytes(previous, key) >= 0) {
      const k = UTF8.decode(key);
      throw new HurrayError(
        "MetadataNotSorted",
        `metadata of ${owner}: key '${k}' follows '${UTF8.decode(previous)}': keys must be unique and sorted`,
        owner === "file" ? null : owner,
        k,
      );
    }
    previous = key;
    out[UTF8.decode(key)] = UTF8.decode(value);
  }
  return out;
}

const typeName = (wire: number): string | null => (wire === 0 ? null : (facts(wire)?.name ?? null));

function quantizationOf(q: Quantization): QuantizationDescriptor {
  const scheme = SCHEMES.get(q.scheme()) ?? String(q.scheme());
  const out: Record<string, unknown> = {
    scheme,
    axis: scheme === "per_axis" || scheme === "per_block" ? q.axis() : null,
    block_size: scheme === "per_block" || scheme === "per_flat_block" ? Number(q.blockSize()) : null,
    expressed_type: typeName(q.expressedType()),
    scale_type: typeName(q.scaleType()),
    zero_point_type: typeName(q.zeroPointType()),
    tensor_scale: q.tensorScale(),
    offset_type: typeName(q.offsetType()),
  };
  const scales = q.scaleQuantization();
  const offsets = q.offsetQuantization();
  const extra: [string, unknown][] = [
    ["code_table_type", typeName(q.codeTableType())],
    ["scale_quantization", scales === null ? null : quantizationOf(scales)],
    ["offset_quantization", offsets === null ? null : quantizationOf(offsets)],
    ["tensor_offset", q.tensorOffset() !== 0 ? q.tensorOffset() : null],
    ["group_index_type", typeName(q.groupIndexType())],
    ["block_format", q.blockFormat() === 0 ? null : (BLOCK_FORMATS.get(q.blockFormat())?.[0] ?? null)],
  ];
  for (const [key, value] of extra) if (value !== null) out[key] = value;
  return out as unknown as QuantizationDescriptor;
}

const dim = (d: bigint): number | bigint | null =>
  d === DYNAMIC ? null : d <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(d) : d;

/**
 * Verifies `header` (the header's bytes; read, never kept) of a file whose
 * data region ends at `dataEnd`, and returns what it describes.
 */
export function readHeader(header: Uint8Array, located: Located): Contents {
  const root = verifyHeader(header);
  const h = new Header().__init(root, new flatbuffers.ByteBuffer(header));
  const flags = located.flags;
  const dataEnd = BigInt(located.headerOffset);
  const fileAlignment = h.alignment();
  if (!validAlignment(fileAlignment)) {
    throw new HurrayError("InvalidAlignment", `file: alignment ${fileAlignment} is invalid`, null, "alignment");
  }
  const metadata = checkMetadata("file", h.metadataLength(), (i) => h.metadata(i)!);
  let fileId: string | null = null;
  if (present(h, HEADER_FILE_ID)) {
    if (h.fileIdLength() !== FILE_ID_LEN) {
      throw new HurrayError(
        "InvalidField",
        `header: file_id = ${h.fileIdLength()} byte(s): a file identifier is ${FILE_ID_LEN} bytes`,
        null,
        "file_id",
      );
    }
    fileId = [...h.fileIdArray()!].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  const hasIndex = h.shardIndex() !== null;
  if (hasIndex !== ((flags & FLAG_SHARD_INDEX) !== 0n)) {
    throw new HurrayError(
      "InvalidField",
      `header: shard_index = ${hasIndex ? "present" : "absent"}: footer flag bit 1 must be set exactly in an index file`,
      null,
      "shard_index",
    );
  }
  if (hasIndex && h.tensorsLength() > 0) {
    throw new HurrayError("InvalidField", "header: shard_index = present: an index file holds no tensors of its own", null, "shard_index");
  }
  const ranges: [bigint, bigint, number, string, string][] = [];
  const tensors: TensorDescriptor[] = [];
  let previous: Uint8Array | null = null;
  for (let index = 0; index < h.tensorsLength(); index++) {
    const t = h.tensors(index)!;
    const rawName = t.name(flatbuffers.Encoding.UTF8_BYTES) as Uint8Array;
    if (rawName.length === 0) throw new HurrayError("EmptyName", `tensor #${index} has an empty name`);
    const name = UTF8.decode(rawName);
    if (previous !== null && compareBytes(previous, rawName) >= 0) {
      throw new HurrayError("NamesNotSorted", `tensor '${name}' follows '${UTF8.decode(previous)}': names must be unique and sorted`, name);
    }
    previous = rawName;
    const a = t.alignment();
    let alignment: bigint;
    if (a === 0n) alignment = fileAlignment;
    else if (validAlignment(a)) alignment = a;
    else throw new HurrayError("InvalidAlignment", `tensor '${name}': alignment ${a} is invalid`, name, "alignment");
    const shape: bigint[] = [];
    for (let i = 0; i < t.shapeLength(); i++) shape.push(t.shape(i)!);
    const layout = storedLayout(t);
    const p = plan(name, t, shape, layout);
    const quant = t.quantization();
    const spans = checkBuffers(name, index, t, p, quant, alignment, dataEnd, flags, ranges);
    checkChecksums(name, t, h, p, quant !== null);
    tensors.push(describe(name, t, shape, layout, p, alignment, spans, quant, h));
  }
  // As the reference reader: the index is checked whether or not the
  // tensor list is present (absent counts as no tensors).
  checkNameIndex(h, present(h, HEADER_TENSORS) ? h.tensorsLength() : 0);
  ranges.sort((x, y) => (x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] !== y[1] ? (x[1] < y[1] ? -1 : 1) : x[2] - y[2] || (x[3] < y[3] ? -1 : x[3] > y[3] ? 1 : 0)));
  for (let i = 1; i < ranges.length; i++) {
    const [a, b] = [ranges[i - 1], ranges[i]];
    if (b[0] < a[1]) {
      throw new HurrayError("BuffersOverlap", `tensor '${a[4]}' buffer ${a[3]} overlaps tensor '${b[4]}' buffer ${b[3]}`, b[4], b[3]);
    }
  }
  return {
    version: `${located.version[0]}.${located.version[1]}`,
    metadata,
    fileId,
    isShardIndex: hasIndex,
    tensors,
  };
}

/** Quantization buffers after the offsets (format 1.4), by role. */
function tailBuffer(q: Quantization, role: string): BufferStruct | null {
  switch (role) {
    case "code_table":
      return q.codeTable();
    case "group_index":
      return q.groupIndex();
    case "scale_scales":
      return q.scaleQuantization()?.scales() ?? null;
    case "scale_code_table":
      return q.scaleQuantization()?.codeTable() ?? null;
    case "offset_scales":
      return q.offsetQuantization()?.scales() ?? null;
    default:
      return q.offsetQuantization()?.codeTable() ?? null;
  }
}

function checkBuffers(
  name: string,
  index: number,
  t: TensorTable,
  p: Plan,
  quant: Quantization | null,
  alignment: bigint,
  dataEnd: bigint,
  flags: bigint,
  ranges: [bigint, bigint, number, string, string][],
): Map<string, Span> {
  const listed = t.buffersLength();
  const descriptorOnly = t.descriptorOnly();
  const layoutBuffers = descriptorOnly ? 0 : p.roles.length;
  if (listed !== layoutBuffers) {
    if (descriptorOnly) {
      throw new HurrayError("DescriptorOnlyWithData", `tensor '${name}': descriptor-only but lists ${listed} buffer(s)`, name, "buffers");
    }
    throw new HurrayError("BufferCount", `tensor '${name}': layout ${p.layout} needs ${layoutBuffers} buffer(s), found ${listed}`, name, "buffers");
  }
  const spans = new Map<string, Span>();
  const check = (role: string, expected: bigint, buf: BufferStruct | null) => {
    const [offset, length] = buf === null ? [0n, 0n] : [buf.offset(), buf.length()];
    if (length !== expected) {
      throw new HurrayError("BufferLength", `tensor '${name}': buffer ${role} is ${length} bytes, expected ${expected}`, name, role);
    }
    if (length === 0n) {
      spans.set(role, { offset: 0, length: 0 }); // ADR-007: never dereferenced, no alignment
      return;
    }
    const end = offset + length;
    if (offset < BigInt(PREFIX_LEN) || end > U64_MAX || end > dataEnd) {
      throw new HurrayError(
        "BufferOutOfBounds",
        `tensor '${name}': buffer ${role} [${offset}, +${length}) lies outside the data region [${PREFIX_LEN}, ${dataEnd})`,
        name,
        role,
      );
    }
    if (offset % alignment !== 0n) {
      throw new HurrayError("BufferMisaligned", `tensor '${name}': buffer ${role} offset ${offset} is not a multiple of ${alignment}`, name, role);
    }
    spans.set(role, { offset: Number(offset), length: Number(length) });
    ranges.push([offset, end, index, role, name]);
  };
  for (let i = 0; i < listed; i++) check(p.roles[i], p.lengths[i], t.buffers(i));
  if (quant !== null) {
    check("scales", p.scales, quant.scales());
    check("zero_points", p.zeroPoints, quant.zeroPoints());
    if (p.offsets !== null) {
      check("offsets", p.offsets, quant.offsets());
    } else {
      const o = quant.offsets();
      if (o !== null && o.length() !== 0n) {
        throw new HurrayError("BufferLength", `tensor '${name}': buffer offsets is ${o.length()} bytes, expected 0`, name, "offsets");
      }
    }
    for (const [role, expected] of p.tail) check(role, expected, tailBuffer(quant, role));
    const composite = compositeField(quant);
    if (composite !== null && (flags & FLAG_COMPOSITE_QUANTIZATION) === 0n) {
      const field = `quantization.${composite[0]}`;
      throw new HurrayError(
        "InvalidField",
        `tensor '${name}': ${field} = ${String(composite[1])}: a file using it sets footer flag bit 2 (composite quantization)`,
        name,
        field,
      );
    }
    const extended = quant.tensorScale() !== 1 || quant.offsetType() !== 0;
    if (extended && (flags & FLAG_EXTENDED_QUANTIZATION) === 0n) {
      const field = quant.offsetType() ? "quantization.offset_type" : "quantization.tensor_scale";
      const value = quant.offsetType() ? quant.offsetType() : quant.tensorScale();
      throw new HurrayError(
        "InvalidField",
        `tensor '${name}': ${field} = ${value}: a file using it sets footer flag bit 0 (extended quantization)`,
        name,
        field,
      );
    }
  }
  // A descriptor-only tensor has no buffers at all (not 0-byte ones).
  if (descriptorOnly) spans.clear();
  return spans;
}

/** One checksum (1.2) and one digest (1.4) per buffer, under a named algorithm. */
function checkChecksums(name: string, t: TensorTable, h: Header, p: Plan, quantized: boolean): void {
  const quantBuffers = quantized ? 2 + (p.offsets !== null ? 1 : 0) + p.tail.size : 0;
  const buffers = t.descriptorOnly() ? 0 : p.roles.length + quantBuffers;
  if (present(t, TENSOR_CHECKSUMS)) {
    const count = t.checksumsLength();
    if (h.checksumAlgorithm() === 0) {
      throw new HurrayError("InvalidField", `tensor '${name}': checksums = ${count}: the header names no checksum algorithm`, name, "checksums");
    }
    if (count !== buffers) {
      throw new HurrayError(
        "InvalidField",
        `tensor '${name}': checksums = ${count}: one checksum per buffer: the tensor has ${buffers}`,
        name,
        "checksums",
      );
    }
  }
  const hasDigests = present(t, TENSOR_DIGESTS);
  if (!hasDigests && h.digestAlgorithm() === 1 && buffers > 0) {
    throw new HurrayError(
      "InvalidField",
      `tensor '${name}': digests = 0 byte(s): absent: the header names a digest algorithm`,
      name,
      "digests",
    );
  }
  if (hasDigests) {
    const count = t.digestsLength();
    if (h.digestAlgorithm() === 0) {
      throw new HurrayError("InvalidField", `tensor '${name}': digests = ${count} byte(s): the header names no digest algorithm`, name, "digests");
    }
    if (h.digestAlgorithm() === 1 && count !== DIGEST_LEN * buffers) {
      throw new HurrayError(
        "InvalidField",
        `tensor '${name}': digests = ${count} byte(s): one ${DIGEST_LEN}-byte digest per buffer: the tensor has ${buffers}`,
        name,
        "digests",
      );
    }
  }
}

/**
 * The optional name index (format 1.1) is only a lookup hint, but its shape
 * must be sound: a power-of-two length of at least the tensor count, and
 * entries (position + 1, 0 = empty) that name tensors.
 */
function checkNameIndex(h: Header, tensors: number): void {
  if (!present(h, HEADER_NAME_INDEX)) return;
  const n = h.nameIndexLength();
  const bad = (value: string, reason: string) => new HurrayError("InvalidField", `name_index = ${value}: ${reason}`, null, "name_index");
  if (n === 0 && tensors === 0) return;
  if (n === 0 || (n & (n - 1)) !== 0 || n < tensors) {
    throw bad(`${n} slots`, "the length must be a power of two of at least the tensor count");
  }
  for (let slot = 0; slot < n; slot++) {
    const e = h.nameIndex(slot)!;
    if (e > tensors) throw bad(`slot ${slot} = ${e}`, "an entry names a tensor that does not exist");
  }
}

function describe(
  name: string,
  t: TensorTable,
  shape: bigint[],
  layout: StoredLayout,
  p: Plan,
  alignment: bigint,
  spans: Map<string, Span>,
  quant: Quantization | null,
  h: Header,
): TensorDescriptor {
  let byteLength = 0;
  for (const s of spans.values()) byteLength += s.length;
  const hasChecksums = present(t, TENSOR_CHECKSUMS) && h.checksumAlgorithm() === 1;
  const hasDigests = present(t, TENSOR_DIGESTS) && h.digestAlgorithm() === 1;
  return {
    name,
    dtype: facts(t.elementType())!.name,
    shape: shape.map(dim),
    layout: p.layout,
    byteLength,
    descriptorOnly: t.descriptorOnly(),
    alignment: Number(alignment),
    strides: layout.kind === "strided" ? layout.strides.map(Number) : null,
    metadata: checkMetadata(name, t.metadataLength(), (i) => t.metadata(i)!),
    quantization: quant === null ? null : quantizationOf(quant),
    checksums: hasChecksums ? "crc32c" : null,
    digests: hasDigests ? "blake3" : null,
    buffers: spans,
    sparse:
      layout.kind === "coo" || layout.kind === "csr" || layout.kind === "csc"
        ? { nnz: Number(layout.nnz), indexType: facts(layout.indexType)!.name, canonical: layout.canonical }
        : null,
  };
}
