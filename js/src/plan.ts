// What a valid tensor descriptor implies about its buffers: the checks of
// the reference reader's `validate::plan` (and its quantization rules), in
// the same order, so an invalid descriptor is reported as the same error
// variant in every language (docs/impl/compliance.md).

import * as flatbuffers from "flatbuffers";
import { HurrayError } from "./errors.js";
import { DYNAMIC, U64_MAX } from "./format.js";
import { ELEMENT_TYPES, type ElementTypeFacts } from "./gen/element_types.js";
import { Coo } from "./gen/hurray/fb/coo.js";
import { Csc } from "./gen/hurray/fb/csc.js";
import { Csr } from "./gen/hurray/fb/csr.js";
import { Dense } from "./gen/hurray/fb/dense.js";
import { Layout as LayoutType } from "./gen/hurray/fb/layout.js";
import type { Quantization } from "./gen/hurray/fb/quantization.js";
import { QuantizationScheme } from "./gen/hurray/fb/quantization-scheme.js";
import type { Tensor as TensorTable } from "./gen/hurray/fb/tensor.js";

/** A layout as stored: its kind and parameters. */
export type StoredLayout =
  | { kind: "dense" }
  | { kind: "strided"; strides: bigint[] }
  | { kind: "coo" | "csr" | "csc"; nnz: bigint; indexType: number; canonical: boolean }
  | { kind: "unknown"; wire: number };

/** The plan of one tensor: its layout's name and every buffer's role and length. */
export interface Plan {
  layout: "dense" | "strided" | "coo" | "csr" | "csc";
  /** The layout's buffers, in order. */
  roles: readonly string[];
  lengths: bigint[];
  scales: bigint;
  zeroPoints: bigint;
  /** Bytes of the offsets; null when the quantization has none. */
  offsets: bigint | null;
  /** Bytes of each format 1.4 quantization buffer, in wire order. */
  tail: Map<string, bigint>;
  /** Elements; null when a dimension is dynamic. */
  elements: bigint | null;
}

const INDEX_TYPES = ["i32", "i64"];
const SCALE_TYPES = ["f16", "bf16", "f32", "f64", "f8e8m0fnu", "f8e4m3fn"];
const OFFSET_TYPES = ["f16", "bf16", "f32", "f64"];
const CODE_TABLE_TYPES = ["i8", "f16", "bf16", "f32", "f64"];
const GROUP_INDEX_TYPES = ["i32"];
const TAIL_ROLES = ["code_table", "group_index", "scale_scales", "scale_code_table", "offset_scales", "offset_code_table"];

/** Block formats: wire value -> [name, elements per block, bytes per block]. */
export const BLOCK_FORMATS: ReadonlyMap<number, readonly [string, bigint, bigint]> = new Map([
  [1, ["ggml_q8_1", 32n, 40n]],
  [2, ["ggml_q8_k", 256n, 292n]],
  [3, ["ggml_tq1_0", 256n, 54n]],
  [4, ["ggml_iq2_xxs", 256n, 66n]],
  [5, ["ggml_iq2_xs", 256n, 74n]],
  [6, ["ggml_iq2_s", 256n, 82n]],
  [7, ["ggml_iq3_xxs", 256n, 98n]],
  [8, ["ggml_iq3_s", 256n, 110n]],
  [9, ["ggml_iq1_s", 256n, 50n]],
  [10, ["ggml_iq1_m", 256n, 56n]],
  [11, ["ggml_mxfp4", 32n, 17n]],
  [12, ["ggml_nvfp4", 64n, 36n]],
  [13, ["ggml_q1_0", 128n, 18n]],
]);

export const SCHEMES: ReadonlyMap<number, string> = new Map([
  [QuantizationScheme.PerTensor, "per_tensor"],
  [QuantizationScheme.PerAxis, "per_axis"],
  [QuantizationScheme.PerBlock, "per_block"],
  [QuantizationScheme.PerFlatBlock, "per_flat_block"],
]);

/** Whether the table field at vtable offset `voffset` is present. */
export function present(table: { bb: flatbuffers.ByteBuffer | null; bb_pos: number }, voffset: number): boolean {
  return table.bb!.__offset(table.bb_pos, voffset) !== 0;
}

export function facts(wire: number): ElementTypeFacts | undefined {
  return ELEMENT_TYPES.get(wire);
}

/** The layout a tensor stores. */
export function storedLayout(t: TensorTable): StoredLayout {
  const lt = t.layoutType();
  if (lt === LayoutType.NONE) return { kind: "dense" };
  if (lt === LayoutType.Dense) {
    const d = t.layout(new Dense()) as Dense | null;
    // Dense.strides is the table's first field (vtable offset 4).
    if (d === null || !present(d, 4)) return { kind: "dense" };
    const strides: bigint[] = [];
    for (let i = 0; i < d.stridesLength(); i++) strides.push(BigInt.asIntN(64, d.strides(i)!));
    return { kind: "strided", strides };
  }
  const kinds: Record<number, [() => Coo | Csr | Csc, "coo" | "csr" | "csc"]> = {
    [LayoutType.Coo]: [() => new Coo(), "coo"],
    [LayoutType.Csr]: [() => new Csr(), "csr"],
    [LayoutType.Csc]: [() => new Csc(), "csc"],
  };
  const k = kinds[lt];
  const table = k === undefined ? null : (t.layout(k[0]()) as Coo | Csr | Csc | null);
  if (k === undefined || table === null) return { kind: "unknown", wire: lt };
  return {
    kind: k[1],
    nnz: table.nnz(),
    indexType: table.indexType(),
    canonical: table instanceof Coo ? table.canonical() : false,
  };
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** The bytes of `count` elements of `bits` each; null past 64 bits. */
function packedBytes(count: bigint, bits: number): bigint | null {
  const n = (count * BigInt(bits) + 7n) / 8n;
  return n <= U64_MAX ? n : null;
}

/** The error helpers of one tensor's checks. */
class Checks {
  constructor(readonly name: string) {}

  invalid(field: string, value: unknown, reason: string): HurrayError {
    return new HurrayError("InvalidField", `tensor '${this.name}': ${field} = ${String(value)}: ${reason}`, this.name, field);
  }

  overflow(field: string): HurrayError {
    return new HurrayError("SizeOverflow", `tensor '${this.name}': size of ${field} overflows 64 bits`, this.name, field);
  }

  elementType(field: string, v: number): ElementTypeFacts {
    const f = facts(v);
    if (f === undefined) {
      throw new HurrayError("InvalidElementType", `tensor '${this.name}': ${field} = ${v} is not a valid element type`, this.name, field);
    }
    return f;
  }

  oneOf(field: string, v: number, allowed: readonly string[]): ElementTypeFacts {
    const f = facts(v);
    if (f === undefined || !allowed.includes(f.name)) {
      throw new HurrayError(
        "InvalidElementType",
        `tensor '${this.name}': ${field} = ${v} is not allowed here (allowed: ${allowed.join(", ")})`,
        this.name,
        field,
      );
    }
    return f;
  }

  nbytes(count: bigint, f: ElementTypeFacts, field: string): bigint {
    const n = packedBytes(count, f.bits);
    if (n === null) throw this.overflow(field);
    return n;
  }
}

/** Checks a descriptor and computes its buffer lengths. */
export function plan(name: string, t: TensorTable, shape: bigint[], layout: StoredLayout): Plan {
  const c = new Checks(name);
  const descriptorOnly = t.descriptorOnly();
  const et = c.elementType("element_type", t.elementType());
  const rank = shape.length;
  shape.forEach((d, i) => {
    if (d === DYNAMIC && !descriptorOnly) {
      throw new HurrayError(
        "DynamicWithData",
        `tensor '${name}': shape[${i}] is dynamic, so the tensor must be descriptor-only`,
        name,
        `shape[${i}]`,
      );
    }
  });
  // A resolved 0 anywhere makes the tensor empty, whatever else the shape
  // holds: 0 elements and 0-byte buffers, scales included (ADR-007).
  const empty = shape.includes(0n);
  let elements: bigint | null = 1n;
  if (empty) {
    elements = 0n;
  } else {
    for (const d of shape) {
      if (d === DYNAMIC) {
        elements = null;
      } else if (elements !== null) {
        elements *= d;
        if (elements > U64_MAX) throw c.overflow("shape");
      }
    }
  }
  const known = elements ?? 0n;
  const checkNnz = (nnz: bigint) => {
    if (elements !== null && nnz > elements) {
      throw c.invalid("layout.nnz", nnz, `more stored elements than the ${elements} the shape holds`);
    }
  };
  let out: Plan;
  const base = { scales: 0n, zeroPoints: 0n, offsets: null, tail: new Map<string, bigint>(), elements };
  switch (layout.kind) {
    case "unknown":
      throw new HurrayError(
        "UnsupportedLayout",
        `tensor '${name}': layout type ${layout.wire} is not supported by this reader`,
        name,
        "layout",
      );
    case "dense":
      out = { ...base, layout: "dense", roles: ["values"], lengths: [c.nbytes(known, et, "values")] };
      break;
    case "strided": {
      const strides = layout.strides;
      if (strides.length !== rank) {
        throw c.invalid("layout.strides", `${strides.length} strides`, `need one per dimension (${rank})`);
      }
      if (et.bits % 8 !== 0) throw c.invalid("layout.strides", et.name, "packed sub-byte element types cannot be strided");
      let extent = 1n;
      strides.forEach((s, i) => {
        if (s < 0n) throw c.invalid(`layout.strides[${i}]`, s, "strides must be non-negative");
        const d = shape[i];
        if (!empty && d !== DYNAMIC) {
          const reach = (d - 1n) * s;
          if (reach > U64_MAX) throw c.overflow("layout.strides");
          extent += reach;
          if (extent > U64_MAX) throw c.overflow("layout.strides");
        }
      });
      const count = elements === null || elements === 0n ? 0n : extent;
      out = { ...base, layout: "strided", roles: ["values"], lengths: [c.nbytes(count, et, "values")] };
      break;
    }
    case "coo": {
      const it = c.oneOf("layout.index_type", layout.indexType, INDEX_TYPES);
      if (rank === 0) throw c.invalid("shape", "[]", "a COO tensor needs rank >= 1");
      checkNnz(layout.nnz);
      const coords = layout.nnz * BigInt(rank);
      if (coords > U64_MAX) throw c.overflow("indices");
      out = {
        ...base,
        layout: "coo",
        roles: ["indices", "values"],
        lengths: [c.nbytes(coords, it, "indices"), c.nbytes(layout.nnz, et, "values")],
      };
      break;
    }
    case "csr":
    case "csc": {
      const it = c.oneOf("layout.index_type", layout.indexType, INDEX_TYPES);
      if (rank !== 2) throw c.invalid("shape", `rank ${rank}`, "CSR and CSC tensors have rank 2");
      checkNnz(layout.nnz);
      const major = shape[layout.kind === "csr" ? 0 : 1];
      let pointers = 0n;
      if (major !== DYNAMIC) {
        pointers = major + 1n;
        if (pointers > U64_MAX) throw c.overflow("pointers");
      }
      out = {
        ...base,
        layout: layout.kind,
        roles: ["pointers", "indices", "values"],
        lengths: [c.nbytes(pointers, it, "pointers"), c.nbytes(layout.nnz, it, "indices"), c.nbytes(layout.nnz, et, "values")],
      };
      break;
    }
  }
  const quant = t.quantization();
  if (quant !== null) {
    const q = quantizationLengths(c, et, shape, elements, empty, quant, out.layout);
    out.scales = q.scales;
    out.zeroPoints = q.zeroPoints;
    out.offsets = q.offsets;
    out.tail = q.tail;
    if (q.blockValues !== null) out.lengths = [q.blockValues];
  }
  if (descriptorOnly || empty) {
    out.lengths = out.lengths.map(() => 0n);
    out.scales = 0n;
    out.zeroPoints = 0n;
    out.offsets = out.offsets === null ? null : 0n;
    out.tail = new Map([...out.tail.keys()].map((role) => [role, 0n]));
  }
  return out;
}

interface Lengths {
  scales: bigint;
  zeroPoints: bigint;
  offsets: bigint | null;
  tail: Map<string, bigint>;
  blockValues: bigint | null;
}

/** The first format 1.4 field quantization `q` uses, as [field, value]. */
export function compositeField(q: Quantization): [string, unknown] | null {
  if (q.codeTableType() !== 0) return ["code_table_type", q.codeTableType()];
  if (q.scaleQuantization() !== null) return ["scale_quantization", "present"];
  if (q.offsetQuantization() !== null) return ["offset_quantization", "present"];
  if (q.tensorOffset() !== 0) return ["tensor_offset", q.tensorOffset()];
  if (q.groupIndexType() !== 0) return ["group_index_type", q.groupIndexType()];
  if (q.blockFormat() !== 0) return ["block_format", q.blockFormat()];
  return null;
}

/** The first field a second level may not have. */
function forbidden(level: Quantization): string | null {
  const nonEmpty = (b: { length(): bigint } | null) => b !== null && b.length() > 0n;
  const checks: [string, boolean][] = [
    ["zero_point_type", level.zeroPointType() !== 0],
    ["zero_points", nonEmpty(level.zeroPoints())],
    ["offset_type", level.offsetType() !== 0],
    ["offsets", nonEmpty(level.offsets())],
    ["scale_quantization", level.scaleQuantization() !== null],
    ["offset_quantization", level.offsetQuantization() !== null],
    ["group_index_type", level.groupIndexType() !== 0],
    ["group_index", nonEmpty(level.groupIndex())],
    ["block_format", level.blockFormat() !== 0],
  ];
  return checks.find(([, bad]) => bad)?.[0] ?? null;
}

function quantizationLengths(
  c: Checks,
  et: ElementTypeFacts,
  shape: bigint[],
  elements: bigint | null,
  empty: boolean,
  quant: Quantization,
  layoutName: string,
): Lengths {
  if (et.kind === "bool" || et.kind === "complex") {
    throw c.invalid("element_type", et.name, "a quantized tensor stores integers or small floats");
  }
  if (quant.blockFormat() !== 0) return blockFormat(c, et, shape, elements, quant, layoutName);
  const out: Lengths = { scales: 0n, zeroPoints: 0n, offsets: null, tail: new Map(), blockValues: null };
  const expressed = (field: string, level: Quantization) => {
    const t = c.elementType(field + "expressed_type", level.expressedType());
    if (t.kind !== "float") throw c.invalid(field + "expressed_type", t.name, "the expressed type is a floating-point type");
  };
  const integer = (field: string, v: number, what: string) => {
    const t = c.elementType(field, v);
    if (t.kind !== "int" && t.kind !== "uint") throw c.invalid(field, t.name, `${what} are integers`);
    return t;
  };
  const finite = (field: string, v: number) => {
    if (!Number.isFinite(v)) throw c.invalid(field, v, "a finite number");
  };
  expressed("quantization.", quant);
  const scaleType =
    quant.scaleQuantization() === null
      ? c.oneOf("quantization.scale_type", quant.scaleType(), SCALE_TYPES)
      : integer("quantization.scale_type", quant.scaleType(), "quantized scales");
  const zpType = quant.zeroPointType() !== 0 ? integer("quantization.zero_point_type", quant.zeroPointType(), "zero points") : null;
  finite("quantization.tensor_scale", quant.tensorScale());
  finite("quantization.tensor_offset", quant.tensorOffset());
  let offsetType: ElementTypeFacts | null = null;
  if (quant.offsetType() === 0) {
    if (quant.offsetQuantization() !== null) {
      throw c.invalid("quantization.offset_quantization", "present", "quantized offsets need an offset_type");
    }
  } else if (quant.offsetQuantization() === null) {
    offsetType = c.oneOf("quantization.offset_type", quant.offsetType(), OFFSET_TYPES);
  } else {
    offsetType = integer("quantization.offset_type", quant.offsetType(), "quantized offsets");
  }
  const table = codeTable(c, "quantization.", "code_table", et, quant.codeTableType());
  if (table !== null && zpType !== null) {
    throw c.invalid("quantization.zero_point_type", quant.zeroPointType(), "a code table's codes have no zero point");
  }
  const scheme: Scheme = [quant.scheme(), BigInt(quant.axis()), quant.blockSize()];
  const count = scaleCount(c, "quantization.", shape, elements, empty, scheme);
  out.scales = c.nbytes(count, scaleType, "scales");
  out.zeroPoints = zpType !== null ? c.nbytes(count, zpType, "zero_points") : 0n;
  if (offsetType !== null) out.offsets = c.nbytes(count, offsetType, "offsets");
  const tail = new Map<string, bigint>();
  if (table !== null) tail.set("code_table", table);
  if (quant.groupIndexType() !== 0) {
    const gt = c.oneOf("quantization.group_index_type", quant.groupIndexType(), GROUP_INDEX_TYPES);
    if (scheme[0] !== QuantizationScheme.PerBlock) {
      throw c.invalid("quantization.group_index_type", gt.name, "a group index belongs to per-block quantization");
    }
    const d = shape[Number(scheme[1])];
    tail.set("group_index", c.nbytes(empty || d === DYNAMIC ? 0n : d, gt, "group_index"));
  }
  const levels: [string, Quantization | null, ElementTypeFacts | null, [string, string]][] = [
    ["scale", quant.scaleQuantization(), scaleType, ["scale_scales", "scale_code_table"]],
    ["offset", quant.offsetQuantization(), offsetType, ["offset_scales", "offset_code_table"]],
  ];
  for (const [prefix, level, codes, roles] of levels) {
    if (level === null || codes === null) continue;
    const field = `quantization.${prefix}_quantization.`;
    const bad = forbidden(level);
    if (bad !== null) {
      throw c.invalid(field + bad, "present", "a second level has scales, a code table, a tensor scale and a tensor offset only");
    }
    expressed(field, level);
    const levelScale = c.oneOf(field + "scale_type", level.scaleType(), SCALE_TYPES);
    finite(field + "tensor_scale", level.tensorScale());
    finite(field + "tensor_offset", level.tensorOffset());
    const sshape = scaleShape(shape, scheme);
    const selements = empty ? 0n : elements === null ? null : sshape.reduce((a, b) => a * b, 1n);
    const lcount = scaleCount(c, field, sshape, selements, empty, [level.scheme(), BigInt(level.axis()), level.blockSize()]);
    const ltable = codeTable(c, field, roles[1], codes, level.codeTableType());
    tail.set(roles[0], c.nbytes(lcount, levelScale, roles[0]));
    if (ltable !== null) tail.set(roles[1], ltable);
  }
  // Wire order.
  for (const role of TAIL_ROLES) if (tail.has(role)) out.tail.set(role, tail.get(role)!);
  return out;
}

function codeTable(c: Checks, prefix: string, role: string, codeType: ElementTypeFacts, v: number): bigint | null {
  if (v === 0) return null;
  const t = c.oneOf(prefix + "code_table_type", v, CODE_TABLE_TYPES);
  if (codeType.kind !== "uint" || codeType.bits > 8) {
    throw c.invalid(prefix + "code_table_type", t.name, `a code table indexes unsigned codes of at most 8 bits, not ${codeType.name}`);
  }
  return c.nbytes(1n << BigInt(codeType.bits), t, role);
}

/** (scheme, axis, block size). */
type Scheme = [number, bigint, bigint];

function scaleCount(c: Checks, prefix: string, shape: bigint[], elements: bigint | null, empty: boolean, scheme: Scheme): bigint {
  const [kind, axis, block] = scheme;
  const rank = BigInt(shape.length);
  const axisDim = (what: string) => {
    if (axis >= rank) throw c.invalid(prefix + "axis", axis, `${what} needs an axis below the rank ${rank}`);
    return shape[Number(axis)];
  };
  let count: bigint | null;
  if (kind === QuantizationScheme.PerTensor) {
    count = 1n;
  } else if (kind === QuantizationScheme.PerFlatBlock) {
    if (block === 0n) throw c.invalid(prefix + "block_size", 0, "per-flat-block quantization needs a block size > 0");
    count = elements === null ? null : ceilDiv(elements, block);
  } else if (kind === QuantizationScheme.PerAxis) {
    const d = axisDim("per-axis quantization");
    count = d === DYNAMIC ? null : d;
  } else if (kind === QuantizationScheme.PerBlock) {
    const d = axisDim("per-block quantization");
    if (block === 0n) throw c.invalid(prefix + "block_size", 0, "per-block quantization needs a block size > 0");
    if (elements === null) count = null;
    else if (d === 0n) count = 0n; // ADR-007 section 8: no blocks, no scales
    else {
      count = (elements / d) * ceilDiv(d, block);
      if (count > U64_MAX) count = null;
    }
  } else if (kind === 0) {
    throw c.invalid(prefix + "scheme", "Invalid (0)", "a quantization names its scheme");
  } else {
    throw new HurrayError(
      "UnsupportedQuantization",
      `tensor '${c.name}': quantization scheme ${kind} is not supported by this reader`,
      c.name,
      prefix + "scheme",
    );
  }
  return empty || count === null ? 0n : count;
}

/** The shape of the scale array of `scheme` over `shape`. */
function scaleShape(shape: bigint[], scheme: Scheme): bigint[] {
  const [kind, axis, block] = scheme;
  if (kind === QuantizationScheme.PerAxis) return [shape[Number(axis)]];
  if (kind === QuantizationScheme.PerFlatBlock) return [ceilDiv(shape.reduce((a, b) => a * b, 1n), block)];
  if (kind === QuantizationScheme.PerBlock) {
    const out = [...shape];
    out[Number(axis)] = ceilDiv(out[Number(axis)], block);
    return out;
  }
  return [];
}

function blockFormat(
  c: Checks,
  et: ElementTypeFacts,
  shape: bigint[],
  elements: bigint | null,
  quant: Quantization,
  layoutName: string,
): Lengths {
  const v = quant.blockFormat();
  const format = BLOCK_FORMATS.get(v);
  if (format === undefined) throw c.invalid("quantization.block_format", v, "not a block format this reader knows");
  const [fname, per, size] = format;
  const refuse = (field: string, value: unknown, reason: string) => c.invalid(field, value, `${fname}: ${reason}`);
  if (et.name !== "u8") throw refuse("element_type", et.name, "the blocks are stored as u8");
  if (layoutName !== "dense") throw refuse("layout", layoutName, "the blocks are dense and contiguous");
  const rank = shape.length;
  if (!(quant.scheme() === QuantizationScheme.PerBlock && rank >= 1 && BigInt(quant.axis()) === BigInt(rank - 1) && quant.blockSize() === per)) {
    throw refuse("quantization.block_size", quant.blockSize(), `per block of ${per} along the last axis`);
  }
  const field = compositeField(quant);
  for (const other of ["code_table_type", "scale_quantization", "offset_quantization", "tensor_offset", "group_index_type"]) {
    if (field !== null && field[0] === other) throw refuse(`quantization.${other}`, "present", "nothing else is set");
  }
  if (quant.zeroPointType() !== 0 || quant.offsetType() !== 0 || quant.tensorScale() !== 1) {
    throw refuse(
      "quantization.zero_point_type",
      quant.zeroPointType(),
      "the blocks hold their own scales: no zero points, offsets or tensor scale",
    );
  }
  const t = c.elementType("quantization.expressed_type", quant.expressedType());
  if (t.kind !== "float") throw c.invalid("quantization.expressed_type", t.name, "the expressed type is a floating-point type");
  const d = shape[rank - 1];
  if (d !== DYNAMIC && d % per !== 0n) throw refuse(`shape[${rank - 1}]`, d, `rows are whole blocks of ${per}`);
  return { scales: 0n, zeroPoints: 0n, offsets: null, tail: new Map(), blockValues: ((elements ?? 0n) / per) * size };
}
