// Folds a JSONL stream of StepRecord.to_dict() lines through the page's history
// (state/history.js) and prints each request's timeline spans, in row order, as
// {id: [[kind, t0_s, t1_s], ...]}: one JSON object (for tests/frontend/test_timeline_spans.py).
import fs from "node:fs";
import { appendRecord, createHistory } from "../../frontend/static/js/state/history.js";

const text = fs.readFileSync(0, "utf8").trim();
const h = createHistory();
for (const line of text ? text.split("\n") : []) appendRecord(h, JSON.parse(line));
const out = {};
for (const id of h.spanIds) out[id] = h.spans.get(id).map((s) => [s.kind, s.t0_s, s.t1_s]);
process.stdout.write(JSON.stringify(out));
