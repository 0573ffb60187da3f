// A chart as a standalone SVG document, built from the chart's own data and scales (not its
// pixels): title, legend, both axes with tick labels and units, one polyline per visible series.

const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ENTITIES[c]);
const r2 = (v) => String(Math.round(v * 100) / 100);

// Space around the plot area: the title and legend above, tick labels and axis titles beside.
const PAD = { top: 50, right: 14, bottom: 40, left: 66 };

/** Round tick values covering [min, max] at a 1-2-5 step, about `count` of them. */
export function niceTicks(min, max, count = 5) {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max <= min) return { step: 1, ticks: [] };
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw * (1 - 1e-9));
  const ticks = [];
  for (let k = Math.ceil(min / step - 1e-9); k * step <= max + step * 1e-9; k += 1) {
    ticks.push(Number((k * step).toPrecision(12)));
  }
  return { step, ticks };
}

function tickText(v, step) {
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(Math.min(digits, 6));
}

/** A scale's [min, max], widened to something drawable when it holds no span. */
function span({ min, max }) {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  return max > min ? [min, max] : [min - 1, max + 1];
}

/** The series' [x, y] pairs where both are numbers (the chart spans gaps). */
export function seriesPoints(xs, ys) {
  const out = [];
  for (let i = 0; i < Math.min(xs.length, ys.length); i += 1) {
    if (Number.isFinite(xs[i]) && Number.isFinite(ys[i])) out.push([xs[i], ys[i]]);
  }
  return out;
}

function axes(model, box, sx, sy, ink, grid) {
  const [x0, x1] = span(model.x);
  const [y0, y1] = span(model.y);
  const xt = niceTicks(x0, x1, 6);
  const yt = niceTicks(y0, y1, 4);
  const bottom = box.top + box.height;
  const out = [`<g class="axis axis-x" stroke="${grid}">`,
    `<line x1="${box.left}" y1="${bottom}" x2="${box.left + box.width}" y2="${bottom}" stroke="${ink}"/>`];
  for (const v of xt.ticks) {
    const x = r2(sx(v));
    out.push(`<line x1="${x}" y1="${box.top}" x2="${x}" y2="${bottom + 4}"/>`,
      `<text x="${x}" y="${bottom + 16}" text-anchor="middle" fill="${ink}" stroke="none">${tickText(v, xt.step)}</text>`);
  }
  out.push(`<text class="axis-label" x="${r2(box.left + box.width / 2)}" y="${bottom + 34}" text-anchor="middle" fill="${ink}" stroke="none">${esc(model.x.label)}</text>`,
    "</g>", `<g class="axis axis-y" stroke="${grid}">`,
    `<line x1="${box.left}" y1="${box.top}" x2="${box.left}" y2="${bottom}" stroke="${ink}"/>`);
  for (const v of yt.ticks) {
    const y = r2(sy(v));
    out.push(`<line x1="${box.left - 4}" y1="${y}" x2="${box.left + box.width}" y2="${y}"/>`,
      `<text x="${box.left - 7}" y="${y}" dy="0.35em" text-anchor="end" fill="${ink}" stroke="none">${tickText(v, yt.step)}</text>`);
  }
  const my = r2(box.top + box.height / 2);
  out.push(`<text class="axis-label" x="16" y="${my}" transform="rotate(-90 16 ${my})" text-anchor="middle" fill="${ink}" stroke="none">${esc(model.y.label)}</text>`, "</g>");
  return out;
}

/** Legend items laid out in rows that fit `width`: [{x, y, series}] and the rows' bottom. */
function legendLayout(series, width) {
  const items = [];
  let [x, y] = [PAD.left, 36];
  for (const s of series) {
    const w = 30 + 6.5 * String(s.label).length; // about 6.5 px a character at 11 px
    if (x > PAD.left && x + w > width - PAD.right) [x, y] = [PAD.left, y + 15];
    items.push({ x, y, series: s });
    x += w + 12;
  }
  return { items, bottom: y };
}

function legend(items, ink) {
  const out = ['<g class="legend">'];
  for (const { x, y, series: s } of items) {
    out.push(`<line x1="${x}" y1="${y}" x2="${x + 18}" y2="${y}" stroke="${esc(s.stroke)}" stroke-width="2"/>`,
      `<text x="${x + 23}" y="${y}" dy="0.35em" fill="${ink}">${esc(s.label)}</text>`);
  }
  out.push("</g>");
  return out;
}

/** The SVG document of a chart. `model`: {title, width, height, x: {min, max, label},
 * y: {min, max, label}, series: [{label, stroke, xs, ys}] (the visible ones)}. */
export function chartSvg(model, { ink = "#222222", grid = "#dddddd", background = "#ffffff" } = {}) {
  const { width } = model;
  const keys = legendLayout(model.series, width);
  const top = keys.bottom + 14;
  const height = model.height + (top - PAD.top); // the plot keeps its height under a taller legend
  const box = { left: PAD.left, top, width: Math.max(1, width - PAD.left - PAD.right),
    height: Math.max(1, model.height - PAD.top - PAD.bottom) };
  const [x0, x1] = span(model.x);
  const [y0, y1] = span(model.y);
  const sx = (v) => box.left + ((v - x0) / (x1 - x0)) * box.width;
  const sy = (v) => box.top + box.height - ((v - y0) / (y1 - y0)) * box.height;
  const lines = model.series.map((s) => {
    const points = seriesPoints(s.xs, s.ys).map(([x, y]) => `${r2(sx(x))},${r2(sy(y))}`).join(" ");
    return `<polyline data-series="${esc(s.label)}" fill="none" stroke="${esc(s.stroke)}" stroke-width="2" stroke-linejoin="round" points="${points}"/>`;
  });
  return ['<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${esc(model.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="${background}"/>`,
    `<text class="chart-title" x="${r2(width / 2)}" y="18" text-anchor="middle" font-size="13" font-weight="bold" fill="${ink}">${esc(model.title)}</text>`,
    ...legend(keys.items, ink), ...axes(model, box, sx, sy, ink, grid),
    `<clipPath id="plot-area"><rect x="${box.left}" y="${box.top}" width="${box.width}" height="${box.height}"/></clipPath>`,
    '<g class="series" clip-path="url(#plot-area)">', ...lines, "</g>", "</svg>", ""].join("\n");
}

/** The model of one of createCharts' charts ({spec, u}): its data, scales, axis labels and the
 * series its legend shows. */
export function chartModel({ spec, u }) {
  const series = spec.series
    .map(([, label, stroke], k) => ({ label, stroke, xs: u.data[0], ys: u.data[k + 1] ?? [] }))
    .filter((_, k) => u.series[k + 1]?.show !== false);
  return { title: spec.title, width: u.width, height: u.height,
    x: { min: u.scales.x.min, max: u.scales.x.max, label: u.axes[0].label },
    y: { min: u.scales.y.min, max: u.scales.y.max, label: u.axes[1].label }, series };
}
