// The viewer page in headless Chromium: a local file chosen through the
// page's file input is listed whole (every tensor in the report's table,
// the treemap drawn), from a page opened as a file, with no network
// request, no script error and no policy violation; the report's markup is
// report.html's (every element its script fills).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { openFile } from "../dist/index.js";
import { launch } from "./cdp.mjs";

const vectors = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const page = fileURLToPath(new URL("../viewer/index.html", import.meta.url));
const report = fileURLToPath(new URL("../../cli/src/view/report.html", import.meta.url));

const body = readFileSync(report, "utf8");
const reportIds = [...body.slice(body.indexOf("<body>")).matchAll(/ id="([^"]+)"/g)].map((m) => m[1]).sort();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function evaluate(p, expression) {
  const { result, exceptionDetails } = await p.send("Runtime.evaluate", { expression, returnByValue: true });
  if (exceptionDetails) throw new Error(JSON.stringify(exceptionDetails));
  return result.value;
}

async function choose(p, path) {
  const { root } = await p.send("DOM.getDocument");
  const { nodeId } = await p.send("DOM.querySelector", { nodeId: root.nodeId, selector: "#file" });
  await p.send("DOM.setFileInputFiles", { nodeId, files: [path] });
}

async function until(p, expression, what) {
  for (let i = 0; i < 200; i++) {
    if (await evaluate(p, expression)) return;
    await sleep(50);
  }
  const status = await evaluate(p, "document.getElementById('status').textContent");
  throw new Error(`timed out waiting for ${what}; status: ${status}`);
}

test("a chosen local file is listed whole, with nothing sent anywhere", async () => {
  const browser = await launch();
  try {
    const p = await browser.page();
    for (const domain of ["Page", "Runtime", "Network", "Log", "DOM"]) await p.send(`${domain}.enable`);
    await p.send("Page.navigate", { url: pathToFileURL(page).href });
    await until(p, "document.readyState === 'complete'", "the page");
    for (const name of ["multi_tensor", "quant_code_table", "descriptor_only", "layout_csr"]) {
      const path = vectors + name + ".hurray";
      const file = openFile(new Uint8Array(readFileSync(path)));
      await choose(p, path);
      await until(p, `document.querySelectorAll('#tensors tr.row').length === ${file.tensors.length}`, `${name}'s rows`);
      const rows = await evaluate(p, "[...document.querySelectorAll('#tensors tr.row')].map((r) => r.dataset.name)");
      assert.deepEqual([...rows].sort(), file.tensors.map((t) => t.name).sort(), name);
      assert.equal(await evaluate(p, "document.getElementById('title').textContent"), `${name}.hurray`);
      // The report's markup is report.html's: every element report.js fills is there.
      const shown = await evaluate(p, "[...document.querySelectorAll('#report [id]')].map((e) => e.id).sort()");
      assert.deepEqual(reportIds.filter((id) => !shown.includes(id)), [], name);
      const cards = await evaluate(p, "document.querySelector('[data-card=tensors] .value').textContent");
      assert.equal(cards, String(file.tensors.length));
      // The treemap is drawn for a file with bytes.
      if (file.tensors.some((t) => t.byteLength > 0)) {
        assert.ok(await evaluate(p, "document.querySelectorAll('#treemap .cell').length > 0"), name);
      }
    }
    // A file that is not a Hurray file: refused in the page, by the reader.
    await choose(p, fileURLToPath(import.meta.url));
    await until(p, "document.getElementById('status').textContent.startsWith('Not a valid Hurray file')", "the refusal");
    const requests = p.events.filter((e) => e.method === "Network.requestWillBeSent").map((e) => e.params.request.url);
    assert.ok(requests.length > 0, "the page's own files are seen");
    assert.deepEqual(requests.filter((u) => !u.startsWith("file://")), [], "a request left the machine");
    const errors = p.events.filter(
      (e) => e.method === "Runtime.exceptionThrown" || (e.method === "Log.entryAdded" && e.params.entry.level === "error"),
    );
    assert.deepEqual(errors.map((e) => JSON.stringify(e.params)), []);
  } finally {
    await browser.close();
  }
});
