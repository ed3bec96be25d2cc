// The compliance vectors (tests/vectors, docs/impl/compliance.md): every
// valid file reads with the descriptors and bytes its JSON gives; every
// invalid one throws HurrayError with the variant, tensor and field the
// reference reader reports, at the stage it reports it (opening, or the
// sparse checks of validate()).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openFile, HurrayError } from "../dist/index.js";

const dir = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const index = JSON.parse(readFileSync(dir + "index.json", "utf8"));
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

test("the index lists every vector", () => {
  assert.ok(index.vectors.length > 100);
});

for (const v of index.vectors) {
  const expected = JSON.parse(readFileSync(dir + v.name + ".json", "utf8"));
  const bytes = new Uint8Array(readFileSync(dir + expected.file));
  if (v.valid) {
    test(`valid: ${v.name}`, () => {
      const f = openFile(bytes);
      f.validate();
      assert.deepEqual({ ...f.metadata }, expected.metadata);
      assert.equal(f.fileId, expected.file_id ?? null);
      assert.deepEqual(f.tensors.map((t) => t.name), expected.tensors.map((t) => t.name));
      for (const e of expected.tensors) {
        const t = f.tensor(e.name);
        const d = t.descriptor;
        assert.equal(d.dtype, e.dtype);
        assert.equal(d.layout, e.layout);
        assert.deepEqual(d.shape, e.shape.map((x) => (x === "?" ? null : x)));
        assert.equal(d.descriptorOnly, e.descriptor_only);
        assert.equal(d.alignment, e.alignment);
        assert.deepEqual({ ...d.metadata }, e.metadata);
        assert.deepEqual([...d.buffers.keys()], e.buffers.map((b) => b.role));
        for (const b of e.buffers) assert.equal(hex(t.buffer(b.role)), b.hex, `${e.name} ${b.role}`);
        assert.equal(d.byteLength, e.buffers.reduce((n, b) => n + b.length, 0));
        if (e.quantization !== null) {
          assert.equal(d.quantization.scheme, e.quantization.scheme);
          assert.equal(d.quantization.scale_type, e.quantization.scale_type);
        }
        if (d.descriptorOnly) {
          assert.equal(t.data, null);
        } else if (d.layout === "dense" || d.layout === "strided") {
          const data = t.data;
          assert.equal(hex(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)), e.buffers[0].hex);
          // A view of the input: the same memory, not a copy.
          assert.equal(data.buffer, bytes.buffer);
        } else {
          assert.throws(() => t.data, (err) => err instanceof HurrayError && err.variant === "LayoutMismatch");
        }
      }
    });
  } else {
    test(`invalid: ${v.name}`, () => {
      const e = expected.error;
      const run = () => {
        const f = openFile(bytes);
        if (e.stage === "view") f.validate();
        else assert.fail("opened a file the reference reader refuses");
      };
      if (e.stage === "view") {
        const f = openFile(bytes); // opening passes: the index data are read later
        assert.ok(f.tensors.length > 0);
      }
      assert.throws(run, (err) => {
        assert.ok(err instanceof HurrayError, `not a HurrayError: ${err}`);
        assert.equal(err.variant, e.variant, err.message);
        assert.equal(err.tensor, e.tensor ?? null, err.message);
        assert.equal(err.field, e.field ?? null, err.message);
        return true;
      });
    });
  }
}
