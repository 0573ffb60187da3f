// Breaks in the charts where nothing ran: uPlot draws a line across every point it is given,
// so an idle stretch longer than the gap threshold gets a point of nulls in every series
// (with spanGaps off, the line stops there and starts again with the next step). Records the
// page skipped (a seek, a catch-up keyframe) ran: the line crosses them as before.

export const GAP_MIN_S = 0.25; // an idle stretch shorter than this is no gap, however zoomed

/** The idle time that counts as a gap on a chart spanning `spanS` seconds: at least
 * GAP_MIN_S, and at least 1/400 of the span (a gap narrower than a pixel or so is no break). */
export function gapThreshold(spanS) {
  return Math.max(GAP_MIN_S, spanS / 400);
}

/** Indices i where the step starting at `starts[i]` comes more than `threshold` seconds after
 * the previous step ended (`ends[i - 1]`) and is the record right after it (`iters`, when
 * given: no record ran between them). */
export function gapIndices(ends, starts, threshold, iters = null) {
  const out = [];
  for (let i = 1; i < ends.length; i++) {
    if (starts[i] - ends[i - 1] > threshold && (!iters || iters[i] === iters[i - 1] + 1)) out.push(i);
  }
  return out;
}

/** uPlot data `[x, ...ys]` for points at `ends` with a null point in the middle of each idle
 * stretch longer than the threshold; the arrays themselves when there is none. */
export function withGaps(ends, starts, ys, iters = null) {
  const n = ends.length;
  const span = n ? ends[n - 1] - (starts[0] ?? ends[0]) : 0;
  const gaps = n ? gapIndices(ends, starts, gapThreshold(span), iters) : [];
  if (!gaps.length) return [ends, ...ys];
  const x = [];
  const cols = ys.map(() => []);
  let from = 0;
  for (const g of [...gaps, n]) {
    for (let i = from; i < g; i++) {
      x.push(ends[i]);
      cols.forEach((c, k) => c.push(ys[k][i]));
    }
    if (g < n) {
      x.push((ends[g - 1] + starts[g]) / 2);
      for (const c of cols) c.push(null);
    }
    from = g;
  }
  return [x, ...cols];
}
