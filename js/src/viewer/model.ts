// What `hurray view` reports of a file (cli/src/view/model.rs), computed
// here from the reader so that the report's own script lays it out. Only
// the header is read: no values, so no value statistics.

import type { HurrayFile } from "../file.js";
import type { QuantizationDescriptor, TensorDescriptor } from "../header.js";

export interface Group {
  name: string;
  tensors: number;
  params: number;
  bytes: number;
}

export interface Row {
  name: string;
  dtype: string;
  shape: (number | string)[];
  layout: string;
  quantization: string | null;
  kind: string;
  bytes: number;
  params: number | null;
  checks: string;
  members: string[];
  stats: null;
  stats_note: string | null;
}

export interface Report {
  source: string;
  kind: "file";
  version: string;
  file_bytes: number;
  metadata: [string, string][];
  members: Group[];
  tensors: Row[];
  totals: { all: Group; by_dtype: Group[]; by_layer: Group[] };
  stats: false;
}

/**
 * The layer a tensor belongs to: its name up to the first all-digit
 * component (`model.layers.3`), else without its last component, else the name.
 */
export function layerOf(name: string): string {
  let end = 0;
  for (const part of name.split(".")) {
    end += part.length;
    if (part.length > 0 && /^[0-9]+$/.test(part)) return name.slice(0, end);
    end += 1;
  }
  const dot = name.lastIndexOf(".");
  return dot < 0 ? name : name.slice(0, dot);
}

/** `per_block(axis=1,block=32)`. */
function schemeText(q: QuantizationDescriptor): string {
  const params: string[] = [];
  if (q.axis !== null) params.push(`axis=${q.axis}`);
  if (q.block_size !== null) params.push(`block=${q.block_size}`);
  return params.length === 0 ? q.scheme : `${q.scheme}(${params.join(",")})`;
}

/** `per_axis(axis=1) i8->f32 scale=f32 zp=i8`, as `hurray inspect` writes it. */
export function quantText(stored: string, q: QuantizationDescriptor): string {
  const scheme = schemeText(q);
  if (q.block_format !== undefined) return `${scheme} ${q.block_format} blocks->${q.expressed_type}`;
  let text = `${scheme} ${stored}->${q.expressed_type} scale=${q.scale_type} zp=${q.zero_point_type ?? "none"}`;
  if (q.tensor_scale !== 1) text += ` tensor_scale=${q.tensor_scale}`;
  if (q.offset_type !== null) text += ` offset=${q.offset_type}`;
  if (q.code_table_type !== undefined) text += ` table=${q.code_table_type}`;
  for (const [what, level] of [["scales", q.scale_quantization], ["offsets", q.offset_quantization]] as const) {
    if (level === undefined) continue;
    text += ` ${what}*${schemeText(level)}:${level.scale_type}`;
    if (level.code_table_type !== undefined) text += `:table=${level.code_table_type}`;
    if (level.tensor_scale !== 1) text += `:tensor_scale=${level.tensor_scale}`;
    if (level.tensor_offset !== undefined) text += `:tensor_offset=${level.tensor_offset}`;
  }
  if (q.tensor_offset !== undefined) text += ` tensor_offset=${q.tensor_offset}`;
  if (q.group_index_type !== undefined) text += ` group_index=${q.group_index_type}`;
  return text;
}

function rowOf(t: TensorDescriptor): Row {
  let params: number | null = null;
  if (!t.descriptorOnly) {
    params = 1;
    for (const d of t.shape) params = params === null || d === null ? null : params * Number(d);
  }
  return {
    name: t.name,
    dtype: t.dtype,
    shape: t.shape.map((d) => (d === null ? "?" : Number(d))),
    layout: t.layout,
    quantization: t.quantization === null ? null : quantText(t.dtype, t.quantization),
    kind: t.quantization === null ? t.dtype : `${t.dtype} ${t.quantization.scheme}`,
    bytes: t.byteLength,
    params,
    checks: t.checksums && t.digests ? "crc32c+blake3" : t.checksums ? "crc32c" : t.digests ? "blake3" : "none",
    members: [],
    stats: null,
    stats_note: null,
  };
}

function totals(rows: Row[]): Report["totals"] {
  const all: Group = { name: "all", tensors: 0, params: 0, bytes: 0 };
  const dtypes = new Map<string, Group>();
  const layers = new Map<string, Group>();
  const add = (g: Group, r: Row) => {
    g.tensors += 1;
    g.params += r.params ?? 0;
    g.bytes += r.bytes;
  };
  const group = (m: Map<string, Group>, name: string) => {
    let g = m.get(name);
    if (g === undefined) m.set(name, (g = { name, tensors: 0, params: 0, bytes: 0 }));
    return g;
  };
  for (const r of rows) {
    add(all, r);
    add(group(dtypes, r.kind), r);
    add(group(layers, layerOf(r.name)), r);
  }
  const byteOrder = (a: Group, b: Group) => b.bytes - a.bytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return { all, by_dtype: [...dtypes.values()].sort(byteOrder), by_layer: [...layers.values()].sort(byteOrder) };
}

/** The report of `file` (`fileBytes` long), named `source`. */
export function reportOf(source: string, file: HurrayFile, fileBytes: number): Report {
  const rows = file.tensors.map(rowOf);
  return {
    source,
    kind: "file",
    version: file.version,
    file_bytes: fileBytes,
    metadata: Object.entries(file.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    members: [],
    tensors: rows,
    totals: totals(rows),
    stats: false,
  };
}
