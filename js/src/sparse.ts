// The checks of a sparse tensor's index data, which opening does not read
// (as the reference reader's views check them, and `hurray validate`).

import { HurrayError } from "./errors.js";
import type { TensorDescriptor } from "./header.js";

function integers(bytes: Uint8Array, indexType: string): bigint[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: bigint[] = [];
  if (indexType === "i32") for (let i = 0; i + 4 <= bytes.length; i += 4) out.push(BigInt(view.getInt32(i, true)));
  else for (let i = 0; i + 8 <= bytes.length; i += 8) out.push(view.getBigInt64(i, true));
  return out;
}

/** Throws `InvalidSparseIndex` at the first bad coordinate or pointer of `t`. */
export function checkSparse(t: TensorDescriptor, buffer: (role: string) => Uint8Array): void {
  const s = t.sparse;
  if (s === null || t.descriptorOnly) return;
  const bad = (role: string, position: number, value: bigint, reason: string) =>
    new HurrayError("InvalidSparseIndex", `tensor '${t.name}': ${role}[${position}] = ${value}: ${reason}`, t.name, role);
  const shape = t.shape.map((d) => BigInt(d ?? 0));
  const indices = integers(buffer("indices"), s.indexType);
  if (t.layout === "coo") {
    const rank = shape.length;
    indices.forEach((v, i) => {
      if (v < 0n || v >= shape[i % rank]) throw bad("indices", i, v, "coordinate outside its dimension");
    });
    if (s.canonical) {
      for (let row = 1; row < s.nnz; row++) {
        const at = row * rank;
        let order = 0;
        for (let k = 0; k < rank && order === 0; k++) {
          const [a, b] = [indices[at - rank + k], indices[at + k]];
          order = a < b ? -1 : a > b ? 1 : 0;
        }
        if (order >= 0) throw bad("indices", at, indices[at], "canonical COO coordinates must be sorted and unique");
      }
    }
    return;
  }
  const pointers = integers(buffer("pointers"), s.indexType);
  const minor = t.layout === "csr" ? shape[1] : shape[0];
  let previous = 0n;
  pointers.forEach((v, i) => {
    if (i === 0 && v !== 0n) throw bad("pointers", 0, v, "the first pointer must be 0");
    if (v < previous) throw bad("pointers", i, v, "pointers must not decrease");
    previous = v;
  });
  if (previous !== BigInt(s.nnz)) {
    throw bad("pointers", Math.max(pointers.length - 1, 0), previous, "the last pointer must equal nnz");
  }
  indices.forEach((v, i) => {
    if (v < 0n || v >= minor) throw bad("indices", i, v, "index outside its dimension");
  });
}
