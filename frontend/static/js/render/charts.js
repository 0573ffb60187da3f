// Time series over the run's time with uPlot: output tokens/s, TTFT and ITL p50/p99 (rolling),
// KV usage, queue depths and preemptions. Units on every axis; a line marks the cursor.
// uPlot is passed in (the page imports it from the npm package the app serves). `metrics`: the
// vLLM Prometheus metrics each chart shows the same quantity as (its tooltip; docs/metrics.md).
// Lines break where no step ran for longer than the gap threshold (state/gaps.js).

import { withGaps } from "../state/gaps.js";

export const CHART_SPECS = [
  { key: "throughput", title: "Output tokens/s (rolling)", unit: "tokens/s",
    metrics: ["vllm:generation_tokens_total"],
    series: [["output_tokens_per_s", "output tokens/s", "#0072b2"]] },
  // shown only for a run that speculates (`speculative`)
  { key: "acceptance", title: "Draft acceptance per step", unit: "rate / tokens",
    speculative: true,
    metrics: ["vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total",
      "vllm:spec_decode_num_drafts_total"],
    series: [["acceptance_rate", "acceptance rate", "#009e73"],
      ["mean_acceptance_length", "mean acceptance length", "#cc79a7"]] },
  { key: "ttft", title: "TTFT p50 / p99 (rolling)", unit: "ms",
    metrics: ["vllm:time_to_first_token_seconds"],
    series: [["ttft_p50_ms", "TTFT p50", "#117733"], ["ttft_p99_ms", "TTFT p99", "#882255"]] },
  { key: "itl", title: "ITL p50 / p99 (rolling)", unit: "ms",
    metrics: ["vllm:inter_token_latency_seconds"],
    series: [["itl_p50_ms", "ITL p50", "#44aa99"], ["itl_p99_ms", "ITL p99", "#cc6677"]] },
  { key: "kv", title: "KV cache usage", unit: "% of blocks", range: [0, 100],
    metrics: ["vllm:kv_cache_usage_perc"],
    series: [["kv_usage_pct", "KV usage", "#332288"]] },
  { key: "queues", title: "Queues and preemptions", unit: "requests",
    metrics: ["vllm:num_requests_running", "vllm:num_requests_waiting",
      "vllm:num_preemptions_total"],
    series: [["num_running", "running", "#0072b2"], ["num_waiting", "waiting", "#e69f00"],
      ["num_preempted", "preempted", "#d55e00"], ["num_preemptions_total", "preemptions (total)",
        "#999933"]] },
];

// Axis text in the theme's size (projection scales it with the viewport; uPlot draws axes on
// its canvas, so CSS cannot reach them), with axis boxes grown to hold it and ticks spaced to
// fit their labels. uPlot reads whole CSS pixels from a font string (and scales them to device
// pixels itself). Projected, the time axis says its unit on each tick instead of a label row.
function axisFont(theme) {
  const px = theme.fontPx && Math.ceil(theme.fontPx);
  if (!px) return [{ label: "time (s)" }, {}];
  const font = { font: `${px}px system-ui, sans-serif`, labelFont: `${px}px system-ui, sans-serif`,
    labelSize: Math.round(px * 1.4) };
  const seconds = (u, splits) => splits.map((v) => (v == null ? "" : `${+v.toFixed(6)} s`));
  return [{ ...font, size: Math.round(px * 1.8), space: px * 4.5, values: seconds },
    { ...font, size: Math.round(px * 3.6), space: px * 1.6 }];
}

// Projected, the unit goes in the title (unless it says it already): a label along the y axis
// is longer than a short plot.
function projectedTitle(spec, theme) {
  if (!theme.fontPx || !spec.unit || spec.title.includes(spec.unit)) return spec.title;
  return `${spec.title}, ${spec.unit}`;
}

function options(spec, width, height, theme) {
  const axis = { stroke: theme.ink, grid: { stroke: theme.grid }, ticks: { stroke: theme.grid } };
  const [xFont, yFont] = axisFont(theme);
  return {
    width, height,
    title: projectedTitle(spec, theme),
    scales: { x: { time: false }, y: spec.range ? { range: spec.range } : {} },
    axes: [
      { ...axis, ...xFont }, // simulated or recorded time: the panel's heading says which
      { ...axis, label: theme.fontPx ? undefined : spec.unit, size: 56, ...yFont },
    ],
    series: [
      { label: "t (s)", value: (u, v) => (v == null ? "-" : v.toFixed(3)) },
      ...spec.series.map(([, label, stroke]) => ({
        label, stroke, width: 2, spanGaps: false,
        value: (u, v) => (v == null ? "-" : v.toFixed(spec.speculative ? 2 : 1)),
      })),
    ],
    // projected: one row of names, no live values, and none for one line (the title names it)
    legend: { show: !theme.fontPx || spec.series.length > 1, live: !theme.fontPx },
  };
}

/** One uPlot per spec inside `container`; returns {update(history, cursor_s, {speculative}),
 * resize(w), charts}; a `speculative` spec's chart shows only while `speculative` is true. */
export function createCharts(uPlot, container, theme, specs = CHART_SPECS, width = 420, height = 170, plugins = []) {
  const charts = specs.map((spec) => {
    const el = container.ownerDocument.createElement("div");
    el.className = "chart";
    el.dataset.chart = spec.key;
    if (spec.metrics) el.title = metricsTooltip(spec);
    if (theme.fontPx) el.dataset.fontPx = String(Math.ceil(theme.fontPx)); // its axes' text (tests read it)
    container.appendChild(el);
    const data = [[], ...spec.series.map(() => [])];
    const u = new uPlot({ ...options(spec, width, height, theme), plugins }, data, el);
    const marker = container.ownerDocument.createElement("div");
    marker.className = "chart-cursor";
    u.over.appendChild(marker);
    return { spec, u, marker, el, length: -1 };
  });
  return {
    charts,
    update: (history, cursor_s, opts = {}) => updateCharts(charts, history, cursor_s, opts),
    resize: (w, h = height) => charts.forEach((c) => c.u.setSize({ width: w, height: h })),
    destroy: () => charts.forEach((c) => { c.u.destroy(); c.el.remove(); }),
  };
}

/** Size every chart to fill a `w` x `h` CSS-pixel box with its title and legend: the plot and
 * axes get what those leave at that width, the same for every chart so their axes line up.
 * Measures. */
export function fitCharts(charts, w, h) {
  const width = Math.max(80, Math.floor(w));
  // batch: uPlot applies a size at once, not in a later microtask, so it can be measured
  const size = (c, height) => c.u.batch(() => c.u.setSize({ width, height }));
  for (const c of charts) size(c, c.u.height); // titles and legends wrap at this width
  const tall = (el) => (el ? el.getBoundingClientRect().height : 0);
  const around = Math.max(0, ...charts.map((c) => tall(c.u.root.querySelector(".u-title")) +
    tall(c.u.root.querySelector(".u-legend"))));
  for (const c of charts) size(c, Math.max(20, Math.floor(h - around)));
}

/** The tooltip naming the vLLM metrics a chart matches, as /metrics exports them. */
export function metricsTooltip(spec) {
  return `vLLM metric${spec.metrics.length > 1 ? "s" : ""}: ${spec.metrics.join(", ")} ` +
    "(GET /metrics; docs/metrics.md)";
}

/** Which charts to give new data: all of the stale ones, or (`oneChart`, while a run plays)
 * the stalest one only, so each frame redraws at most one chart. */
export function staleCharts(lengths, length, oneChart) {
  const stale = [];
  lengths.forEach((n, i) => { if (n !== length) stale.push(i); });
  if (!oneChart || stale.length <= 1) return stale;
  return [stale.reduce((a, i) => (lengths[i] < lengths[a] ? i : a), stale[0])];
}

function updateCharts(charts, history, cursor_s, { oneChart = false, speculative = false } = {}) {
  for (const c of charts) if (c.spec.speculative) c.el.hidden = !speculative;
  const pick = staleCharts(charts.map((c) => c.length), history.length, oneChart);
  for (const i of pick) {
    const c = charts[i];
    c.length = history.length;
    const cols = history.cols;
    c.u.setData(withGaps(cols.t_s, cols.start_s, c.spec.series.map(([col]) => cols[col]), cols.iter));
  }
  for (const c of charts) {
    // A chart a few frames stale ends before the cursor: hold the mark at its right edge.
    let x = cursor_s == null ? NaN : c.u.valToPos(cursor_s, "x");
    if (Number.isFinite(x)) x = Math.min(x, c.u.bbox.width / devicePixelRatioOf(c));
    const show = Number.isFinite(x) ? "block" : "none";
    if (c.marker.style.display !== show) c.marker.style.display = show;
    if (Number.isFinite(x)) c.marker.style.transform = `translateX(${Math.round(x)}px)`;
  }
}

function devicePixelRatioOf(c) {
  return c.el.ownerDocument.defaultView?.devicePixelRatio || 1;
}

/** The number of points a chart holds, for tests: page state, not pixels. */
export function chartPoints(c) {
  return c.u.data[0].length;
}
