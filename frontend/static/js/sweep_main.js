// Entry module of the Sweep view: reads the form, starts a sweep on the server, polls its
// progress into the plot and the table, and opens picked points in the explorer.

import { cancelSweep, readSweep, startSweep } from "./transport/sweep.js";
import { explorerUrl, openable, parsePairs, progressText } from "./state/sweep.js";
import { createSweepPlot } from "./render/sweep_plot.js";
import { drawTable } from "./ui/sweep_table.js";

const doc = document;
const $ = (id) => doc.getElementById(id);
const boot = JSON.parse($("boot").textContent);
const query = new URLSearchParams(location.search);
const POLL_MS = 400;
const state = { view: null, sort: { key: "index", dir: 1 }, selected: new Set(), plot: null };

function showError(message) {
  $("sweep-error").hidden = !message;
  $("sweep-error").textContent = message ?? "";
}

function fillWorkloads() {
  const select = $("sweep-workload");
  const options = [...boot.presets.map((p) => [`preset:${p.name}`, `preset: ${p.title ?? p.name}`]),
    ...boot.traces.map((t) => [`trace:${t.trace_id}`, `uploaded: ${t.filename}`])];
  for (const [value, text] of options) select.appendChild(Object.assign(doc.createElement("option"), { value, textContent: text }));
  const wanted = query.get("trace") ? `trace:${query.get("trace")}` : `preset:${query.get("preset") ?? "demo"}`;
  if (options.some(([v]) => v === wanted)) select.value = wanted;
  $("sweep-keys").textContent = `grid keys: ${boot.grid_keys.join(", ")}; SLO metrics: ${boot.slo_metrics.join(", ")}`;
}

function readForm() {
  const [kind, name] = $("sweep-workload").value.split(/:(.*)/s);
  const json = (id, what) => {
    try { return JSON.parse($(id).value); } catch (err) { throw new Error(`${what}: not JSON (${err.message})`); }
  };
  return { workload: { [kind]: name }, config: json("sweep-config", "base config"),
    grid: json("sweep-grid", "grid"), slos: parsePairs($("sweep-slos").value, "SLOs"),
    gpu_prices: parsePairs($("sweep-prices").value, "GPU prices") };
}

async function start(ev) {
  ev.preventDefault();
  showError(null);
  try {
    const view = await startSweep(readForm());
    state.selected.clear();
    history.replaceState(null, "", `/sweep?sweep=${view.sweep_id}`);
    show(view);
    poll(view.sweep_id);
  } catch (err) {
    showError(err.field ? `${err.field}: ${err.message}` : err.message);
  }
}

async function poll(id) {
  try {
    const view = await readSweep(id);
    show(view);
    if (view.status === "running") setTimeout(() => poll(id), POLL_MS);
  } catch (err) {
    showError(err.message);
  }
}

function show(view) {
  state.view = view;
  const running = view.status === "running";
  $("sweep-start").disabled = running;
  $("sweep-cancel").disabled = !running;
  $("sweep-progress").textContent = progressText(view);
  Object.assign($("sweep-bar"), { max: Math.max(1, view.total), value: view.done ?? 0 });
  $("sweep-answer").hidden = !view.answer;
  $("sweep-answer").textContent = view.answer ?? "";
  if (view.status === "failed") showError(view.error);
  draw();
}

function draw() {
  const view = state.view;
  if (!view) return;
  state.plot?.update(view, $("sweep-y").value);
  drawTable(doc, $("sweep-table"), view, state.sort, state.selected);
  $("sweep-compare").disabled = state.selected.size < 2 || state.selected.size > 4;
  doc.body.dataset.sweepStatus = view.status;
}

function pointsAt(indexes) {
  return state.view.points.filter((p) => indexes.has(p.index));
}

function bind() {
  $("sweep-form").addEventListener("submit", start);
  $("sweep-cancel").addEventListener("click", () => state.view && cancelSweep(state.view.sweep_id).catch((e) => showError(e.message)));
  $("sweep-y").addEventListener("change", draw);
  $("sweep-compare").addEventListener("click", () => {
    location.href = explorerUrl(state.view, pointsAt(state.selected));
  });
  $("sweep-table").addEventListener("click", (ev) => {
    const sort = ev.target.closest("[data-sort]")?.dataset.sort;
    if (sort) {
      state.sort = { key: sort, dir: state.sort.key === sort ? -state.sort.dir : 1 };
      return draw();
    }
    const pick = ev.target.closest("[data-pick]");
    if (pick) {
      const i = Number(pick.dataset.pick);
      if (pick.checked) state.selected.add(i); else state.selected.delete(i);
      draw();
    }
  });
}

function openPoint(point) {
  if (openable(point)) location.href = explorerUrl(state.view, [point]);
}

async function main() {
  fillWorkloads();
  bind();
  try {
    const uPlot = (await import("uplot")).default;
    state.plot = createSweepPlot(uPlot, $("sweep-plot"), openPoint);
  } catch (err) {
    showError(`Charts unavailable: ${err.message}`);
  }
  if (query.get("sweep")) poll(query.get("sweep"));
  window.__sweep = state;
}

main();
