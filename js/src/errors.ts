/**
 * The reader's one error type.
 *
 * `variant` is the name of the Rust `hurray::Error` variant the reference
 * reader reports for the same input (`BadMagic`, `BufferOutOfBounds`, ...),
 * so the compliance vectors' expectations compare across languages; `tensor`
 * and `field` name what is at fault where one is.
 */
export class HurrayError extends Error {
  readonly variant: string;
  readonly tensor: string | null;
  readonly field: string | null;

  constructor(variant: string, message: string, tensor: string | null = null, field: string | null = null) {
    super(`${variant}: ${message}`);
    this.name = "HurrayError";
    this.variant = variant;
    this.tensor = tensor;
    this.field = field;
  }
}

/** A malformed header (FlatBuffers structure). */
export function invalidHeader(message: string): HurrayError {
  return new HurrayError("InvalidHeader", message);
}

/**
 * Runs `read`, turning anything but a `HurrayError` into one: the checks
 * come before every access, so another exception would be a reader bug,
 * and the caller is still owed the one error type.
 */
export function guarded<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof HurrayError) throw e;
    throw new HurrayError("InvalidHeader", `the header could not be read: ${String(e)}`);
  }
}
