// Compare mode: 2-4 configs on one workload side by side, each with its pool and batch, and the
// lesson's table (throughput, mean TTFT, P99 ITL, KV waste) updating live at each cursor, with
// what its rows stand on said under it (state/lesson_table.js).

import { drawBatchBar } from "../render/batch.js";
import { createCharts, fitCharts } from "../render/charts.js";
import { KvGrid } from "../render/kvgrid.js";
import { boxOf, widthOf } from "../render/size.js";
import { drainChanged } from "../state/reduce.js";
import { finishedCell, tableNote, tableRow } from "../state/lesson_table.js";
import { batchView, lanes } from "../state/select.js";
import { themeColours } from "./explore.js";
import { textPx } from "./projection.js";

const setText = (el, text) => { if (el.textContent !== text) el.textContent = text; };
const fmt = (v, digits = 1) => (v == null || Number.isNaN(v) ? "-" : v.toFixed(digits));

const THROUGHPUT_CHART = [{ key: "throughput", title: "Output tokens/s", unit: "tokens/s",
  series: [["output_tokens_per_s", "output tokens/s", "#0072b2"]] }];

export class CompareView {
  constructor(root, uPlot) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.uPlot = uPlot;
    this.panes = [];
    this.theme = themeColours(false);
    this.dark = false;
    this.yMax = 0; // one y-scale for every pane's throughput chart
    this.seen = []; // per pane: {length, max} of its throughput column so far
  }

  /** The largest throughput any pane has shown; every chart's y-scale reaches it. */
  sharedMax(panes) {
    let top = 0;
    panes.forEach((pane, i) => {
      const col = pane.history.cols.output_tokens_per_s;
      const s = this.seen[i]?.length <= pane.history.length ? this.seen[i] : { length: 0, max: 0 };
      for (let k = s.length; k < pane.history.length; k++) if (col[k] > s.max) s.max = col[k];
      s.length = pane.history.length;
      this.seen[i] = s;
      top = Math.max(top, s.max);
    });
    return top;
  }

  shareScale(panes) {
    const top = this.sharedMax(panes);
    if (top === this.yMax) return;
    this.yMax = top;
    for (const p of this.panes) p.charts?.charts.forEach((c) => c.u.setScale("y", { min: 0, max: top * 1.05 || 1 }));
  }

  /** Projection's theme and type size; the panes are rebuilt at the next draw. */
  setDark(dark) {
    this.dark = dark;
    this.theme = { ...themeColours(dark), fontPx: dark ? Math.ceil(textPx(this.doc)) : undefined };
    for (const p of this.panes) p.charts?.destroy();
    this.panes = [];
  }

  build(panes) {
    const box = this.root.querySelector("#compare-panes");
    for (const p of this.panes) p.charts?.destroy();
    box.replaceChildren();
    const make = (tag, className = "") => Object.assign(this.doc.createElement(tag), { className });
    this.panes = panes.map((pane, i) => {
      const el = make("section", "pane panel");
      el.dataset.pane = String(i);
      const title = make("h3");
      title.textContent = pane.label; // before the panes are measured
      const [kvWrap, kv, bar, info] = [make("div", "kv-wrap"), make("canvas", "kv"), make("canvas", "batch-bar"), make("p", "info")];
      const [clock, counts, chartBox] = [make("span", "pane-clock"), make("span"), make("div", "pane-charts")];
      kvWrap.append(kv);
      info.append(clock, counts);
      el.append(title, kvWrap, bar, info, chartBox);
      box.appendChild(el);
      const spec = { ...THROUGHPUT_CHART[0], range: (u, min, max) => [0, Math.max(max, this.yMax) * 1.05 || 1] };
      const charts = this.uPlot ? createCharts(this.uPlot, chartBox, this.theme, [spec], 300) : null;
      const grid = new KvGrid(kv);
      grid.setTheme(this.dark);
      return { el, title, kvWrap, kv, bar, info, clock, counts, grid, chartBox, charts, sized: null };
    });
    // projected, each pane's chart fills the box its column gives it (the pool: drawPane)
    if (!this.dark) return;
    for (const p of this.panes) p.charts && fitCharts(p.charts.charts, p.chartBox.clientWidth, p.chartBox.clientHeight);
  }

  draw(dirty, panes, now) {
    if (this.panes.length !== panes.length || dirty.has("all")) this.build(panes);
    if (dirty.has("all")) this.seen = [];
    panes.forEach((pane, i) => this.drawPane(this.panes[i], pane, now));
    this.shareScale(panes);
    this.drawTable(panes);
  }

  drawPane(view, pane, now) {
    const { run, history } = pane;
    setText(view.title, pane.label);
    const [width, height] = this.dark ? boxOf(view.kvWrap) : [Math.max(200, widthOf(view.el) - 24), 260];
    const key = `${run.numBlocks}:${width}:${height}`;
    if (view.sized !== key) {
      view.sized = key;
      view.grid.resize(run.numBlocks, width, height);
      drainChanged(run);
      view.grid.drawAll(run, now);
    } else {
      view.grid.drawChanged(run, drainChanged(run), now, false);
    }
    const batch = batchView(run);
    drawBatchBar(view.bar, batch, this.theme);
    const l = lanes(run);
    const rec = run.record;
    setText(view.clock, rec ? `step ${rec.step} · t = ${(rec.time_s + rec.step_time_ms / 1000).toFixed(3)} s · ` : "");
    setText(view.counts, rec
      ? `running ${l.running.length} · waiting ${l.waiting.length} · preempted ${l.preempted.length}` +
        (pane.status === "done" ? " · done" : "")
      : "waiting for the server…");
    view.charts?.update(history, rec ? rec.time_s + rec.step_time_ms / 1000 : undefined);
  }

  drawTable(panes) {
    const body = this.root.querySelector("#lesson tbody");
    const rows = panes.map(tableRow);
    body.replaceChildren(...rows.map((row, i) => {
      const tr = this.doc.createElement("tr");
      for (const text of [panes[i].label, fmt(row.output_throughput, 0), fmt(row.mean_ttft_ms),
        fmt(row.p99_itl_ms), fmt(row.kv_waste_pct), finishedCell(row)]) {
        const td = this.doc.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      }
      return tr;
    }));
    const note = this.root.querySelector("#lesson-basis");
    const text = tableNote(rows);
    if (note && note.textContent !== text) note.textContent = text;
  }
}
