// Folds a JSONL stream (first line the init, then StepRecord.to_dict() lines) through the page's
// reducer and prints, per record, the blocks the page shows as held: one JSON array.
import fs from "node:fs";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";

const lines = fs.readFileSync(0, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const run = createRun(lines[0]);
const held = [];
for (const rec of lines.slice(1)) {
  applyRecord(run, rec);
  let n = 0;
  for (let b = 0; b < run.numBlocks; b++) if (run.owner[b] >= 0 && run.ref[b] > 0) n += 1;
  held.push(n);
}
process.stdout.write(JSON.stringify(held));
