// The request timeline: one row per request over simulated time, with its waiting, prefill
// chunk, decoding, stalled (running but out of budget) and preempted spans; a line marks the
// cursor. Labels are drawn as canvas text, so request ids never become markup.

import { cssFor } from "../state/palette.js";
import { widthOf } from "./size.js";

export const SPAN_KINDS = ["waiting", "prefill", "decode", "stalled", "preempted"];
const LABEL_W = 64;
export const MAX_ROWS = 200; // beyond this, the latest arrivals up to the cursor

/** Row height for `n` rows in `maxHeight`, between 2 and 16 px. */
export function rowHeight(n, maxHeight) {
  return Math.max(2, Math.min(16, Math.floor(maxHeight / Math.max(1, n))));
}

function spanStyle(ctx, kind, index, theme) {
  if (kind === "waiting") return theme.waiting;
  if (kind === "preempted") return theme.preempted;
  if (kind === "stalled") return theme.stalled;
  return cssFor(index);
}

/** Draw every request row; `opts` = {t_end_s, cursor_s, selected, theme, maxHeight}. */
export function drawTimeline(canvas, run, history, opts) {
  const all = run.ids.filter((id) => history.spans.has(id));
  const ids = all.length > MAX_ROWS ? all.slice(all.length - MAX_ROWS) : all;
  const rowH = rowHeight(ids.length, opts.maxHeight);
  const w = Math.max(200, Math.floor(widthOf(canvas) || canvas.width));
  const h = Math.max(rowH, ids.length * rowH);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, w, h);
  const t0 = history.t0_s ?? 0;
  const span = Math.max(1e-6, (opts.t_end_s ?? t0 + 1) - t0);
  const xOf = (t) => LABEL_W + ((t - t0) / span) * (w - LABEL_W);
  ctx.font = `${Math.min(12, rowH)}px sans-serif`;
  ctx.textBaseline = "middle";
  ids.forEach((id, row) => {
    const index = run.index.get(id);
    const y = row * rowH;
    if (id === opts.selected) {
      ctx.fillStyle = opts.theme.selected;
      ctx.fillRect(0, y, w, rowH);
    }
    if (rowH >= 8) {
      ctx.fillStyle = opts.theme.ink;
      ctx.fillText(id.length > 9 ? id.slice(0, 8) + "\u2026" : id, 2, y + rowH / 2);
    }
    for (const s of history.spans.get(id)) drawSpan(ctx, s, index, xOf, y, rowH, opts.theme);
  });
  if (opts.cursor_s !== undefined) {
    ctx.fillStyle = opts.theme.cursor;
    ctx.fillRect(Math.round(xOf(opts.cursor_s)) - 1, 0, 2, h);
  }
  return { rowH, ids, xOf, labelW: LABEL_W, hidden: all.length - ids.length };
}

function drawSpan(ctx, s, index, xOf, y, rowH, theme) {
  const x = xOf(s.t0_s);
  const sw = Math.max(1, xOf(s.t1_s) - x);
  const pad = rowH >= 6 ? 1 : 0;
  ctx.fillStyle = spanStyle(ctx, s.kind, index, theme);
  const inset = s.kind === "waiting" || s.kind === "stalled" ? Math.floor(rowH / 3) : pad;
  ctx.fillRect(x, y + inset, sw, rowH - 2 * inset);
  if (s.kind === "prefill" && sw > 2) {
    ctx.fillStyle = theme.chunkEdge; // each chunk starts with a dark edge
    ctx.fillRect(x, y + pad, 1, rowH - 2 * pad);
  }
}

/** The request id of the row at canvas y, or null. */
export function rowAt(layout, y) {
  if (!layout) return null;
  const row = Math.floor(y / layout.rowH);
  return layout.ids[row] ?? null;
}
