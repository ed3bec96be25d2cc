// A tensor's bytes as the typed array of its element type.

import { HurrayError } from "./errors.js";
import type { TensorDescriptor } from "./header.js";

/** What `.data` and `read()` return. */
export type TensorData =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

type ArrayType = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): TensorData; BYTES_PER_ELEMENT: number };

// Float16Array where the engine has it (it is newer than the others).
const Float16 = (globalThis as unknown as { Float16Array?: ArrayType }).Float16Array;

/** The typed array of each dense byte-aligned type; other types are bytes. */
const ARRAYS: Readonly<Record<string, ArrayType>> = {
  f32: Float32Array,
  f64: Float64Array,
  i8: Int8Array,
  u8: Uint8Array,
  i16: Int16Array,
  u16: Uint16Array,
  i32: Int32Array,
  u32: Uint32Array,
  i64: BigInt64Array,
  u64: BigUint64Array,
  f16: Float16 ?? Uint16Array,
  bf16: Uint16Array,
};

// Typed arrays use the host's byte order; the format is little-endian.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The typed array over `bytes` (a tensor's values buffer) for tensor `t`:
 * a view of the same memory when its offset in its ArrayBuffer is a
 * multiple of the element size, else a copy (an input that is itself an
 * unaligned view). Types without a typed array come back as the bytes.
 */
export function typedArray(t: TensorDescriptor, bytes: Uint8Array): TensorData {
  if (t.layout !== "dense" && t.layout !== "strided") {
    throw new HurrayError(
      "LayoutMismatch",
      `tensor '${t.name}' has layout ${t.layout}: its data are its buffers (${[...t.buffers.keys()].join(", ")}); read them with buffer(role)`,
      t.name,
      "layout",
    );
  }
  const array = t.quantization?.block_format ? undefined : ARRAYS[t.dtype];
  if (array === undefined || array === Uint8Array) return bytes;
  if (!LITTLE_ENDIAN) {
    throw new HurrayError("NotRepresentable", `tensor '${t.name}': this engine is big-endian, the file little-endian; read buffer('values')`, t.name);
  }
  const size = array.BYTES_PER_ELEMENT;
  const source = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  return new array(source.buffer, source.byteOffset, source.byteLength / size);
}
