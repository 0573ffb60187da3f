// The running batch: this step's token budget as a bar split into each request's scheduled
// tokens (prefill chunks striped, decodes solid), the budget and max_num_seqs marked, and a
// strip of past steps beneath, newest on the right.
//
//   |r7 prefill 496 ////////////|d|d|d|d|...|      |   <- budget (max_num_batched_tokens)
//   0                                 ^max_num_seqs    (a batch of decodes alone stops there)

import { cssFor } from "../state/palette.js";

const STRIP_STEPS = 120;

function stripes(ctx, x, y, w, h) {
  ctx.save();
  ctx.beginPath();
  ctx.rect(x, y, w, h);
  ctx.clip();
  ctx.strokeStyle = "rgba(255,255,255,0.55)";
  ctx.lineWidth = 2;
  for (let i = -h; i < w; i += 6) {
    ctx.moveTo(x + i, y + h);
    ctx.lineTo(x + i + h, y);
  }
  ctx.stroke();
  ctx.restore();
}

function fitCanvas(canvas) {
  const w = Math.max(100, Math.floor(canvas.clientWidth || canvas.width));
  const h = Math.max(20, Math.floor(canvas.clientHeight || canvas.height));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  return [w, h];
}

/** Draw the bar; `theme` gives {ink, muted, bg}. */
export function drawBatchBar(canvas, view, theme) {
  const ctx = canvas.getContext("2d");
  const [w, h] = fitCanvas(canvas);
  ctx.clearRect(0, 0, w, h);
  const scale = Math.max(view.budget, view.used, 1);
  const barH = h - 18;
  ctx.fillStyle = theme.track;
  ctx.fillRect(0, 0, (view.budget / scale) * w, barH);
  ctx.font = "12px sans-serif";
  ctx.textBaseline = "middle";
  for (const s of view.segments) {
    const x = (s.offset / scale) * w;
    const sw = Math.max(1, (s.n / scale) * w);
    ctx.fillStyle = cssFor(s.index);
    ctx.fillRect(x, 0, sw, barH);
    if (s.kind === "prefill") stripes(ctx, x, 0, sw, barH);
    if (sw > 4) {
      ctx.fillStyle = theme.bg;
      ctx.fillRect(x + sw - 1, 0, 1, barH);
    }
  }
  mark(ctx, (view.budget / scale) * w - 1, barH, theme.ink, `budget ${view.budget}`, "right");
  if (view.max_num_seqs < view.budget) {
    const x = (view.max_num_seqs / scale) * w;
    mark(ctx, x, barH, theme.muted, `max_num_seqs ${view.max_num_seqs}`, x < w / 2 ? "left" : "right");
  }
}

function mark(ctx, x, barH, colour, label, align) {
  ctx.fillStyle = colour;
  ctx.fillRect(x - 1, 0, 2, barH + 4);
  ctx.textAlign = align;
  ctx.fillText(label, align === "right" ? x - 3 : x + 3, barH + 10);
}

/** Past steps as columns: each column's height is the share of the budget each request used. */
export function drawStrip(canvas, past, budget, theme, run) {
  const ctx = canvas.getContext("2d");
  const [w, h] = fitCanvas(canvas);
  ctx.clearRect(0, 0, w, h);
  const colW = w / STRIP_STEPS;
  const x0 = w - past.length * colW;
  const scale = Math.max(1, budget);
  past.forEach((p, i) => {
    let y = h;
    for (const e of p.scheduled) {
      const eh = Math.max(1, (e.n / scale) * h);
      ctx.fillStyle = cssFor(run.index.get(e.id) ?? 0);
      ctx.fillRect(x0 + i * colW, y - eh, Math.max(1, colW - 1), eh);
      y -= eh;
    }
  });
  ctx.fillStyle = theme.muted;
  ctx.fillRect(0, 0, w, 1);
}

export const STRIP_LENGTH = STRIP_STEPS;
