// The request timeline's window: whole run or a picked window (brushed in the overview, or
// dragged across the timeline itself; double-click returns to the whole run). For a run of
// more than ROW_LIMIT requests, or any window, it fetches the server's timeline of it
// (GET /api/sessions/{id}/timeline), again every second while the run is still simulating.

import { dragWindow, rowsHistory, ROW_LIMIT, timelineQuery } from "../state/timeline_window.js";

const REFRESH_MS = 1000;
const LABEL_W = 64;

export class TimelineView {
  /** `sessionId()`: the page's session; `changed()`: redraw the timeline; `getJson(url)`:
   * asks the server (transport/reports.js). */
  constructor(canvas, { sessionId, changed, getJson }) {
    this.canvas = canvas;
    this.sessionId = sessionId;
    this.getJson = getJson;
    this.changed = changed;
    this.window = null;
    this.answer = null; // the server's last timeline
    this.answerFor = null; // the window it is of (null: the whole run)
    this.rows = null; // its rows as a history the row painter reads
    this.key = null; // the query last asked
    this.generation = 0; // bumped by reset: an answer for the run before is dropped
    this.loading = null;
    this.fetchedAt = 0;
    this.layout = null; // the last drawn layout (time <-> x)
    this.drag = null;
    this.bindPointer();
  }

  /** A new run on the session (configured again): forget the window and the last answer. */
  reset() {
    Object.assign(this, { answer: null, rows: null, key: null, layout: null });
    this.generation += 1;
    this.setWindow(null);
  }

  setWindow(window) {
    this.window = window;
    this.canvas.dataset.window = window ? JSON.stringify(window) : "";
    this.changed();
  }

  /** Whether the server's view is wanted: a window, or too many requests for a row each. */
  wanted(numRequests) {
    return !!this.window || numRequests > ROW_LIMIT;
  }

  /** Ask for the server's timeline when the window changed, or the run is still growing. */
  update(engine = 0) {
    const sid = this.sessionId();
    if (!sid || this.loading) return;
    const bins = Math.max(50, Math.min(1200, (this.canvas.clientWidth || 600) - LABEL_W));
    const key = `${sid}?${timelineQuery(this.window, bins, engine)}`;
    // a new query at once; the same again (still simulating, or it failed) once a second
    const again = (this.error || !this.answer?.done) && performance.now() - this.fetchedAt > REFRESH_MS;
    if (key === this.key && !again) return;
    this.loading = this.fetch(key, this.window).finally(() => { this.loading = null; });
  }

  async fetch(key, window) {
    const generation = this.generation;
    const [sid, query] = key.split("?");
    let answer = null;
    try {
      answer = await this.getJson(`/api/sessions/${encodeURIComponent(sid)}/timeline?${query}`);
      this.error = null;
    } catch (err) {
      answer = null;
      this.error = err.message;
    }
    if (generation !== this.generation) return;
    if (answer) Object.assign(this, { answer, answerFor: window, rows: answer.rows ? rowsHistory(answer) : null });
    Object.assign(this, { key, fetchedAt: performance.now() }); // the query last asked
    this.changed();
    if (!answer?.done) setTimeout(() => this.changed(), REFRESH_MS); // come back for more
  }

  /** The answer for the current window (null until it has come). */
  current() {
    return this.answer && this.answerFor === this.window ? this.answer : null;
  }

  bindPointer() {
    const c = this.canvas;
    const x = (ev) => ev.offsetX * ((c.width || 1) / (c.clientWidth || 1));
    c.addEventListener("pointerdown", (ev) => {
      if (!this.layout?.tOf) return;
      this.drag = x(ev);
      c.setPointerCapture?.(ev.pointerId);
    });
    c.addEventListener("pointerup", (ev) => {
      if (this.drag == null) return;
      const w = dragWindow(this.layout, this.drag, x(ev));
      this.drag = null;
      if (w) this.setWindow(w);
    });
    c.addEventListener("dblclick", () => this.setWindow(null));
  }
}

/** The line above the timeline: what it shows and how to zoom. */
export function timelineInfo(mode, count, window, answer) {
  const span = answer ? `${answer.start_s.toFixed(1)}-${answer.end_s.toFixed(1)} s` : "";
  const back = window ? "; double-click for the whole run" : "";
  if (mode === "live") return "";
  if (mode === "rows") return `${answer.rows.length} requests in ${span}, a row each: drag across it to zoom in${back}`;
  return `${count} requests: how many were in each state over ${span}; drag across it to zoom in ` +
    `(a row each at ${ROW_LIMIT} requests or fewer)${back}`;
}
