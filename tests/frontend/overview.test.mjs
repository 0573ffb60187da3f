import assert from "node:assert/strict";
import test from "node:test";

import { bridgeShortGaps, brushWindow, percentileRows, percentilesTitle, scaledSeries } from "../../frontend/static/js/state/overview.js";

const DATA = { bin_s: 2, columns: {
  t_s: [0, 2, 4, 6, 8],
  first_iter: [0, null, 5, 9, null],
  last_iter: [4, null, 8, 12, null],
  throughput_tok_per_s: [100, null, 400, 200, null],
  num_waiting: [0, null, 3, 1, null],
  kv_usage_pct: [10, null, 50, 25, null],
  p99_ttft_ms: [null, null, 80, 40, null],
} };

test("series are scaled to their own maximum and keep gaps where nothing ran", () => {
  const [throughput, waiting, , ttft] = scaledSeries(DATA.columns);
  assert.deepEqual(throughput.points, [0.25, null, 1, 0.5, null]);
  assert.equal(throughput.max, 400);
  assert.deepEqual(waiting.points, [0, null, 1, 1 / 3, null]);
  assert.deepEqual(ttft.points, [null, null, 1, 0.5, null]);
});

test("a brush covers whole bins, and its records run from the first to the last stored inside", () => {
  assert.deepEqual(brushWindow(DATA, 0.25, 0.75), { start_s: 2, end_s: 8, from_iter: 5, to_iter: 12 });
  assert.deepEqual(brushWindow(DATA, 0.75, 0.25), brushWindow(DATA, 0.25, 0.75)); // dragged leftwards
  assert.deepEqual(brushWindow(DATA, 0.21, 0.39), { start_s: 2, end_s: 4, from_iter: null, to_iter: null }); // idle
  assert.deepEqual(brushWindow(DATA, 0, 1), { start_s: 0, end_s: 10, from_iter: 0, to_iter: 12 });
});

test("the percentile rows show each latency in ms, '-' where no request finished", () => {
  const rows = percentileRows({ ttft_ms: { p50: 12.345, p90: 20, p95: 30, p99: 99.99 },
    tpot_ms: { p50: null, p90: null, p95: null, p99: null } });
  assert.deepEqual(rows[0], ["TTFT", "12.3", "20.0", "30.0", "100.0"]);
  assert.deepEqual(rows[1], ["TPOT", "-", "-", "-", "-"]);
  assert.equal(rows.length, 4);
});

test("a short run of empty bins is bridged with the value before it; a long one stays a gap", () => {
  // bins of 0.1 s: two empty bins (0.2 s) are under the 0.25 s threshold, three (0.3 s) are not
  const v = [1, null, null, 2, null, null, null, 3, null];
  assert.deepEqual(bridgeShortGaps(v, 0.1, 0.25), [1, 1, 1, 2, null, null, null, 3, null]);
  assert.deepEqual(bridgeShortGaps([null, 1], 0.1, 0.25), [null, 1]); // nothing before: no bridge
});

test("the strip bridges by its bin width: a one-bin pause of a long run is no gap", () => {
  const columns = { ...DATA.columns, t_s: DATA.columns.t_s.map((t) => t / 100) };
  const [throughput] = scaledSeries(columns, 0.02); // bins of 20 ms: each null bin is bridged
  assert.deepEqual(throughput.points, [0.25, 0.25, 1, 0.5, null]);
  assert.deepEqual(scaledSeries(DATA.columns, 2)[0].points, [0.25, null, 1, 0.5, null]); // 2 s: a gap
});

test("the percentile title says which requests, and up to where while the run is simulated", () => {
  const whole = percentilesTitle({ num_requests: 48, done: true, upto_s: 40 }, null);
  assert.equal(whole, "Percentiles of the whole run (48 requests finished)");
  assert.doesNotMatch(whole, /so far|simulated/);
  const running = { num_requests: 30, done: false, upto_s: 12.34 };
  assert.match(percentilesTitle(running, null), /^Percentiles of the 30 requests finished by t = 12\.3 s/);
  assert.equal(percentilesTitle(running, { start_s: 1, end_s: 20 }),
    "Percentiles of 30 requests finished in 1.0-20.0 s (simulated up to t = 12.3 s)");
  assert.equal(percentilesTitle({ num_requests: 1, done: true }, { start_s: 0.25, end_s: 1.5 }),
    "Percentiles of 1 request finished in 0.3-1.5 s");
});
