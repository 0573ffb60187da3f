// The overview strip's data (GET /api/sessions/{id}/overview): its series scaled to their own
// maxima with gaps kept, a brush in strip fractions turned into a window of time and records,
// and the percentile panel's rows (GET .../percentiles).

import { gapThreshold } from "./gaps.js";

export const SERIES = [
  { key: "throughput_tok_per_s", label: "throughput", unit: "tok/s" },
  { key: "num_waiting", label: "queue depth", unit: "requests" },
  { key: "kv_usage_pct", label: "KV usage", unit: "%" },
  { key: "p99_ttft_ms", label: "p99 TTFT", unit: "ms" },
];

/** `values` with each run of null bins no longer than `threshold` seconds in all (bins of
 * `binS`) between two values filled with the value before it: no step started there, but the
 * engine was not idle for long (a step longer than a bin, or a short pause). Longer runs stay
 * null: gaps where nothing ran. */
export function bridgeShortGaps(values, binS, threshold) {
  const out = values.slice();
  let k = 0;
  while (k < out.length) {
    if (out[k] != null) { k += 1; continue; }
    let e = k;
    while (e < out.length && out[e] == null) e += 1;
    if (k > 0 && e < out.length && (e - k) * binS <= threshold) out.fill(out[k - 1], k, e);
    k = e;
  }
  return out;
}

/** Each series as fractions of its own maximum; null stays null where nothing ran for longer
 * than the gap threshold (a gap), short idle runs of bins are bridged. */
export function scaledSeries(columns, binS = 0) {
  const threshold = gapThreshold(binS * (columns?.t_s?.length ?? 0));
  return SERIES.map(({ key, label, unit }) => {
    const raw = columns?.[key] ?? [];
    const values = binS > 0 ? bridgeShortGaps(raw, binS, threshold) : raw;
    let max = 0;
    for (const v of values) if (v != null && v > max) max = v;
    return { key, label, unit, max, points: values.map((v) => (v == null ? null : max ? v / max : 0)) };
  });
}

/** The window a brush from fraction a to b of the strip covers: its times, and the first and
 * last stored record inside it (null when no step ran there). */
export function brushWindow(data, a, b) {
  const [lo, hi] = a <= b ? [a, b] : [b, a];
  const cols = data.columns;
  const n = cols.t_s.length;
  const first = Math.max(0, Math.min(n - 1, Math.floor(lo * n)));
  const last = Math.max(first, Math.min(n - 1, Math.ceil(hi * n) - 1));
  let fromIter = null;
  let toIter = null;
  for (let k = first; k <= last; k++) {
    if (cols.first_iter[k] == null) continue;
    if (fromIter == null) fromIter = cols.first_iter[k];
    toIter = cols.last_iter[k];
  }
  return { start_s: cols.t_s[first], end_s: cols.t_s[last] + data.bin_s, from_iter: fromIter, to_iter: toIter };
}

/** The percentile panel: one row per latency, its p50/p90/p95/p99 in ms ("-" where none). */
export function percentileRows(p) {
  const names = { ttft_ms: "TTFT", tpot_ms: "TPOT", itl_ms: "ITL", e2el_ms: "E2E" };
  return Object.entries(names).map(([key, name]) => [name, ...["p50", "p90", "p95", "p99"].map((q) => {
    const v = p?.[key]?.[q];
    return v == null ? "-" : v.toFixed(1);
  })]);
}

/** The percentile panel's title: which requests it covers, and, while the run is still being
 * simulated, up to where (`upto_s`: the simulated time the finished requests were taken at). */
export function percentilesTitle(p, w) {
  const n = p.num_requests;
  const requests = n === 1 ? "1 request" : `${n} requests`;
  const upto = !p.done && p.upto_s != null ? ` (simulated up to t = ${p.upto_s.toFixed(1)} s)` : "";
  if (w) return `Percentiles of ${requests} finished in ${w.start_s.toFixed(1)}-${w.end_s.toFixed(1)} s${upto}`;
  if (p.done) return `Percentiles of the whole run (${requests} finished)`;
  return `Percentiles of the ${requests} finished by t = ${(p.upto_s ?? 0).toFixed(1)} s (the run is still being simulated)`;
}
