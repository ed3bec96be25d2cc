// What a verified header lists, whichever way the file was reached: the
// part a file in memory (file.ts) and a file behind a URL (remote.ts) share.

import { HurrayError } from "./errors.js";
import type { Contents, TensorDescriptor } from "./header.js";

/** A verified file's version, metadata and tensors. */
export class Listing {
  /** `"1.5"`: the format version the file declares. */
  readonly version: string;
  /** File-wide metadata. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The file's identity (format 1.5) in hexadecimal, or null. */
  readonly fileId: string | null;
  /** Whether this is a sharded checkpoint's index (which holds no tensors). */
  readonly isShardIndex: boolean;
  /** Every tensor's descriptor, sorted by name. */
  readonly tensors: readonly TensorDescriptor[];
  private readonly byName: Map<string, TensorDescriptor>;

  protected constructor(contents: Contents) {
    this.version = contents.version;
    this.metadata = contents.metadata;
    this.fileId = contents.fileId;
    this.isShardIndex = contents.isShardIndex;
    this.tensors = contents.tensors;
    this.byName = new Map(contents.tensors.map((t) => [t.name, t]));
  }

  /** The descriptor of tensor `name`; `HurrayError` (`NoSuchTensor`) if there is none. */
  descriptor(name: string): TensorDescriptor {
    const d = this.byName.get(name);
    if (d === undefined) throw new HurrayError("NoSuchTensor", `no tensor '${name}' in the file`, name);
    return d;
  }
}
