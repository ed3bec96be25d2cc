// One tensor of a file in memory: its descriptor, and its bytes in place.

import { typedArray, type TensorData } from "./data.js";
import { spanOf, type TensorDescriptor } from "./header.js";

/** One tensor of a file in memory: its descriptor, and its bytes in place. */
export class Tensor {
  constructor(
    /** Everything the header says of it. */
    readonly descriptor: TensorDescriptor,
    private readonly bytes: Uint8Array,
  ) {}

  get name(): string {
    return this.descriptor.name;
  }

  /**
   * The values, without a copy: for a dense tensor of a byte-aligned type
   * with a typed array, that array over the input's ArrayBuffer (`f16` is a
   * `Float16Array` where the engine has one, else `Uint16Array`; `bf16` a
   * `Uint16Array`; `i64`/`u64` `BigInt64Array`/`BigUint64Array`); for any
   * other element type (sub-byte, 8-bit floats, complex, `bool`) or a block
   * format, the stored bytes as a `Uint8Array`. A quantized tensor's data
   * are its stored codes; a strided tensor's, its stored elements. `null` for
   * a descriptor-only tensor. A sparse tensor throws: read `buffer(role)`.
   */
  get data(): TensorData | null {
    if (this.descriptor.descriptorOnly) return null;
    return typedArray(this.descriptor, this.buffer("values"));
  }

  /** The bytes of one buffer (`values`, `indices`, `scales`, ...), in place. */
  buffer(role: string): Uint8Array {
    const span = spanOf(this.descriptor, role);
    return this.bytes.subarray(span.offset, span.offset + span.length);
  }
}
