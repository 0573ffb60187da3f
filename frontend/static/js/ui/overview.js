// The overview panel: the strip of the whole run (refreshed while the simulation runs ahead), a
// brush that picks a window (drag; double-click clears it), the window's percentiles, a seek to
// its start, and "Diagnose window" on exactly its records.

import { drawOverview, plotArea } from "../render/overview.js";
import { brushWindow, percentileRows, percentilesTitle } from "../state/overview.js";
import { renderDiagnosis } from "./diagnosis.js";

const REFRESH_MS = 1000;
const RETRY_MS = 3000;

function fillPercentiles(doc, table, p) {
  const rows = percentileRows(p);
  table.replaceChildren();
  const head = doc.createElement("tr");
  for (const t of ["ms", "p50", "p90", "p95", "p99"]) {
    const th = doc.createElement("th");
    th.textContent = t;
    head.appendChild(th);
  }
  table.appendChild(head);
  for (const row of rows) {
    const tr = doc.createElement("tr");
    for (const cell of row) {
      const td = doc.createElement("td");
      td.textContent = cell;
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
}

/** Bind the panel; `sessionId()` is the current session, `send` the socket's, `cursorS()` the
 * lead's simulated time, `onWindow({start_s, end_s} or null)` hears the brushed window,
 * `getJson(url)` asks the server (transport/reports.js).
 * Returns {refresh, draw} for the page's session and frame hooks. */
export function bindOverview(doc, { sessionId, send, cursorS, getJson, onWindow = () => {} }) {
  const $ = (id) => doc.getElementById(id);
  const canvas = $("overview-strip");
  const base = () => `/api/sessions/${encodeURIComponent(sessionId())}`;
  const state = { data: null, brush: null, window: null, timer: null, drag: false, asked: 0 };
  const frac = (ev) => {
    const { x0, w } = plotArea(canvas.clientWidth || 600);
    return Math.max(0, Math.min(1, (ev.clientX - canvas.getBoundingClientRect().left - x0) / w));
  };
  const draw = () => drawOverview(canvas, state.data, state.brush, cursorS());

  // The panel shows the newest request's answer only: one still in flight when the window
  // changes (a refresh's whole-run figures, an earlier brush) is dropped when it lands.
  async function percentiles() {
    const ask = ++state.asked, w = state.window;
    const q = new URLSearchParams();
    if (w) q.set("start_s", String(w.start_s)), q.set("end_s", String(w.end_s));
    const p = await getJson(`${base()}/percentiles?${q}`);
    if (ask !== state.asked) return;
    $("percentiles-title").textContent = percentilesTitle(p, w);
    fillPercentiles(doc, $("percentiles"), p);
  }

  async function refresh() {
    clearTimeout(state.timer);
    if (!sessionId()) return;
    try {
      const bins = Math.max(50, Math.min(1200, plotArea(canvas.clientWidth || 600).w));
      state.data = await getJson(`${base()}/overview?bins=${bins}`);
      canvas.dataset.records = String(state.data.num_records);
      if ($("overview-status").textContent.startsWith("Overview unavailable")) $("overview-status").textContent = "";
      draw();
      if (!state.window) await percentiles();
      if (!state.data.done) state.timer = setTimeout(refresh, REFRESH_MS);
    } catch (err) {
      // A busy server or a run replaced meanwhile: say so and ask again (the next answer
      // is the session's current run).
      $("overview-status").textContent = `Overview unavailable: ${err.message}`;
      state.timer = setTimeout(refresh, RETRY_MS);
    }
  }

  canvas.addEventListener("pointerdown", (ev) => {
    state.drag = true;
    state.brush = [frac(ev), frac(ev)];
    canvas.setPointerCapture?.(ev.pointerId);
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (!state.drag) return;
    state.brush[1] = frac(ev);
    draw();
  });
  canvas.addEventListener("pointerup", () => {
    if (!state.drag || !state.data) return;
    state.drag = false;
    state.window = brushWindow(state.data, ...state.brush);
    canvas.dataset.window = JSON.stringify(state.window);
    $("btn-diagnose-window").disabled = state.window.from_iter == null;
    if (state.window.from_iter != null) send({ type: "seek", iter: state.window.from_iter });
    onWindow({ start_s: state.window.start_s, end_s: state.window.end_s });
    percentiles().catch(() => {});
  });
  canvas.addEventListener("dblclick", () => {
    Object.assign(state, { brush: null, window: null });
    $("btn-diagnose-window").disabled = true;
    delete canvas.dataset.window;
    onWindow(null);
    draw();
    percentiles().catch(() => {});
  });
  $("btn-diagnose-window").addEventListener("click", async () => {
    const w = state.window;
    const status = $("overview-status");
    status.textContent = "diagnosing the window…";
    try {
      const q = new URLSearchParams({ from_iter: String(w.from_iter), to_iter: String(w.to_iter) });
      renderDiagnosis($("diagnosis"), await getJson(`${base()}/diagnosis?${q}`));
      status.textContent = `diagnosed records ${w.from_iter}-${w.to_iter} (see Diagnosis)`;
    } catch (err) {
      status.textContent = `Diagnosis failed: ${err.message}`;
    }
  });
  return { refresh, draw };
}
