// What the request timeline shows: one row per request from the page's own history while the
// run is small and no window is picked; else the server's view of a window
// (GET /api/sessions/{id}/timeline): rows when it holds few enough requests, else the density
// of requests by state over time, stacked. Pure functions, tested with node --test.

export const ROW_LIMIT = 200; // above this many requests, a row each is a grey staircase
// The span kinds of state/history.js; the route's answer names them too (`states`), in the
// order they stack. waiting_for_kv: a P/D decode replica's requests admitted with their remote
// KV in flight (api/reports/timeline.py STATES).
export const STATES = ["waiting", "waiting_for_kv", "prefill", "decode", "stalled", "preempted"];
// States only some engines have (a P/D decode replica): the legend names them when a window holds some.
const OPTIONAL_STATES = new Set(["waiting_for_kv"]);

/** The states a density's legend names: every one of `states`, but an optional one only where
 * its column has some requests. */
export function legendStates(columns, states = STATES) {
  return states.filter((s) => !OPTIONAL_STATES.has(s) || (columns?.[s] ?? []).some((v) => v > 0));
}

/** "live" (rows from the page's history), "rows" (the server's rows of a window) or
 * "density". `numRequests`: the run's requests; `answer`: the server's timeline, or null. */
export function timelineMode(numRequests, window, answer) {
  if (!window && numRequests <= ROW_LIMIT) return "live";
  if (answer?.rows) return "rows";
  return "density";
}

/** The run's number of requests as the page knows it: the init's count (the request list may
 * still be filling up) or the requests seen so far, whichever is larger. */
export function requestCount(pane) {
  return Math.max(pane?.init?.num_requests ?? 0, pane?.init?.requests?.length ?? 0,
    pane?.run?.ids?.length ?? 0);
}

/** Per bin, the bottom and top of each state's band, stacked in `states` order (null where no
 * step ran), and the largest total: what the density view draws. */
export function stackDensity(columns, states = STATES) {
  const n = columns?.t_s?.length ?? 0;
  const stacks = [];
  let max = 0;
  for (let b = 0; b < n; b++) {
    if (columns[states[0]][b] == null) {
      stacks.push(null);
      continue;
    }
    let y = 0;
    const bands = states.map((s) => {
      const lo = y;
      y += Math.max(0, columns[s][b] ?? 0);
      return [lo, y];
    });
    if (y > max) max = y;
    stacks.push(bands);
  }
  return { stacks, max };
}

/** The server's rows as the timeline painter reads a history: row ids in order, spans by id,
 * the window's start, each request's colour index, and `fixed` (they never change). */
export function rowsHistory(answer) {
  const spans = new Map();
  const index = new Map();
  for (const row of answer.rows ?? []) {
    spans.set(row.id, row.spans.map(([kind, t0, t1]) => ({ kind, t0_s: t0, t1_s: t1 })));
    if (row.index != null) index.set(row.id, row.index);
  }
  return { spanIds: [...spans.keys()], spans, index, t0_s: answer.start_s, t1_s: answer.end_s, fixed: true };
}

/** The window between two canvas x positions on a layout mapping time to x (`tOf`); null when
 * the drag is too short to mean a window (a click). */
export function dragWindow(layout, x0, x1, minPx = 4) {
  if (!layout?.tOf || Math.abs(x1 - x0) < minPx) return null;
  const [a, b] = x0 <= x1 ? [x0, x1] : [x1, x0];
  const start = Math.max(layout.t0, layout.tOf(Math.max(a, layout.labelW)));
  const end = Math.min(layout.t1, layout.tOf(b));
  return end > start ? { start_s: start, end_s: end } : null;
}

/** The query of the timeline route for a window (null: the whole run) and a width in bins. */
export function timelineQuery(window, bins, engine = 0) {
  const q = new URLSearchParams({ engine: String(engine), bins: String(bins), max_rows: String(ROW_LIMIT) });
  if (window) {
    q.set("start_s", String(window.start_s));
    q.set("end_s", String(window.end_s));
  }
  return q.toString();
}
