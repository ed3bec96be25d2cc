// The viewer page (js/viewer/index.html): a local file chosen in the page
// is read and verified here, its report computed (./model.ts), and the
// report laid out by `hurray view`'s own script (report.js, beside the
// page), run again over a fresh copy of the report's own markup: the body
// of cli/src/view/report.html, which the bundler includes as text. Nothing
// is sent anywhere: the page's policy allows no connection at all.

import reportPage from "../../../cli/src/view/report.html";
import { HurrayError } from "../errors.js";
import { openFile } from "../file.js";
import { reportOf } from "./model.js";

/** The report page's body, but for its inline script (report.js runs instead). */
function reportMarkup(): Node[] {
  const page = new DOMParser().parseFromString(reportPage, "text/html");
  return Array.from(page.body.children)
    .filter((e) => !(e instanceof HTMLScriptElement) || e.id === "report-data")
    .map((e) => document.importNode(e, true));
}

function show(): void {
  const input = document.getElementById("file") as HTMLInputElement;
  const status = document.getElementById("status")!;
  const root = document.getElementById("report")!;
  input.addEventListener("change", async () => {
    const chosen = input.files?.[0];
    if (chosen === undefined) return;
    status.textContent = `Reading ${chosen.name}...`;
    root.replaceChildren();
    try {
      const bytes = new Uint8Array(await chosen.arrayBuffer());
      const report = reportOf(chosen.name, openFile(bytes), bytes.length);
      root.replaceChildren(...reportMarkup());
      document.getElementById("report-data")!.textContent = JSON.stringify(report);
      const run = document.createElement("script");
      run.src = "report.js";
      run.addEventListener("load", () => {
        status.textContent = "";
        run.remove();
      });
      document.body.appendChild(run);
    } catch (e) {
      status.textContent = e instanceof HurrayError ? `Not a valid Hurray file: ${e.message}` : `Could not read the file: ${String(e)}`;
    }
  });
}

show();
