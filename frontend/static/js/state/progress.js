// How far a session's background simulation has got (the `progress` message, one entry per
// engine): the record the scrubber can reach, and the words and shading beside it.

/** Fold a progress message into the panes (pane i is engine i), received at `now` (ms). The
 * run's rate is measured from its first progress (a pane is made afresh for each run; progress
 * that goes back in time starts the measure again). */
export function applyProgress(panes, msg, now = performance.now()) {
  panes.forEach((pane, i) => {
    if (msg.computed?.[i] == null) return;
    const time_s = msg.time_s?.[i] ?? 0;
    const prev = pane.progress;
    const since = prev && time_s >= prev.time_s ? prev.since : { at: now, time_s };
    pane.progress = { computed: msg.computed[i], time_s, done: !!msg.done?.[i],
      error: msg.errors?.[i] ?? null, since, at: now,
      reach: msg.reach?.[i] ?? msg.computed[i], reach_s: msg.reach_s?.[i] ?? time_s,
      no_leap: msg.no_leap?.[i] ?? null };
  });
}

const MIN_MEASURED_MS = 2000; // a rate measured over less says little

/** Wall seconds until the simulation reaches the last arrival at its rate so far (simulated
 * seconds per second since the run's first progress); null when done, stopped, on a step
 * clock, or not measured long enough. */
export function secondsToGo(pane) {
  const p = pane.progress;
  const end = lastArrival(pane.init);
  if (!p || p.done || p.error || end == null) return null;
  const wall_ms = p.at - p.since.at;
  const simulated = p.time_s - p.since.time_s;
  if (wall_ms < MIN_MEASURED_MS || simulated <= 0) return null;
  return Math.max(0, end - p.time_s) / (simulated / (wall_ms / 1000));
}

/** A wait, rounded as an estimate: "45 s", "12 min", "2 h 5 min". */
export function formatWait(seconds) {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const arrivals = new WeakMap(); // request list -> {n, last}: the list may still be filling

/** The last arrival of the pane's workload so far, s (null: a step-clock workload or none);
 * read on every frame, so each request is looked at once however long the list grows. */
export function lastArrival(init) {
  const list = init?.requests ?? [];
  const seen = arrivals.get(list) ?? { n: 0, last: null };
  let last = seen.last;
  for (let k = seen.n; k < list.length; k++) {
    const t = list[k].arrival_s;
    if (t != null && (last == null || t > last)) last = t;
  }
  arrivals.set(list, { n: list.length, last });
  return last;
}

/** The highest record index the scrubber can reach: every stored record, seen or not, and past
 * them what a seek reaches by a leap (the scout has run the engine there). */
export function scrubMax(pane) {
  const p = pane.progress;
  return Math.max(0, pane.history.lastIter, (pane.init.num_records ?? 0) - 1, p?.computed ?? 0, p?.reach ?? 0);
}

/** The share of the run a seek reaches now (1 when done; by simulated time against the last
 * arrival while running, which is a lower bound on the run's length). */
export function simulatedShare(pane) {
  const p = pane.progress;
  if (!p || p.done) return 1;
  const end = lastArrival(pane.init);
  return end ? Math.min(1, Math.max(0, Math.max(p.time_s, p.reach_s ?? 0) / end)) : 0;
}

export function progressText(pane) {
  const p = pane.progress;
  if (!p) return "";
  if (p.error) return `simulation stopped after ${p.computed + 1} records: ${p.error}`;
  if (p.done) return `simulated to the end: ${p.computed + 1} records`;
  const end = lastArrival(pane.init);
  const of = end ? ` of the last arrival at ${end.toFixed(1)} s` : "";
  const wait = secondsToGo(pane);
  const eta = wait == null ? "" : `, about ${formatWait(wait)} to go`;
  const ahead = p.reach > p.computed ? `; seeks reach t = ${p.reach_s.toFixed(1)} s (from checkpoints)`
    : p.no_leap ? `; a seek further waits for the simulation: ${p.no_leap}` : "";
  return `simulating ahead: t = ${p.time_s.toFixed(1)} s${of}, ${p.computed + 1} records${eta}${ahead}`;
}
