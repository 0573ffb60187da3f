// The request timeline's window: whole run or a picked window (brushed in the overview, or
// dragged across the timeline itself; double-click returns to the whole run). For a run of
// more than ROW_LIMIT requests, or any window, it fetches the server's timeline of it
// (GET /api/sessions/{id}/timeline), again every second while the run is still simulating.

import { dragWindow, rowsHistory, ROW_LIMIT, timelineQuery } from "../state/timeline_window.js";

const REFRESH_MS = 1000;
const LABEL_W = 64;

export class TimelineView {
  /** `sessionId()`: the page's session; `changed()`: redraw the timeline. */
  constructor(canvas, { sessionId, changed }) {
    this.canvas = canvas;
    this.sessionId = sessionId;
    this.changed = changed;
    this.window = null;
    this.answer = null; // the server's timeline for `this.key`
    this.rows = null; // its rows as a history the row painter reads
    this.key = null; // the query the answer is for
    this.loading = null;
    this.fetchedAt = 0;
    this.layout = null; // the last drawn layout (time <-> x)
    this.drag = null;
    this.bindPointer();
  }

  /** A new run on the session (configured again): forget the window and the last answer. */
  reset() {
    Object.assign(this, { answer: null, rows: null, key: null, layout: null });
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
    const stale = key !== this.key || (!this.answer?.done && performance.now() - this.fetchedAt > REFRESH_MS);
    if (!stale) return;
    this.loading = this.fetch(key).finally(() => { this.loading = null; });
  }

  async fetch(key) {
    const [sid, query] = key.split("?");
    try {
      const res = await fetch(`/api/sessions/${encodeURIComponent(sid)}/timeline?${query}`);
      const data = await res.json();
      if (!res.ok) throw new Error(data.detail?.message ?? `HTTP ${res.status}`);
      Object.assign(this, { answer: data, key, rows: data.rows ? rowsHistory(data) : null, error: null });
    } catch (err) {
      Object.assign(this, { key, error: err.message });
    }
    this.fetchedAt = performance.now();
    this.changed();
    if (!this.answer?.done) setTimeout(() => this.changed(), REFRESH_MS); // come back for more
  }

  /** The answer for the current window, once it has come (null while asking). */
  current() {
    const w = this.window;
    const a = this.answer;
    if (!a) return null;
    if (!w) return this.key?.includes("start_s") ? null : a;
    return Math.abs(a.start_s - w.start_s) < 1e-9 && Math.abs(a.end_s - w.end_s) < 1e-9 ? a : null;
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
