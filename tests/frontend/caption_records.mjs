// Folds a JSONL stream (first line the init, then StepRecord.to_dict() lines) through the page's
// reducer and prints the caption the page shows at each record: one JSON array of strings.
import fs from "node:fs";
import { caption } from "../../frontend/static/js/state/caption.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";

const lines = fs.readFileSync(0, "utf8").trim().split("\n");
const run = createRun(JSON.parse(lines[0]));
const out = [];
for (let i = 1; i < lines.length; i++) {
  const rec = JSON.parse(lines[i]);
  applyRecord(run, rec);
  out.push(caption(run, rec));
}
process.stdout.write(JSON.stringify(out));
