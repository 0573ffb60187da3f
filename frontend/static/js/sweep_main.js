// Entry module of the Sweep view: wires the form (ui/sweep_form.js) to the sweep on the server
// (transport/sweep.js), polls its progress into the view (ui/sweep_view.js, the plot and the
// table), and opens picked points in the explorer.

import { cancelSweep, readSweep, startSweep } from "./transport/sweep.js";
import { listTraces, uploadToken } from "./transport/upload.js";
import { explorerUrl, openable } from "./state/sweep.js";
import { createSweepPlot } from "./render/sweep_plot.js";
import { fillWorkloads, readForm } from "./ui/sweep_form.js";
import { bindSweepTable, drawSweep, showSweep } from "./ui/sweep_view.js";

const doc = document;
const $ = (id) => doc.getElementById(id);
const boot = JSON.parse($("boot").textContent);
const query = new URLSearchParams(location.search);
const POLL_MS = 400;
const token = query.get("upload_token") ?? uploadToken(); // whose uploads this page may sweep
const state = { view: null, sort: { key: "index", dir: 1 }, selected: new Set(), plot: null };

function showError(message) {
  $("sweep-error").hidden = !message;
  $("sweep-error").textContent = message ?? "";
}

const tokenOf = (id) => sessionStorage.getItem(`sweep-token:${id}`);

const show = (view) => showSweep(doc, state, view, showError);

async function start(ev) {
  ev.preventDefault();
  showError(null);
  try {
    const view = await startSweep(readForm(doc), token);
    // the sweep's token stays with this tab: reloading it reads the sweep again
    sessionStorage.setItem(`sweep-token:${view.sweep_id}`, view.token);
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
    const view = await readSweep(id, tokenOf(id));
    show(view);
    if (view.status === "running") setTimeout(() => poll(id), POLL_MS);
  } catch (err) {
    showError(err.message);
  }
}

const pointsAt = (indexes) => state.view.points.filter((p) => indexes.has(p.index));

function openPoint(point) {
  if (openable(point)) location.href = explorerUrl(state.view, [point], token);
}

function bind() {
  $("sweep-form").addEventListener("submit", start);
  $("sweep-cancel").addEventListener("click", () => state.view && cancelSweep(state.view.sweep_id, tokenOf(state.view.sweep_id)).catch((e) => showError(e.message)));
  $("sweep-y").addEventListener("change", () => drawSweep(doc, state));
  $("sweep-compare").addEventListener("click", () => {
    location.href = explorerUrl(state.view, pointsAt(state.selected), token);
  });
  bindSweepTable(doc, state);
}

async function main() {
  let traces = [];
  try {
    traces = (await listTraces(boot.traces_url, token)).filter((t) => t.kind === "requests");
  } catch (err) {
    showError(`Uploaded traces unavailable: ${err.message}`);
  }
  fillWorkloads(doc, { ...boot, traces }, query);
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
