import { test } from "node:test";
import assert from "node:assert/strict";
import { chartModel, chartSvg, niceTicks } from "../../frontend/static/js/render/chart_svg.js";
import { CHART_SPECS } from "../../frontend/static/js/render/charts.js";
import { findAll, parseXml } from "./xml.mjs";

const MODEL = {
  title: "TTFT p50 / p99 (rolling)", width: 420, height: 170,
  x: { min: 0, max: 2, label: "time (s)" }, y: { min: 0, max: 40, label: "ms" },
  series: [
    { label: "TTFT p50", stroke: "#117733", xs: [0, 0.5, 1, 1.5, 2], ys: [null, 10, 20, 30, 40] },
    { label: "TTFT p99", stroke: "#882255", xs: [0, 0.5, 1, 1.5, 2], ys: [5, 15, null, 35, 40] },
  ],
};

const texts = (root) => findAll(root, "text").map((t) => t.text);
const points = (line) => line.attrs.points.trim().split(/\s+/).map((p) => p.split(",").map(Number));

test("the parser refuses what is not well-formed", () => {
  assert.throws(() => parseXml("<svg><g></svg>"), /mismatched/);
  assert.throws(() => parseXml("<svg a=1/>"), /unquoted/);
  assert.throws(() => parseXml("<svg>a & b</svg>"), /entity/);
  assert.throws(() => parseXml("<svg/><svg/>"), /after the root/);
  assert.equal(parseXml('<a x="&lt;&#65;"><b/>t</a>').attrs.x, "<A");
});

test("an SVG document with one polyline per series, its points, the title and axis labels", () => {
  const root = parseXml(chartSvg(MODEL));
  assert.equal(root.name, "svg");
  assert.equal(root.attrs.xmlns, "http://www.w3.org/2000/svg");
  assert.equal(findAll(root, "title")[0].text, MODEL.title);
  const lines = findAll(root, "polyline");
  assert.deepEqual(lines.map((l) => l.attrs["data-series"]), ["TTFT p50", "TTFT p99"]);
  assert.deepEqual(lines.map((l) => l.attrs.stroke), ["#117733", "#882255"]);
  assert.deepEqual(lines.map((l) => points(l).length), [4, 4]); // the null values are skipped
  const t = texts(root);
  for (const s of [MODEL.title, "time (s)", "ms", "TTFT p50", "TTFT p99"]) assert.ok(t.includes(s), s);
  for (const tick of ["0.0", "1.0", "2.0", "0", "20", "40"]) assert.ok(t.includes(tick), tick);
});

test("points sit on the scales: x min at the plot's left edge, y max at its top", () => {
  const root = parseXml(chartSvg(MODEL));
  const rect = findAll(findAll(root, "clipPath")[0], "rect")[0].attrs;
  const [left, top, w, h] = [rect.x, rect.y, rect.width, rect.height].map(Number);
  const p99 = points(findAll(root, "polyline")[1]);
  assert.deepEqual(p99[0], [left, top + h - (5 / 40) * h]);
  assert.deepEqual(p99.at(-1), [left + w, top]);
  assert.ok(p99.every(([x, y]) => x >= left && x <= left + w && y >= top && y <= top + h));
});

test("labels are escaped, and an empty chart is still a document", () => {
  const model = { ...MODEL, title: 'a <b> & "c"', series: [{ ...MODEL.series[0], xs: [], ys: [] }],
    x: { min: null, max: null, label: "t" }, y: { min: null, max: null, label: "u" } };
  const root = parseXml(chartSvg(model));
  assert.equal(findAll(root, "title")[0].text, 'a <b> & "c"');
  assert.equal(findAll(root, "polyline")[0].attrs.points, "");
});

test("ticks step by 1, 2 or 5 times a power of ten and stay inside the range", () => {
  assert.deepEqual(niceTicks(0, 1, 5).ticks, [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0, 100, 4).ticks, [0, 50, 100]);
  for (const [lo, hi] of [[0.13, 0.97], [3, 4007], [-12, 7.5], [1e-4, 3e-4]]) {
    const { step, ticks } = niceTicks(lo, hi, 5);
    const mant = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
    assert.ok([1, 2, 5].some((m) => Math.abs(mant - m) < 1e-9), `${lo}..${hi}: ${step}`);
    assert.ok(ticks.length >= 2 && ticks.every((v) => v >= lo && v <= hi), `${lo}..${hi}`);
  }
});

test("a chart's model: its data and scales, only the series its legend shows", () => {
  const spec = CHART_SPECS.find((s) => s.key === "queues");
  const u = { width: 420, height: 170, data: [[0, 1], [1, 2], [3, 4], [0, 0], [0, 1]],
    scales: { x: { min: 0, max: 1 }, y: { min: 0, max: 4 } },
    axes: [{ label: "time (s)" }, { label: "requests" }],
    series: [{}, { show: true }, { show: false }, { show: true }, { show: true }] };
  const m = chartModel({ spec, u });
  assert.deepEqual(m.series.map((s) => s.label), ["running", "preempted", "preemptions (total)"]);
  assert.deepEqual(m.series[1].ys, [0, 0]);
  assert.deepEqual([m.x.label, m.y.label, m.y.max, m.title], ["time (s)", "requests", 4, spec.title]);
  assert.equal(findAll(parseXml(chartSvg(m)), "polyline").length, 3);
});

test("a legend too wide for one row wraps, and the document grows to hold it", () => {
  const labels = ["running", "waiting", "preempted", "preemptions (total)"];
  const series = labels.map((label) => ({ label, stroke: "#000", xs: [0, 1], ys: [0, 1] }));
  const root = parseXml(chartSvg({ ...MODEL, series }));
  const keys = findAll(findAll(root, "g").find((g) => g.attrs.class === "legend"), "line");
  assert.equal(keys.length, 4);
  assert.ok(new Set(keys.map((k) => k.attrs.y1)).size > 1, "more than one row");
  assert.ok(keys.every((k) => Number(k.attrs.x1) >= 0 && Number(k.attrs.x2) < MODEL.width));
  assert.ok(Number(root.attrs.height) > MODEL.height);
  const rect = findAll(findAll(root, "clipPath")[0], "rect")[0].attrs;
  const lastRow = Math.max(...keys.map((k) => Number(k.attrs.y1)));
  assert.ok(Number(rect.y) > lastRow, "the plot starts under the legend");
});
