// A small client of the Chrome DevTools Protocol over
// `--remote-debugging-pipe` (fd 3 to the browser, fd 4 from it, one JSON
// message per NUL-terminated frame): enough to drive headless Chromium in
// the viewer's test without a browser-automation package.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Debian's headless Chromium, or the full browser. */
export function chromiumPath() {
  for (const p of ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium", "/usr/lib/chromium/chromium-headless-shell"]) {
    if (existsSync(p)) return p;
  }
  return null;
}

export async function launch() {
  const exe = chromiumPath();
  if (exe === null) throw new Error("no Chromium: `cargo xtask setup` installs chromium-headless-shell");
  const profile = mkdtempSync(join(tmpdir(), "hurray-cdp-"));
  const child = spawn(
    exe,
    ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", `--user-data-dir=${profile}`, "about:blank"],
    // Its own process group, so that closing ends its helpers too.
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true },
  );
  const [toBrowser, fromBrowser] = [child.stdio[3], child.stdio[4]];
  let next = 1;
  const pending = new Map();
  const listeners = [];
  let buffered = "";
  fromBrowser.on("data", (chunk) => {
    buffered += chunk.toString("utf8");
    let end;
    while ((end = buffered.indexOf("\0")) >= 0) {
      const message = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined && pending.has(message.id)) {
        const { resolve, reject } = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message} (${JSON.stringify(message.error)})`));
        else resolve(message.result);
      } else {
        for (const l of listeners) l(message);
      }
    }
  });
  const send = (method, params = {}, sessionId = undefined) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
    });
  return {
    send,
    /** Calls `f(message)` for every event. */
    on: (f) => listeners.push(f),
    /** A page: its session's send, and the events of its session. */
    async page() {
      const { targetId } = await send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
      const events = [];
      listeners.push((m) => m.sessionId === sessionId && events.push(m));
      return { send: (method, params) => send(method, params, sessionId), events };
    },
    async close() {
      const exited = new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      send("Browser.close").catch(() => {});
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // The group has already exited.
      }
      await exited;
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}
