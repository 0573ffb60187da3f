// The running batch: this step's token budget as a bar split into each request's scheduled
// tokens (prefill chunks striped, decodes solid; a speculating decode's drafts at its end: the
// accepted ones lined, the rejected ones ghosted, dotted while the outcome is not applied),
// the budget and max_num_seqs marked, and a
// strip of past steps beneath, newest on the right. Both paint pixels straight into ImageData:
// a 512-request batch is 512 segments narrower than a pixel, so each pixel takes the colour of
// the request whose tokens cover it.
//
//   |r7 prefill 496 ////////////|d|d|d|d|...|      |   <- budget (max_num_batched_tokens)
//   0                                 ^max_num_seqs    (a batch of decodes alone stops there)
// The labels under the bar are drawn at the theme's type size in device pixels, on a second
// row where two would overlap; the canvas says the size it drew them at (data-font-px).

import { packedFor, packHex } from "../state/palette.js";
import { fitCanvas } from "./size.js";

const STRIP_STEPS = 120;
const LABEL_FONT_PX = 12; // unless the theme says (projection)
const LINE = 1.35; // a label row's height, in font sizes

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
// a pixel column's draft role (tokenRole)
export const ROLE = { none: 0, accepted: 1, rejected: 2, pending: 3 };

/** What the token at `token` (a position along the bar) is within its segment: one of the
 * drafts at the segment's end (n = 1 + drafts for a decode), accepted, rejected, or pending
 * (accepted -1: vLLM did not apply the verify's output); else none. */
export function tokenRole(seg, token) {
  const drafts = seg.drafts ?? 0;
  const first = seg.offset + seg.n - drafts;
  if (!drafts || token < first) return ROLE.none;
  if (seg.accepted < 0) return ROLE.pending;
  return token - first < seg.accepted ? ROLE.accepted : ROLE.rejected;
}

/** A draft pixel's colour: accepted ones lined, rejected ones a ghost of the request's colour
 * on the track, pending ones dotted. */
function draftPixel(role, colour, track, x, y) {
  if (role === ROLE.accepted) return y % 4 === 0 ? STRIPE : colour;
  if (role === ROLE.rejected) return (x + y) % 4 === 0 ? colour : track;
  return x % 3 === 0 && y % 3 === 0 ? STRIPE : colour;
}

/** Where each label goes: `labels` [{x, width, align}] (the mark's x, the text's width), in
 * the order they matter; each sits `gap` / 2 beside its mark, inside [0, w], on the first row
 * where it stays `gap` clear of the others. Returns {placed: [{left, row}], rows} (pure). */
export function labelRows(labels, w, gap = 6) {
  const placed = [];
  const out = labels.map(({ x, width, align }) => {
    let left = align === "right" ? x - gap / 2 - width : x + gap / 2;
    left = Math.max(0, Math.min(w - width, left));
    let row = 0;
    while (placed.some((p) => p.row === row && left < p.right + gap && p.left < left + width + gap)) row++;
    placed.push({ left, right: left + width, row });
    return { left, row };
  });
  return { placed: out, rows: out.length ? Math.max(...out.map((p) => p.row)) + 1 : 0 };
}

/** Draw the bar; `theme` gives {ink, muted, bg, track} and, projected, fontPx. */
export function drawBatchBar(canvas, view, theme) {
  const ctx = canvas.getContext("2d");
  const [w, h, ratio] = fitCanvas(canvas);
  const scale = Math.max(view.budget, view.used, 1);
  const budgetX = Math.round((view.budget / scale) * w);
  const marks = [[budgetX - ratio, theme.ink, `budget ${view.budget}`, "right"]];
  if (view.max_num_seqs < view.budget) {
    const x = (view.max_num_seqs / scale) * w;
    marks.push([x, theme.muted, `max_num_seqs ${view.max_num_seqs}`, x < w / 2 ? "left" : "right"]);
  }
  const fontPx = Math.ceil(theme.fontPx ?? LABEL_FONT_PX);
  const key = JSON.stringify([marks, w, h, fontPx]);
  let labels = labelKeys.get(canvas);
  if (labels?.key !== key) {
    ctx.font = `${fontPx * ratio}px sans-serif`;
    const rowH = Math.ceil(fontPx * ratio * LINE);
    let { placed, rows } = labelRows(marks.map(([x, , text, align]) =>
      ({ x, width: ctx.measureText(text).width, align })), w, 6 * ratio);
    if (h - rows * rowH < rowH / 2) rows = 1; // no room for a second row: the first label only
    labels = { key, placed, rows, rowH, fresh: true };
    labelKeys.set(canvas, labels);
    canvas.dataset.fontPx = String(fontPx); // the label text's size in CSS pixels (tests read it)
  }
  const barH = Math.max(1, h - labels.rows * labels.rowH);
  paintBar(ctx, canvas, view.segments, scale, budgetX, w, barH, theme);
  if (labels.fresh) {
    labels.fresh = false;
    ctx.clearRect(0, barH, w, h - barH);
    ctx.font = `${fontPx * ratio}px sans-serif`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    marks.forEach(([, colour, text], i) => {
      const { left, row } = labels.placed[i];
      ctx.fillStyle = colour;
      if (row < labels.rows) ctx.fillText(text, left, barH + (row + 0.5) * labels.rowH);
    });
  }
  for (const [x, colour] of marks) {
    ctx.fillStyle = colour;
    ctx.fillRect(x - ratio, 0, 2 * ratio, barH + 4 * ratio);
  }
}

/** The bar's pixels: each column the colour of the request whose tokens cover it, stripes over
 * prefill chunks, the unused budget in the track colour. */
function paintBar(ctx, canvas, segs, scale, budgetX, w, barH, theme) {
  const img = imageFor(ctx, canvas, w, barH);
  const px = img.px;
  const track = packHex(theme.track);
  const at = sampleSegments(segs, scale, w);
  const col = new Uint32Array(w); // each pixel column's colour; stripes go over prefill columns
  const striped = new Uint8Array(w);
  const role = new Uint8Array(w);
  const columns = [0, 0, 0, 0]; // pixel columns by ROLE
  for (let x = 0; x < w; x++) {
    const s = at[x];
    if (s < 0) { col[x] = x < budgetX ? track : 0; continue; }
    const edge = x + 1 < w && at[x + 1] !== s && (w / scale) * segs[s].n > 4;
    col[x] = edge ? 0xffffffff : packedFor(segs[s].index ?? 0);
    striped[x] = !edge && segs[s].kind === "prefill" ? 1 : 0;
    role[x] = edge ? ROLE.none : tokenRole(segs[s], ((x + 0.5) / w) * scale);
    columns[role[x]] += 1;
  }
  const drafts = columns[ROLE.none] < w;
  // the draft columns drawn by outcome (tests read them)
  canvas.dataset.draftColumns = `accepted ${columns[ROLE.accepted]} rejected ${columns[ROLE.rejected]} pending ${columns[ROLE.pending]}`;
  for (let y = 0; y < barH; y++) {
    const row = y * w;
    px.set(col, row);
    for (let x = 0; x < w; x++) if (striped[x] && (x + y) % 6 < 2) px[row + x] = STRIPE;
    if (!drafts) continue;
    for (let x = 0; x < w; x++) if (role[x]) px[row + x] = draftPixel(role[x], col[x], track, x, y);
  }
  ctx.putImageData(img, 0, 0); // replaces the bar's rows; the labels below stay
}

const labelKeys = new WeakMap(); // canvas -> its labels' layout and what they show

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
