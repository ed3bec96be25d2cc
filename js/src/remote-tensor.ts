// A tensor of a file behind a URL: its descriptor, and its bytes on demand.

import { typedArray, type TensorData } from "./data.js";
import { spanOf, type TensorDescriptor } from "./header.js";

/** A tensor of a remote file. */
export class RemoteTensor {
  constructor(
    readonly descriptor: TensorDescriptor,
    /** `length` bytes at `offset` of the file, by one range request. */
    private readonly range: (offset: number, length: number) => Promise<Uint8Array>,
  ) {}

  get name(): string {
    return this.descriptor.name;
  }

  /**
   * The tensor's values, fetched with one range request, as the typed array
   * `HurrayFile.tensor(name).data` gives; `null` for a descriptor-only
   * tensor, and no request for an empty one.
   */
  async read(): Promise<TensorData | null> {
    if (this.descriptor.descriptorOnly) return null;
    return typedArray(this.descriptor, await this.buffer("values"));
  }

  /** The bytes of one buffer, with one range request (none when empty). */
  async buffer(role: string): Promise<Uint8Array> {
    const span = spanOf(this.descriptor, role);
    if (span.length === 0) return new Uint8Array(0);
    return this.range(span.offset, span.length);
  }
}
