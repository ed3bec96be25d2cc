// A Hurray file in memory: `openFile(bytes)`.

import { guarded, HurrayError } from "./errors.js";
import { FOOTER_LEN, PREFIX_LEN } from "./format.js";
import { locate, readHeader, type Contents } from "./header.js";
import { Listing } from "./listing.js";
import { checkSparse } from "./sparse.js";
import { Tensor } from "./tensor.js";

/** A verified Hurray file in memory. */
export class HurrayFile extends Listing {
  /** @internal Use {@link openFile}. */
  constructor(
    contents: Contents,
    private readonly bytes: Uint8Array,
  ) {
    super(contents);
  }

  /** The tensor called `name`; throws `HurrayError` (`NoSuchTensor`) if there is none. */
  tensor(name: string): Tensor {
    return new Tensor(this.descriptor(name), this.bytes);
  }

  /**
   * What opening does not check, as `hurray validate`: every sparse
   * tensor's coordinates and pointers. Throws `HurrayError` at the first.
   */
  validate(): void {
    for (const d of this.tensors) {
      const t = new Tensor(d, this.bytes);
      checkSparse(d, (role) => t.buffer(role));
    }
  }
}

/**
 * Verifies `bytes`, a whole Hurray file, as the Rust reader does (prefix,
 * footer, the header's structure and every rule that needs no tensor data),
 * and returns it. Tensor data stay in `bytes`: nothing is copied.
 * Throws `HurrayError`, and nothing else, on any invalid input.
 */
export function openFile(bytes: Uint8Array): HurrayFile {
  if (!(bytes instanceof Uint8Array)) throw new HurrayError("InvalidArgument", "openFile takes a Uint8Array");
  const n = bytes.length;
  if (n < PREFIX_LEN + FOOTER_LEN) {
    throw new HurrayError("TooShort", `file is ${n} bytes, shorter than the ${PREFIX_LEN + FOOTER_LEN} bytes of an empty Hurray file`);
  }
  const located = locate(bytes.subarray(0, PREFIX_LEN), bytes.subarray(n - FOOTER_LEN), n);
  const header = bytes.subarray(located.headerOffset, located.headerOffset + located.headerLength);
  return new HurrayFile(guarded(() => readHeader(header, located)), bytes);
}
