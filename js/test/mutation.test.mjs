// Hostile input: thousands of truncated and mutated copies of the valid
// vectors. Each either opens (a mutation that leaves a valid file, e.g. in
// tensor data) or throws HurrayError; nothing else is thrown, nothing
// hangs, and the reader's last-resort conversion of an unexpected
// exception (`guarded`) never fires: every failure is a check's own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openFile, HurrayError } from "../dist/index.js";

const dir = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const index = JSON.parse(readFileSync(dir + "index.json", "utf8"));
const valid = index.vectors.filter((v) => v.valid).map((v) => new Uint8Array(readFileSync(dir + v.name + ".hurray")));

// A small deterministic generator (xorshift32), so a failure reproduces.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

function readAll(bytes) {
  try {
    const f = openFile(bytes);
    f.validate();
    for (const d of f.tensors) {
      const t = f.tensor(d.name);
      if (d.layout === "dense" || d.layout === "strided") t.data;
      for (const role of d.buffers.keys()) t.buffer(role);
    }
    return "ok";
  } catch (e) {
    assert.ok(e instanceof HurrayError, `${e?.stack ?? e}`);
    assert.ok(!e.message.startsWith("InvalidHeader: the header could not be read"), e.message);
    return e.variant;
  }
}

test("every truncation of every valid vector is refused", () => {
  let refused = 0;
  for (const bytes of valid) {
    for (let n = 0; n < bytes.length; n += Math.max(1, bytes.length >> 6)) {
      assert.notEqual(readAll(bytes.subarray(0, n)), "ok", `a ${n}-byte prefix opened`);
      refused++;
    }
  }
  assert.ok(refused > 1000, `${refused}`);
});

test("thousands of mutated files throw HurrayError only", () => {
  const next = rng(0x48525259);
  const variants = new Map();
  let runs = 0;
  for (let round = 0; round < 60; round++) {
    for (const original of valid) {
      const bytes = original.slice();
      // Mutate the header and footer mostly: that is where the checks are.
      const mutations = 1 + (next() % 4);
      for (let m = 0; m < mutations; m++) {
        const tail = Math.min(bytes.length, 512);
        const at = next() % 4 === 0 ? next() % bytes.length : bytes.length - 1 - (next() % tail);
        switch (next() % 3) {
          case 0:
            bytes[at] ^= 1 << (next() % 8);
            break;
          case 1:
            bytes[at] = next() & 0xff;
            break;
          default:
            bytes[at] = [0, 0xff, 0x7f, 0x80][next() % 4];
        }
      }
      const outcome = readAll(bytes);
      variants.set(outcome, (variants.get(outcome) ?? 0) + 1);
      runs++;
    }
  }
  assert.ok(runs >= 3000, `${runs} runs`);
  // The mutations reach past the first checks: several kinds of refusal.
  assert.ok(variants.size >= 8, JSON.stringify([...variants]));
  if (process.env.HURRAY_FUZZ_REPORT) console.log([...variants]);
});
