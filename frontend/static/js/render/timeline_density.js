// The request timeline aggregated: how many requests were waiting (or, on a P/D decode replica,
// waiting for their remote KV), prefilling, decoding, stalled or preempted over time, stacked,
// one column per time bin of the server's answer (state/timeline_window.js); blank where no
// step ran. A legend names each state's colour.

import { legendStates, STATES, stackDensity } from "../state/timeline_window.js";
import { placeCursor } from "./timeline.js";
import { widthOf } from "./size.js";

const LABEL_W = 64;
const TOP = 18; // the legend's line
const BOTTOM = 14; // the time axis' labels
const HEIGHT = 200;

/** One colour per state, none repeated (colour-blind-safe hues where the theme has none). */
export function stateColours(theme) {
  const dark = !!theme.fontPx;
  return {
    waiting: theme.waiting, waiting_for_kv: theme.waiting_for_kv, prefill: "#e69f00",
    decode: dark ? "#56b4e9" : "#0072b2", stalled: dark ? "#999999" : "#8a6fb0", preempted: theme.preempted,
  };
}

/** Draws the route's answers on the timeline canvas; an answer already drawn at the same width
 * and theme only moves the cursor (a playing run draws every frame). */
export class DensityView {
  constructor(canvas, cursorEl) {
    this.canvas = canvas;
    this.cursorEl = cursorEl;
    this.drawn = null; // {answer, w, theme, layout}
  }

  /** Draw `answer` with `opts` = {theme, cursor_s}; returns the layout (time <-> x). */
  draw(answer, opts) {
    const w = Math.max(200, Math.floor(widthOf(this.canvas) || this.canvas.width));
    const d = this.drawn;
    const layout = d?.answer === answer && d.w === w && d.theme === opts.theme && this.canvas.height === HEIGHT
      ? d.layout : this.paint(answer, w, opts.theme);
    this.drawn = { answer, w, theme: opts.theme, layout };
    const x = opts.cursor_s == null ? NaN : Math.round(layout.xOf(opts.cursor_s)) - 1;
    placeCursor(this.cursorEl, x, HEIGHT, opts.theme.cursor);
    return layout;
  }

  paint(answer, w, theme) {
    const canvas = this.canvas;
    if (canvas.width !== w) canvas.width = w;
    if (canvas.height !== HEIGHT) canvas.height = HEIGHT;
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, w, HEIGHT);
    const t0 = answer.start_s, t1 = Math.max(answer.end_s, t0 + 1e-9);
    const plotW = w - LABEL_W;
    const xOf = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * plotW;
    const tOf = (x) => t0 + ((x - LABEL_W) / plotW) * (t1 - t0);
    const states = answer.states ?? STATES;
    const { stacks, max } = stackDensity(answer.columns, states);
    const colours = stateColours(theme);
    const plotH = HEIGHT - TOP - BOTTOM;
    const yOf = (v) => HEIGHT - BOTTOM - (max ? (v / max) * plotH : 0);
    stacks.forEach((bands, b) => {
      if (!bands) return;
      const a = Math.floor(xOf(answer.columns.t_s[b]));
      const e = Math.max(a + 1, Math.floor(xOf(answer.columns.t_s[b] + answer.bin_s)));
      bands.forEach(([lo, hi], k) => {
        if (hi <= lo) return;
        ctx.fillStyle = colours[states[k]];
        const y1 = Math.round(yOf(hi));
        ctx.fillRect(a, y1, e - a, Math.max(1, Math.round(yOf(lo)) - y1));
      });
    });
    labels(ctx, { w, max, t0, t1, colours, theme, states: legendStates(answer.columns, states) });
    return { mode: "density", xOf, tOf, labelW: LABEL_W, t0, t1, rowH: HEIGHT, ids: [], hidden: 0, max };
  }
}

function labels(ctx, { w, max, t0, t1, colours, theme, states }) {
  ctx.font = "11px sans-serif";
  ctx.textBaseline = "middle";
  let x = LABEL_W;
  for (const s of states) {
    ctx.fillStyle = colours[s];
    ctx.fillRect(x, 5, 10, 10);
    ctx.fillStyle = theme.ink;
    ctx.fillText(s, x + 13, 10);
    x += 20 + ctx.measureText(s).width;
  }
  ctx.fillText(`${Math.round(max)} requests`, 2, TOP + 6);
  ctx.fillText("0", 2, HEIGHT - BOTTOM - 4);
  ctx.textBaseline = "bottom";
  ctx.fillText(`${t0.toFixed(1)} s`, LABEL_W, HEIGHT);
  const end = `${t1.toFixed(1)} s`;
  ctx.fillText(end, w - ctx.measureText(end).width - 2, HEIGHT);
}
