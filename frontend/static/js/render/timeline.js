// The request timeline: one row per request over simulated time, with its waiting, prefill
// chunk, decoding, stalled (running but out of budget) and preempted spans. Spans are painted
// into ImageData and, while a run plays, only the pixels the newest step added: the time axis
// keeps headroom (it grows by a quarter when full) and rows scroll up as requests arrive. Labels
// are canvas text, so request ids never become markup; the cursor is a separate element.

import { packedFor, packHex } from "../state/palette.js";
import { widthOf } from "./size.js";

const LABEL_W = 64;
// The span kinds drawn in a state's colour (the rest in the request's own colour).
const STATE_KINDS = { waiting: 1, stalled: 1, preempted: 1, waiting_for_kv: 1 };
export const MAX_ROWS = 200; // beyond this, the latest arrivals
export const SCROLL_ROWS = 50;
const HEADROOM = 1.25; // while playing, the axis spans a quarter more than the history

/** Row height for `n` rows in `maxHeight`, between 2 and 16 px. */
export function rowHeight(n, maxHeight) {
  return Math.max(2, Math.min(16, Math.floor(maxHeight / Math.max(1, n))));
}

/** Pixel columns [a, b) a span covers on an axis mapping time t to column xOf(t). */
export function spanColumns(span, xOf) {
  const a = Math.floor(xOf(span.t0_s));
  return [a, Math.max(a + 1, Math.floor(xOf(span.t1_s)))];
}

/** Rows shown for `n` requests: [first, capacity]. Up to MAX_ROWS, all of them; beyond, the
 * window moves SCROLL_ROWS at a time, so the rows stay put between moves (and only the pixels
 * a step adds are painted) instead of shifting at every arrival. */
export function rowWindow(n) {
  if (n <= MAX_ROWS) return [0, Math.max(1, n)];
  return [Math.ceil((n - MAX_ROWS) / SCROLL_ROWS) * SCROLL_ROWS, MAX_ROWS];
}

/** How many leading rows of `old` scrolled off when `ids` is `old` minus them plus new rows. */
export function scrolledBy(old, ids) {
  if (!old.length || !ids.length) return -1;
  const k = old.indexOf(ids[0]);
  if (k < 0) return -1;
  for (let i = k; i < old.length; i++) if (old[i] !== ids[i - k]) return -1;
  return k;
}

export class Timeline {
  constructor(canvas, cursorEl = null) {
    this.canvas = canvas;
    this.cursorEl = cursorEl;
    this.ctx = canvas.getContext("2d");
    this.state = null; // what the pixels show: {history, w, rowH, ids, t0, t1, selected, theme}
    this.rows = new Map(); // id -> {span: index of the last span painted, col: its end column}
    this.layout = null;
  }

  /** Draw for the current history (or rows that never change: `history.fixed`); `opts` =
   * {t_end_s, cursor_s, selected, theme, maxHeight, growing (the run is playing: keep headroom
   * and paint increments)}. Returns the layout. */
  draw(run, history, opts) {
    const all = history.spanIds;
    const [start, capacity] = rowWindow(all.length);
    const ids = all.slice(start);
    const rowH = rowHeight(capacity, opts.maxHeight);
    const w = Math.max(200, Math.floor(widthOf(this.canvas) || this.canvas.width));
    const t0 = history.t0_s ?? 0;
    const tEnd = Math.max(t0 + 1e-6, opts.t_end_s ?? t0 + 1);
    const s = this.state;
    if (history.fixed && s?.history === history && s.w === w && s.rowH === rowH && s.t1 === tEnd &&
      s.selected === opts.selected && s.theme === opts.theme) { // rows that never change
      this.moveCursor(opts.cursor_s);
      return this.layout;
    }
    const same = s && s.history === history && s.w === w && s.rowH === rowH && s.t0 === t0 &&
      s.selected === opts.selected && s.theme === opts.theme && opts.growing && tEnd <= s.t1 &&
      s.capacity === capacity;
    const k = same ? scrolledBy(s.ids, ids) : -1;
    if (k < 0) this.repaint(run, history, ids, rowH, w, t0, tEnd, capacity, opts);
    else this.extend(run, history, ids, k);
    const st = this.state;
    const tOf = (x) => st.t0 + ((x - LABEL_W) / (st.w - LABEL_W)) * (st.t1 - st.t0);
    this.layout = { mode: "rows", rowH, ids, xOf: this.xOf, tOf, t0: st.t0, t1: st.t1, labelW: LABEL_W, hidden: start };
    this.moveCursor(opts.cursor_s);
    return this.layout;
  }

  repaint(run, history, ids, rowH, w, t0, tEnd, capacity, opts) {
    const t1 = opts.growing ? t0 + (tEnd - t0) * HEADROOM : tEnd;
    const h = Math.max(rowH, capacity * rowH);
    if (this.canvas.width !== w) this.canvas.width = w;
    if (this.canvas.height !== h) this.canvas.height = h;
    if (!this.image || this.image.width !== w || this.image.height !== h) {
      this.image = this.ctx.createImageData(w, h);
      this.pixels = new Uint32Array(this.image.data.buffer);
    }
    this.pixels.fill(0);
    const th = opts.theme;
    this.colours = {
      waiting: packHex(th.waiting), stalled: packHex(th.stalled), preempted: packHex(th.preempted),
      waiting_for_kv: packHex(th.waiting_for_kv),
      selected: packHex(th.selected), edge: packHex(th.chunkEdge),
    };
    this.state = { history, w, h, rowH, ids, capacity, t0, t1, selected: opts.selected, theme: th };
    this.xOf = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * (w - LABEL_W);
    this.rows.clear();
    ids.forEach((id, row) => this.paintRow(run, history, id, row, true));
    this.ctx.putImageData(this.image, 0, 0);
    this.labels();
  }

  // Same axis and capacity: scroll `k` rows off the top, paint new rows whole and the old
  // rows' new pixels.
  extend(run, history, ids, k) {
    const s = this.state;
    const { w, rowH } = s;
    if (k > 0) {
      this.pixels.copyWithin(0, k * rowH * w);
      this.pixels.fill(0, (s.ids.length - k) * rowH * w);
      for (const id of s.ids.slice(0, k)) this.rows.delete(id);
    }
    s.ids = ids;
    let lo = w, hi = -1;
    ids.forEach((id, row) => {
      const [a, b] = this.paintRow(run, history, id, row, false);
      if (a < lo) lo = a;
      if (b > hi) hi = b;
    });
    if (k > 0) {
      this.ctx.putImageData(this.image, 0, 0);
      this.labels();
    } else if (hi > lo) {
      this.ctx.putImageData(this.image, 0, 0, lo, 0, hi - lo, s.h);
    }
  }

  /** Paint a row's spans not painted yet (all when `whole`); returns the columns touched. */
  paintRow(run, history, id, row, whole) {
    const spans = history.spans.get(id);
    let done = whole ? null : this.rows.get(id);
    const { w, rowH } = this.state;
    const y = row * rowH;
    if (!done && this.state.selected === id) {
      this.pixels.fill(this.colours.selected, y * w, (y + rowH) * w);
    }
    const index = (history.index ?? run.index).get(id) ?? run.index.get(id) ?? 0;
    let lo = w, hi = -1;
    for (let i = done ? done.span : 0; i < spans.length; i++) {
      let [a, b] = spanColumns(spans[i], this.xOf);
      if (done && i === done.span) a = Math.max(a, done.col);
      if (b <= a) continue;
      this.paintSpan(spans[i], index, a, Math.min(b, w), y);
      if (a < lo) lo = a;
      if (b > hi) hi = b;
      done = { span: i, col: b };
    }
    if (done) this.rows.set(id, done);
    return [lo, Math.min(hi, w)];
  }

  paintSpan(span, index, a, b, y) {
    const { w, rowH } = this.state;
    const kind = span.kind;
    const colour = kind in STATE_KINDS ? this.colours[kind] : packedFor(index);
    const pad = rowH >= 6 ? 1 : 0;
    const inset = kind === "waiting" || kind === "stalled" ? Math.floor(rowH / 3) : pad;
    const px = this.pixels;
    for (let yy = y + inset; yy < y + rowH - inset; yy++) px.fill(colour, yy * w + a, yy * w + b);
    if (kind === "prefill" && b - a > 2) { // each chunk starts with a dark edge
      for (let yy = y + pad; yy < y + rowH - pad; yy++) px[yy * w + a] = this.colours.edge;
    }
  }

  labels() {
    const { ids, rowH, theme } = this.state;
    if (rowH < 8) return;
    const ctx = this.ctx;
    ctx.clearRect(0, 0, LABEL_W, this.state.h);
    ctx.font = `${Math.min(12, rowH)}px sans-serif`;
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.ink;
    ids.forEach((id, row) => {
      ctx.fillText(id.length > 9 ? id.slice(0, 8) + "\u2026" : id, 2, row * rowH + rowH / 2);
    });
  }

  moveCursor(cursorS) {
    const x = cursorS === undefined ? NaN : Math.round(this.xOf(cursorS)) - 1;
    placeCursor(this.cursorEl, x, this.state.h, this.state.theme.cursor);
  }
}

/** Show the cursor element at column x (hidden when x is not finite), `h` px tall. */
export function placeCursor(el, x, h, colour) {
  if (!el) return;
  el.style.display = Number.isFinite(x) ? "block" : "none";
  if (el.dataset.colour !== colour) el.style.background = el.dataset.colour = colour;
  if (Number.isFinite(x)) el.style.transform = `translateX(${x}px)`;
  if (el.style.height !== `${h}px`) el.style.height = `${h}px`;
}

/** The request id of the row at canvas y, or null. */
export function rowAt(layout, y) {
  if (!layout) return null;
  const row = Math.floor(y / layout.rowH);
  return layout.ids[row] ?? null;
}
