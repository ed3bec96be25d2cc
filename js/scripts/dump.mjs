// `node js/scripts/dump.mjs FILE...`: what the TypeScript reader reads of
// each file, as JSON on stdout (shapes as numbers, null for a dynamic
// dimension; each dense tensor's data as hex, its typed array's name, and
// whether it views the input's memory). The Python suite compares this
// with `hurray inspect --json` and the Rust reader, and the viewer's report
// (`report`) with `hurray view`'s (test_javascript.py).
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { openFile, HurrayError } from "../dist/index.js";
import { reportOf } from "../dist/viewer/model.js";

const out = [];
for (const path of process.argv.slice(2)) {
  const bytes = new Uint8Array(readFileSync(path));
  try {
    const f = openFile(bytes);
    out.push({
      path,
      version: f.version,
      metadata: f.metadata,
      report: reportOf(basename(path), f, bytes.length),
      tensors: f.tensors.map((d) => {
        const t = f.tensor(d.name);
        const data = d.layout === "dense" || d.layout === "strided" ? t.data : undefined;
        return {
          name: d.name,
          dtype: d.dtype,
          shape: d.shape.map((x) => (typeof x === "bigint" ? x.toString() : x)),
          layout: d.layout,
          byteLength: d.byteLength,
          descriptorOnly: d.descriptorOnly,
          quantization: d.quantization,
          array: data ? data.constructor.name : null,
          hex: data ? Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("hex") : null,
          view: data ? data.buffer === bytes.buffer : null,
        };
      }),
    });
  } catch (e) {
    if (!(e instanceof HurrayError)) throw e;
    out.push({ path, error: { variant: e.variant, tensor: e.tensor, field: e.field, message: e.message } });
  }
}
process.stdout.write(JSON.stringify(out));
