// The overview strip: the whole run's series in one canvas, each in its own band with its name
// and maximum in a gutter on the left, broken where no step ran; a time axis below; the brushed
// window and the playback cursor drawn over them. Drawn at the device's pixel ratio.

import { scaledSeries } from "../state/overview.js";

const COLORS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"]; // Okabe-Ito: colour-blind safe
export const GUTTER_PX = 190; // the series' names, left of the plot
const AXIS_PX = 16; // the time axis' labels, below it
const FONT = "12px system-ui, sans-serif";

/** Where the plot lies in the canvas, in CSS pixels: brush fractions are of [x0, x0 + w]. */
export function plotArea(cssWidth) {
  const x0 = Math.min(GUTTER_PX, Math.floor(cssWidth / 3));
  return { x0, w: Math.max(1, cssWidth - x0) };
}

function fmt(v) {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function drawSeries(ctx, s, k, { x0, w }, top, band) {
  ctx.fillStyle = COLORS[k];
  ctx.fillRect(4, top + band / 2 - 5, 10, 10);
  ctx.fillStyle = "#333";
  ctx.fillText(`${s.label}, max ${fmt(s.max)} ${s.unit}`, 18, top + band / 2);
  ctx.strokeStyle = COLORS[k];
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  s.points.forEach((v, i) => {
    if (v == null) { pen = false; return; } // a gap: nothing ran in this bin
    const x = x0 + ((i + 0.5) / s.points.length) * w;
    const y = top + band - 2 - v * (band - 4);
    if (pen) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    pen = true;
  });
  ctx.stroke();
}

function drawAxis(ctx, data, { x0, w }, h) {
  ctx.fillStyle = "#555";
  ctx.textBaseline = "bottom";
  const ticks = Math.max(2, Math.min(8, Math.floor(w / 140)));
  for (let k = 0; k <= ticks; k++) {
    const t = data.start_s + ((data.end_s - data.start_s) * k) / ticks;
    const text = `${fmt(t)} s`;
    const tw = ctx.measureText(text).width;
    ctx.fillText(text, Math.min(x0 + w - tw - 2, Math.max(x0, x0 + (w * k) / ticks - tw / 2)), h);
  }
}

/** Draw `data` (an overview answer) with `brush` ([a, b] fractions of the plot or null) and
 * `cursorS`; returns the plot area. */
export function drawOverview(canvas, data, brush, cursorS) {
  const ctx = canvas.getContext("2d");
  const cssW = canvas.clientWidth || 600;
  const h = canvas.clientHeight || 140;
  const dpr = canvas.ownerDocument?.defaultView?.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(h * dpr);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, cssW, h);
  const area = plotArea(cssW);
  if (!data) return area;
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const series = scaledSeries(data.columns, data.bin_s);
  const band = (h - AXIS_PX) / series.length;
  series.forEach((s, k) => drawSeries(ctx, s, k, area, k * band, band));
  drawAxis(ctx, data, area, h);
  if (brush) {
    const [a, b] = brush[0] <= brush[1] ? brush : [brush[1], brush[0]];
    ctx.fillStyle = "rgba(0, 114, 178, 0.15)";
    ctx.fillRect(area.x0 + a * area.w, 0, (b - a) * area.w, h - AXIS_PX);
  }
  const span = data.end_s - data.start_s;
  if (cursorS != null && span > 0) {
    ctx.strokeStyle = "#000";
    const x = area.x0 + ((cursorS - data.start_s) / span) * area.w;
    ctx.beginPath();
    ctx.moveTo(x, 0);
    ctx.lineTo(x, h - AXIS_PX);
    ctx.stroke();
  }
  return area;
}
