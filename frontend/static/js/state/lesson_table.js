// The compare view's lesson table (throughput, mean TTFT, P99 ITL, KV waste per pane) and the
// line under it that says what the figures stand on: while the runs play they cover only what
// each run has done by the cursor (a slow mode's first few requests can make it look fast), so
// each row says how many requests it has seen finish, and no ranking is given until every run
// has ended and its row is the server's whole-run summary.

import { lessonRow } from "./select.js";

/** Whether `pane` shows the last record of its finished run (its summary is the whole run's). */
function atEnd(pane) {
  const last = (pane.init.num_records ?? 0) - 1;
  return pane.status === "done" && !!pane.summary && pane.run.record?.iter === last;
}

/** A pane's row: at the end of a finished run the server's summary of the whole run (the
 * records a viewer folded may have skipped some, after a keyframe), else the live figures at
 * the cursor. `whole`: the row is the whole run's; `num_requests`: the session's. */
export function tableRow(pane) {
  const live = lessonRow(pane.run, pane.history);
  const num_requests = pane.init.num_requests ?? pane.init.requests?.length ?? null;
  if (!atEnd(pane)) return { ...live, num_requests, whole: false };
  const s = pane.summary;
  return { output_throughput: s.output_throughput, mean_ttft_ms: s.mean_ttft_ms,
    p99_itl_ms: s.p99_itl_ms, kv_waste_pct: live.kv_waste_pct, num_finished: s.completed ?? live.num_finished,
    num_first_tokens: s.completed ?? live.num_first_tokens, num_requests, whole: true };
}

/** The row's "finished" cell: how many of the workload's requests its figures have seen end. */
export function finishedCell(row) {
  const n = row.num_finished ?? 0;
  return row.num_requests == null ? String(n) : `${n} of ${row.num_requests}`;
}

/** The line under the table: what its rows stand on now (`rows`: tableRow of each pane). */
export function tableNote(rows) {
  if (rows.length === 0) return "";
  if (rows.every((r) => r.whole)) {
    return "Whole runs: each row is its engine's summary over every request it finished.";
  }
  const least = Math.min(...rows.map((r) => r.num_finished ?? 0));
  return `So far (as few as ${least} finished): a slow mode can look fast early. ` +
    "No ranking until every run has ended.";
}
