// The running batch: this step's token budget as a bar split into each request's scheduled
// tokens (prefill chunks striped, decodes solid), the budget and max_num_seqs marked, and a
// strip of past steps beneath, newest on the right. Both paint pixels straight into ImageData:
// a 512-request batch is 512 segments narrower than a pixel, so each pixel takes the colour of
// the request whose tokens cover it.
//
//   |r7 prefill 496 ////////////|d|d|d|d|...|      |   <- budget (max_num_batched_tokens)
//   0                                 ^max_num_seqs    (a batch of decodes alone stops there)

import { packedFor, packHex } from "../state/palette.js";
import { fitCanvas } from "./size.js";

const STRIP_STEPS = 120;
const LABEL_H = 22;


/** For each of `pixels` slots across `scale` tokens, the segment covering its centre (or -1). */
export function sampleSegments(segments, scale, pixels) {
  const out = new Int32Array(pixels).fill(-1);
  let s = 0;
  for (let p = 0; p < pixels; p++) {
    const token = ((p + 0.5) / pixels) * scale;
    while (s < segments.length && segments[s].offset + segments[s].n <= token) s++;
    if (s >= segments.length) break;
    if (segments[s].offset <= token) out[p] = s;
  }
  return out;
}

// One ImageData per canvas and size, reused frame after frame.
const images = new WeakMap();

function imageFor(ctx, canvas, w, h) {
  let img = images.get(canvas);
  if (!img || img.width !== w || img.height !== h) {
    img = ctx.createImageData(w, h);
    images.set(canvas, img);
    img.px = new Uint32Array(img.data.buffer);
  }
  return img;
}

const STRIPE = 0xb0ffffff;

/** Draw the bar; `theme` gives {ink, muted, bg, track}. */
export function drawBatchBar(canvas, view, theme) {
  const ctx = canvas.getContext("2d");
  const [w, h] = fitCanvas(canvas);
  const barH = h - LABEL_H;
  const scale = Math.max(view.budget, view.used, 1);
  const budgetX = Math.round((view.budget / scale) * w);
  const img = imageFor(ctx, canvas, w, barH);
  const px = img.px;
  const track = packHex(theme.track);
  const segs = view.segments;
  const at = sampleSegments(segs, scale, w);
  const col = new Uint32Array(w); // each pixel column's colour; stripes go over prefill columns
  const striped = new Uint8Array(w);
  for (let x = 0; x < w; x++) {
    const s = at[x];
    if (s < 0) { col[x] = x < budgetX ? track : 0; continue; }
    const edge = x + 1 < w && at[x + 1] !== s && (w / scale) * segs[s].n > 4;
    col[x] = edge ? 0xffffffff : packedFor(segs[s].index ?? 0);
    striped[x] = !edge && segs[s].kind === "prefill" ? 1 : 0;
  }
  for (let y = 0; y < barH; y++) {
    const row = y * w;
    px.set(col, row);
    for (let x = 0; x < w; x++) if (striped[x] && (x + y) % 6 < 2) px[row + x] = STRIPE;
  }
  ctx.putImageData(img, 0, 0); // replaces the bar's rows; the labels below stay
  const marks = [[budgetX - 1, theme.ink, `budget ${view.budget}`, "right"]];
  if (view.max_num_seqs < view.budget) {
    const x = (view.max_num_seqs / scale) * w;
    marks.push([x, theme.muted, `max_num_seqs ${view.max_num_seqs}`, x < w / 2 ? "left" : "right"]);
  }
  const key = JSON.stringify([marks, w, h, theme.fontPx]);
  const labelled = labelKeys.get(canvas) === key;
  if (!labelled) {
    labelKeys.set(canvas, key);
    ctx.clearRect(0, barH, w, h - barH);
    ctx.font = `${theme.fontPx ?? 12}px sans-serif`;
    ctx.textBaseline = "middle";
  }
  for (const [x, colour, label, align] of marks) {
    ctx.fillStyle = colour;
    ctx.fillRect(x - 1, 0, 2, barH + 4);
    if (labelled) continue;
    ctx.textAlign = align;
    ctx.fillText(label, align === "right" ? x - 3 : x + 3, barH + LABEL_H / 2 + 2);
  }
}

const labelKeys = new WeakMap(); // what a canvas's label row shows

/** One past step as a column of packed colours, bottom first, cached per step and height. */
function stripColumn(cache, step, scheduled, budget, h, run) {
  const key = `${step}:${h}:${budget}`;
  let col = cache.get(key);
  if (col) return col;
  let offset = 0;
  const segs = scheduled.map((e) => {
    const seg = { offset, n: e.n, colour: packedFor(run.index.get(e.id) ?? 0) };
    offset += e.n;
    return seg;
  });
  const at = sampleSegments(segs, Math.max(1, budget), h);
  col = new Uint32Array(h);
  for (let y = 0; y < h; y++) col[y] = at[y] < 0 ? 0 : segs[at[y]].colour;
  cache.set(key, col);
  if (cache.size > 4 * STRIP_STEPS) cache.delete(cache.keys().next().value);
  return col;
}

const stripCaches = new WeakMap();
const stripShown = new WeakMap(); // canvas -> {steps, w, h, budget, run} the pixels show

/** How many columns of `steps` are new on the right when it is `old` minus some leading steps
 * plus new ones (the old columns just slide left); all of them when nothing is kept. */
export function stripShift(old, steps) {
  for (let d = 0; d <= old.length; d++) {
    const keep = old.length - d;
    if (keep > steps.length) continue;
    let same = true;
    for (let i = 0; i < keep && same; i++) same = old[d + i] === steps[i];
    if (same) return steps.length - keep;
  }
  return steps.length;
}

/** Past steps as columns, newest on the right: from the bottom, each request's share of the
 * budget. While playing, the old columns slide left and only the new one is painted. */
export function drawStrip(canvas, past, budget, theme, run) {
  const ctx = canvas.getContext("2d");
  const [w, h] = fitCanvas(canvas);
  let cache = stripCaches.get(run);
  if (!cache) stripCaches.set(run, (cache = new Map()));
  const img = imageFor(ctx, canvas, w, h);
  const px = img.px;
  const colW = Math.max(1, Math.floor(w / STRIP_STEPS));
  const steps = past.map((p) => p.step);
  const was = stripShown.get(canvas);
  const same = was && was.w === w && was.h === h && was.budget === budget && was.run === run &&
    was.img === img;
  let k = same ? stripShift(was.steps, steps) : past.length;
  if (k >= past.length) {
    px.fill(0);
    k = past.length;
  } else if (k > 0) {
    const shift = Math.min(w, k * colW);
    for (let y = 0; y < h; y++) {
      px.copyWithin(y * w, y * w + shift, (y + 1) * w);
      px.fill(0, (y + 1) * w - shift, (y + 1) * w);
    }
  }
  stripShown.set(canvas, { steps, w, h, budget, run, img });
  const x0 = w - past.length * colW;
  const right = colW >= 3 ? colW - 1 : colW;
  for (let i = past.length - k; i < past.length; i++) {
    const p = past[i];
    const col = stripColumn(cache, p.step, p.scheduled, budget, h, run);
    const left = x0 + i * colW;
    if (left < 0) continue;
    for (let y = 0; y < h; y++) {
      const c = col[y];
      if (c !== 0) px.fill(c, (h - 1 - y) * w + left, (h - 1 - y) * w + left + right);
    }
  }
  if (k > 0) ctx.putImageData(img, 0, 0);
  ctx.fillStyle = theme.muted;
  ctx.fillRect(0, 0, w, 1);
}

export const STRIP_LENGTH = STRIP_STEPS;
