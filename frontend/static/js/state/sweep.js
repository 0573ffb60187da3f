// A sweep's results as the Sweep view shows them: the plot's columns (cost against goodput or a
// p99 latency, the Pareto frontier, an SLO line), table order, and links that open points in
// the explorer. Pure functions over the route's JSON (GET /api/sweeps/{id}).

export const Y_AXES = {
  request_goodput: { label: "goodput (req/s within every SLO)", of: (p) => p.request_goodput },
  p99_ttft_ms: { label: "p99 TTFT (ms)", of: (p) => p.summary?.p99_ttft_ms },
  p99_itl_ms: { label: "p99 ITL (ms)", of: (p) => p.summary?.p99_itl_ms },
  p99_e2el_ms: { label: "p99 E2EL (ms)", of: (p) => p.summary?.p99_e2el_ms },
};

/** The cost a point is placed and sorted by, in the sweep's unit ($ per million output tokens,
 * or GPU-hours when some GPU has no price). null: the point did not run. */
export function costOf(point, unit = "usd") {
  if (point.status !== "ok") return null;
  return unit === "gpu_hours" ? point.cost.gpu_hours : point.cost.usd_per_m_output_tokens;
}

export function costLabel(unit) {
  return unit === "gpu_hours" ? "GPU-hours" : "$ per million output tokens";
}

/** uPlot columns [x, all points, frontier, SLO line] sorted by cost, and the point of each
 * column index (`order`). The frontier column holds only Pareto points (joined by a line). */
export function plotColumns(view, yKey) {
  const unit = view.cost_unit ?? "usd";
  const y = Y_AXES[yKey] ?? Y_AXES.request_goodput;
  const order = (view.points ?? []).filter((p) => costOf(p, unit) != null && y.of(p) != null)
    .sort((a, b) => costOf(a, unit) - costOf(b, unit) || a.index - b.index);
  const pareto = new Set(view.pareto ?? []);
  const slo = view.slos?.[yKey];
  return {
    order,
    data: [order.map((p) => costOf(p, unit)), order.map((p) => y.of(p)),
      order.map((p) => (pareto.has(p.index) ? y.of(p) : null)),
      order.map(() => (slo == null ? null : slo))],
  };
}

const SORTS = {
  index: (p) => p.index,
  cost: (p) => costOf(p) ?? Infinity,
  request_goodput: (p) => p.request_goodput ?? -Infinity,
  p99_ttft_ms: (p) => p.summary?.p99_ttft_ms ?? Infinity,
  p99_itl_ms: (p) => p.summary?.p99_itl_ms ?? Infinity,
  meets_slo: (p) => (p.meets_slo ? 0 : 1),
};

/** The points sorted by a column (`dir` 1 up, -1 down), ties in grid order. */
export function sortPoints(points, key, dir = 1) {
  const of = SORTS[key] ?? SORTS.index;
  return [...points].sort((a, b) => dir * (of(a) - of(b)) || a.index - b.index);
}

/** The explorer's page config for a sweep: its base, with KV blocks left to the cost model
 * when the base did not fix them (null: derive), as each point was run. */
export function baseConfig(view) {
  const base = { ...(view.base_config ?? {}) };
  if (base.num_gpu_blocks == null) base.num_gpu_blocks = null;
  return base;
}

/** The engine settings a point changes (replicas are not an engine setting). */
export function pointConfig(point) {
  const { replicas, ...rest } = point.point ?? {};
  return rest;
}

/** Whether the explorer can show the point: it ran, on one engine. */
export function openable(point) {
  return point.status === "ok" && (point.replicas ?? 1) === 1;
}

/** The explorer URL (path and query) that runs one point, or compares 2-4; an uploaded
 * trace's link carries `token`, the upload token it needs. */
export function explorerUrl(view, points, token = null) {
  const params = new URLSearchParams();
  const workload = view.workload ?? {};
  if (workload.trace) {
    params.set("trace", workload.trace);
    if (token) params.set("upload_token", token);
  } else params.set("preset", workload.preset ?? "demo");
  const config = { ...baseConfig(view), ...(points.length === 1 ? pointConfig(points[0]) : {}) };
  for (const [k, v] of Object.entries(config)) params.set(k, String(v));
  if (points.length > 1) {
    params.set("view", "compare");
    params.set("compare", JSON.stringify(points.slice(0, 4).map(pointConfig)));
  }
  return `/?${params.toString()}`;
}

/** "METRIC=MS, ..." -> {metric: ms}; "GPU=USD, ..." likewise. Blank parts are skipped; a part
 * without "=" or a number is reported by name. */
export function parsePairs(text, what) {
  const out = {};
  for (const part of text.split(/[,\n]/).map((s) => s.trim()).filter(Boolean)) {
    const [key, raw] = part.split("=").map((s) => s?.trim());
    const value = Number(raw);
    if (!key || raw === undefined || raw === "" || !Number.isFinite(value)) {
      throw new Error(`${what}: write ${part.includes("=") ? "a number after =" : "NAME=NUMBER"} in "${part}"`);
    }
    out[key] = value;
  }
  return out;
}

/** A line of progress: "3 of 8 points (1 does not fit, 0 failed)". */
export function progressText(view) {
  const points = view.points ?? [];
  const count = (s) => points.filter((p) => p.status === s).length;
  const state = view.status === "running" ? "" : ` - ${view.status}`;
  return `${view.done ?? points.length} of ${view.total} points (${count("does_not_fit")} do not fit, `
    + `${count("failed")} failed)${state}`;
}
