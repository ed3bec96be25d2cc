// openUrl against a local HTTP server that answers range requests as
// object stores and nginx do (single ranges, suffix ranges, multipart
// byteranges), counting the requests.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openFile, openUrl, HurrayError } from "../dist/index.js";

const dir = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const load = (name) => new Uint8Array(readFileSync(dir + name + ".hurray"));

/** A server of `files` (path -> bytes); `ranges: false` ignores Range headers. */
async function serve(files, { ranges = true, multipart = true } = {}) {
  const log = [];
  const server = createServer((req, res) => {
    const body = files[req.url];
    log.push(req.headers.range ?? "(whole)");
    if (body === undefined) return res.writeHead(404).end();
    let range = ranges ? req.headers.range : undefined;
    // As S3: a multi-range request is answered with the whole object.
    if (!multipart && range?.includes(",")) range = undefined;
    if (range === undefined) return res.writeHead(200, { "Content-Length": body.length }).end(body);
    const parts = range.slice("bytes=".length).split(",").map((r) => {
      const [a, b] = r.trim().split("-");
      if (a === "") return [Math.max(0, body.length - Number(b)), body.length - 1];
      return [Number(a), Math.min(b === "" ? body.length - 1 : Number(b), body.length - 1)];
    });
    if (parts.some(([a, b]) => a > b || a >= body.length)) {
      return res.writeHead(416, { "Content-Range": `bytes */${body.length}` }).end();
    }
    if (parts.length === 1) {
      const [a, b] = parts[0];
      res.writeHead(206, { "Content-Range": `bytes ${a}-${b}/${body.length}`, "Content-Length": b - a + 1 });
      return res.end(body.subarray(a, b + 1));
    }
    const boundary = "hurray-test-boundary";
    const chunks = [];
    for (const [a, b] of parts) {
      chunks.push(Buffer.from(`\r\n--${boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${a}-${b}/${body.length}\r\n\r\n`));
      chunks.push(body.subarray(a, b + 1));
    }
    chunks.push(Buffer.from(`\r\n--${boundary}--\r\n`));
    res.writeHead(206, { "Content-Type": `multipart/byteranges; boundary=${boundary}` });
    res.end(Buffer.concat(chunks));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, log, close: () => new Promise((r) => server.close(r)) };
}

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

async function sameAsLocal(remote, bytes, log) {
  const local = openFile(bytes);
  assert.deepEqual(remote.tensors, local.tensors);
  assert.deepEqual({ ...remote.metadata }, { ...local.metadata });
  for (const d of local.tensors) {
    if (d.layout !== "dense" && d.layout !== "strided") continue;
    const before = log.length;
    const data = await remote.tensor(d.name).read();
    const want = local.tensor(d.name).data;
    if (want === null) {
      assert.equal(data, null);
      assert.equal(log.length, before, "no request for a tensor without data");
      continue;
    }
    assert.equal(data.constructor, want.constructor);
    assert.equal(hex(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)), hex(new Uint8Array(want.buffer, want.byteOffset, want.byteLength)));
    assert.equal(log.length - before, d.byteLength === 0 ? 0 : 1, `one request to read ${d.name}`);
  }
}

test("a file within the first request's reach lists its tensors from one request", async () => {
  const bytes = load("multi_tensor");
  const s = await serve({ "/m.hurray": bytes });
  try {
    const r = await openUrl(`${s.base}/m.hurray`);
    assert.equal(s.log.length, 1);
    assert.equal(r.version, openFile(bytes).version);
    await sameAsLocal(r, bytes, s.log);
  } finally {
    await s.close();
  }
});

test("the prefix takes a second request; the header within the suffix", async () => {
  const bytes = load("alignment_4096");
  const s = await serve({ "/a.hurray": bytes });
  try {
    const r = await openUrl(`${s.base}/a.hurray`, { suffixBytes: 1024 });
    assert.deepEqual(s.log, ["bytes=-1024", "bytes=0-63"]);
    await sameAsLocal(r, bytes, s.log);
  } finally {
    await s.close();
  }
});

test("a header longer than the suffix: prefix and header start in one multipart request", async () => {
  for (const name of ["multi_tensor", "quant_block_formats", "descriptor_only"]) {
    const bytes = load(name);
    const s = await serve({ "/h.hurray": bytes });
    try {
      const r = await openUrl(`${s.base}/h.hurray`, { suffixBytes: 40 });
      assert.equal(s.log.length, 2, s.log.join(" | "));
      assert.match(s.log[1], /^bytes=0-(63,\d+-\d+|\d+)$/);
      await sameAsLocal(r, bytes, s.log);
    } finally {
      await s.close();
    }
  }
});

test("a server without multi-range replies: the header's start asked for alone, never the whole file", async () => {
  const bytes = load("multi_tensor");
  const s = await serve({ "/h.hurray": bytes }, { multipart: false });
  try {
    const r = await openUrl(`${s.base}/h.hurray`, { suffixBytes: 40 });
    assert.equal(s.log.length, 4, s.log.join(" | "));
    assert.match(s.log[1], /,/);
    assert.deepEqual(s.log.slice(2, 3), ["bytes=0-63"]);
    await sameAsLocal(r, bytes, s.log);
  } finally {
    await s.close();
  }
});

test("a server that ignores ranges still works (whole file, one request)", async () => {
  const bytes = load("layout_dense");
  const s = await serve({ "/d.hurray": bytes }, { ranges: false });
  try {
    const r = await openUrl(`${s.base}/d.hurray`, { suffixBytes: 64 });
    assert.equal(s.log.length, 1);
    assert.deepEqual(r.tensors.map((t) => t.name), ["a", "b"]);
  } finally {
    await s.close();
  }
});

test("bad and missing remote files throw HurrayError", async () => {
  const good = load("layout_dense");
  const truncated = good.subarray(0, good.length - 16);
  const s = await serve({ "/t.hurray": truncated, "/tiny.hurray": good.subarray(0, 40) });
  try {
    for (const [path, variant] of [["/t.hurray", "BadFooterMagic"], ["/tiny.hurray", "TooShort"], ["/none.hurray", "Io"]]) {
      await assert.rejects(openUrl(`${s.base}${path}`, { suffixBytes: 64 }), (e) => e instanceof HurrayError && e.variant === variant);
    }
    await assert.rejects(openUrl("http://127.0.0.1:9/x.hurray"), (e) => e instanceof HurrayError && e.variant === "Io");
  } finally {
    await s.close();
  }
});
