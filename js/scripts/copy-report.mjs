// `npm run build`'s last step: the viewer page runs `hurray view`'s own
// report script and style, copied beside it from the CLI, where they are
// the single source.
import { copyFileSync } from "node:fs";

const from = new URL("../../cli/src/view/", import.meta.url);
const to = new URL("../viewer/", import.meta.url);
for (const name of ["report.js", "report.css"]) copyFileSync(new URL(name, from), new URL(name, to));
