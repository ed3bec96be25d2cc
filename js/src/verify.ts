// Structural verification of the FlatBuffers header before any accessor
// runs. The FlatBuffers TypeScript runtime follows whatever offsets it finds;
// this walk checks each one it would follow lies inside the header and is
// aligned for its scalar, that strings are UTF-8 and NUL-terminated, that
// required fields are present and that a union's type and value come
// together. Its limits are the Rust reader's (runtime/src/limits.rs: depth
// 16, at most one table per 4 header bytes, an apparent-size cap). The
// tables it walks are generated from the schema (gen/structure.ts).

import { invalidHeader } from "./errors.js";
import { MAX_DEPTH } from "./format.js";
import { ROOT_TABLE, TABLES, type FieldShape } from "./gen/structure.js";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

class Walk {
  private readonly view: DataView;
  private depth = 0;
  private tables = 0;
  private readonly maxTables: number;
  private apparent = 0;
  private readonly maxApparent: number;

  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.maxTables = Math.floor(buf.length / 4) + 1;
    this.maxApparent = Math.max(buf.length * 2, 1 << 16);
  }

  private range(pos: number, size: number): void {
    if (pos < 0 || size < 0 || pos + size > this.buf.length) {
      throw invalidHeader(`range [${pos}, ${pos + size}) is outside the ${this.buf.length}-byte header`);
    }
    this.apparent += size;
    if (this.apparent > this.maxApparent) throw invalidHeader("apparent size too large");
  }

  private scalar(pos: number, size: number): void {
    if (pos % size !== 0) throw invalidHeader(`unaligned ${size}-byte scalar at ${pos}`);
    this.range(pos, size);
  }

  private u16(pos: number): number {
    this.scalar(pos, 2);
    return this.view.getUint16(pos, true);
  }

  private u32(pos: number): number {
    this.scalar(pos, 4);
    return this.view.getUint32(pos, true);
  }

  /** The position an unsigned offset at `pos` points to. */
  follow(pos: number): number {
    return pos + this.u32(pos);
  }

  private vector(pos: number, elemSize: number, elemAlign: number): [number, number] {
    const n = this.u32(pos);
    const start = pos + 4;
    if (start % elemAlign !== 0) throw invalidHeader(`unaligned vector at ${pos}`);
    this.range(start, n * elemSize);
    return [start, n];
  }

  private string(pos: number): void {
    const [start, n] = this.vector(pos, 1, 1);
    try {
      UTF8.decode(this.buf.subarray(start, start + n));
    } catch {
      throw invalidHeader(`string at ${pos} is not UTF-8`);
    }
    if (start + n >= this.buf.length || this.buf[start + n] !== 0) {
      throw invalidHeader(`string at ${pos} lacks its NUL terminator`);
    }
  }

  table(pos: number, name: string): void {
    const fields: readonly FieldShape[] | undefined = TABLES[name];
    if (fields === undefined) throw invalidHeader(`no table ${name} in the schema`);
    this.scalar(pos, 4);
    const vt = pos - this.view.getInt32(pos, true);
    if (vt < 0 || vt >= this.buf.length) throw invalidHeader(`vtable of the table at ${pos} is outside the header`);
    const vtLen = this.u16(vt);
    if ((vt + vtLen) % 2 !== 0) throw invalidHeader(`odd vtable length at ${vt}`);
    this.range(vt, vtLen);
    this.tables += 1;
    if (this.tables > this.maxTables) throw invalidHeader("too many tables");
    this.depth += 1;
    if (this.depth > MAX_DEPTH) throw invalidHeader("depth limit reached");
    const field = (offset: number): number | null => {
      if (offset < vtLen) {
        const off = this.u16(vt + offset);
        if (off > 0) return pos + off;
      }
      return null;
    };
    for (const f of fields) {
      const at = field(f.offset);
      const holds = f.holds;
      if (holds.kind === "union") {
        const typeAt = field(holds.typeOffset);
        if (typeAt === null && at === null) {
          if (f.required) throw invalidHeader(`${name}: required field ${f.name} is missing`);
          continue;
        }
        if (typeAt === null || at === null) throw invalidHeader(`${name}: union type and value must come together`);
        this.scalar(typeAt, 1);
        const member = holds.members[this.buf[typeAt]];
        // A member this schema does not know is not verified (nor read):
        // the reader reports the tensor's layout as unsupported.
        if (member !== undefined) this.table(this.follow(at), member);
        continue;
      }
      if (at === null) {
        if (f.required) throw invalidHeader(`${name}: required field ${f.name} is missing`);
        continue;
      }
      switch (holds.kind) {
        case "scalar":
          this.scalar(at, holds.size);
          break;
        case "struct":
          this.range(at, holds.size);
          break;
        case "string":
          this.string(this.follow(at));
          break;
        case "scalars":
          this.vector(this.follow(at), holds.size, holds.size);
          break;
        case "structs":
          this.vector(this.follow(at), holds.size, 1);
          break;
        case "table":
          this.table(this.follow(at), holds.table);
          break;
        case "tables":
        case "strings": {
          const [start, n] = this.vector(this.follow(at), 4, 4);
          for (let i = 0; i < n; i++) {
            const item = this.follow(start + 4 * i);
            if (holds.kind === "tables") this.table(item, holds.table);
            else this.string(item);
          }
          break;
        }
      }
    }
    this.depth -= 1;
  }
}

/** Verifies the header bytes; returns the root table's position. */
export function verifyHeader(buf: Uint8Array): number {
  if (buf.length < 8 || buf[4] !== 0x48 || buf[5] !== 0x52 || buf[6] !== 0x52 || buf[7] !== 0x59) {
    throw invalidHeader('missing file_identifier "HRRY"');
  }
  const walk = new Walk(buf);
  const root = walk.follow(0);
  walk.table(root, ROOT_TABLE);
  return root;
}
