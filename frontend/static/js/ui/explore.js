// The explore view: wires one pane's state to the pool grid, block table, batch bar and strip,
// lanes, timeline and charts, and draws only the parts a frame's dirty keys touched.

import { drawBatchBar, drawStrip, STRIP_LENGTH } from "../render/batch.js";
import { CHART_SPECS, createCharts, fitCharts } from "../render/charts.js";
import { drawHighlight, KvGrid } from "../render/kvgrid.js";
import { PoolDensity } from "../render/kv_density.js";
import { drawQueues } from "../render/queues.js";
import { forgetSizes, sizeGeneration, widthOf } from "../render/size.js";
import { rowAt, Timeline } from "../render/timeline.js";
import { DensityView } from "../render/timeline_density.js";
import { requestCount, timelineMode } from "../state/timeline_window.js";
import { timelineInfo, TimelineView } from "./timeline_view.js";
import { drainChanged, isPlaceholder } from "../state/reduce.js";
import { textPx } from "./projection.js";
import { batchView, blockInfo, draftsCaption, blockTable, lanes, lessonRow, pastBatches, requestInfo } from "../state/select.js";

const $ = (doc, id) => doc.getElementById(id);
// Projection shows the charts a lecture reads from the back row, in one row.
const PROJECTED_CHARTS = ["throughput", "itl", "kv"];

export function themeColours(dark) {
  return dark
    ? { ink: "#fff", muted: "#ccc", bg: "#000", track: "#222", grid: "#333", waiting: "#666",
      stalled: "#444", preempted: "#ff6b5e", waiting_for_kv: "#ee99cc", selected: "#333", cursor: "#ffd000", chunkEdge: "#fff" }
    : { ink: "#1b1f24", muted: "#5b6470", bg: "#f7f8fa", track: "#e3e7eb", grid: "#e3e7eb",
      waiting: "#b8bec6", stalled: "#dde1e6", preempted: "#d55e00", waiting_for_kv: "#aa3377", selected: "#e8eef7",
      cursor: "#b3261e", chunkEdge: "#1b1f24" };
}

export class ExploreView {
  /** `plugins`: uPlot plugins every chart gets (the event markers); `sessionId()`: the
   * session whose timeline the server aggregates, `getJson(url)` asks it for that. */
  constructor(doc, uPlot, onSelect, { plugins = [], sessionId = () => null, getJson } = {}) {
    this.doc = doc;
    this.el = {
      grid: $(doc, "kv-grid"), overlay: $(doc, "kv-overlay"), poolInfo: $(doc, "pool-info"),
      blockInfo: $(doc, "block-info"), blockTable: $(doc, "block-table"),
      bar: $(doc, "batch-bar"), strip: $(doc, "batch-strip"), batchInfo: $(doc, "batch-info"),
      timeline: $(doc, "timeline"), timelineCursor: $(doc, "timeline-cursor"),
      timelineInfo: $(doc, "timeline-info"),
      charts: $(doc, "charts"),
      lanes: {
        waiting: $(doc, "lane-waiting"), running: $(doc, "lane-running"),
        preempted: $(doc, "lane-preempted"), waitingCount: $(doc, "waiting-count"),
        runningCount: $(doc, "running-count"), preemptedCount: $(doc, "preempted-count"),
      },
    };
    this.grid = new KvGrid(this.el.grid);
    this.density = new PoolDensity(this.el.grid, doc.getElementById("pool-whole"));
    this.timeline = new Timeline(this.el.timeline, this.el.timelineCursor);
    this.timelineView = new TimelineView(this.el.timeline, { sessionId, getJson, changed: () => onSelect({}) });
    this.stateDensity = new DensityView(this.el.timeline, this.el.timelineCursor);
    this.timelineLayout = null; // the layout last drawn: rows or density
    this.dark = false;
    this.theme = themeColours(false);
    this.uPlot = uPlot;
    this.plugins = plugins;
    this.charts = uPlot ? createCharts(uPlot, this.el.charts, this.theme, undefined, 420, 170, plugins) : null;
    this.selected = null;
    this.hoverBlock = -1;
    this.sized = null;
    this.onSelect = onSelect;
    this.bindPointer();
  }

  bindPointer() {
    const { grid, timeline, lanes: l } = this.el;
    grid.addEventListener("mousemove", (ev) => {
      const [x, y] = [ev.offsetX * (grid.width / grid.clientWidth), ev.offsetY * (grid.height / grid.clientHeight)];
      this.hoverBlock = this.density.active ? this.density.blockAt(x, y) : this.grid.blockAt(x, y);
      this.onSelect({ block: this.hoverBlock });
    });
    grid.addEventListener("click", (ev) => {
      const scale = grid.width / grid.clientWidth;
      if (this.density.click(ev.offsetX * scale, ev.offsetY * scale)) this.onSelect({ block: -1 });
      else this.onSelect({ fromBlock: this.hoverBlock });
    });
    this.density.onChange = () => this.onSelect({ block: -1 });
    this.doc.getElementById("pool-whole")?.addEventListener("click", () => this.density.zoomOut());
    timeline.addEventListener("click",
      (ev) => this.onSelect({ request: rowAt(this.timelineLayout, ev.offsetY) }));
    for (const lane of [l.waiting, l.running, l.preempted]) {
      lane.addEventListener("click", (ev) => {
        const id = ev.target?.dataset?.request;
        if (id !== undefined) this.onSelect({ request: id });
      });
    }
  }

  setDark(dark) {
    forgetSizes();
    this.dark = dark;
    // canvas text in whole CSS pixels, at least projection's type size
    this.theme = { ...themeColours(dark), fontPx: dark ? Math.ceil(textPx(this.doc)) : undefined };
    this.grid.setTheme(dark);
    this.sized = null;
    if (this.charts) {
      this.charts.destroy();
      if (!dark) {
        this.charts = createCharts(this.uPlot, this.el.charts, this.theme, undefined, this.chartWidth(), 170, this.plugins);
        return;
      }
      const specs = CHART_SPECS.filter((s) => PROJECTED_CHARTS.includes(s.key));
      this.charts = createCharts(this.uPlot, this.el.charts, this.theme, specs, 160, 60, this.plugins);
      this.fitProjectedCharts();
    }
  }

  /** Projected charts share the charts panel's row, each whole inside it with its title and
   * legend. */
  fitProjectedCharts() {
    const box = this.el.charts;
    const n = this.charts.charts.length;
    const gap = parseFloat(this.doc.defaultView.getComputedStyle(box).columnGap) || 0;
    fitCharts(this.charts.charts, (box.clientWidth - gap * (n - 1)) / n, box.clientHeight);
  }

  chartWidth() {
    return Math.max(260, Math.min(520, (this.el.charts.clientWidth || 520) - 8));
  }

  ensureSize(run) {
    const width = Math.max(200, widthOf(this.el.grid.parentElement.parentElement) - 24);
    const height = this.dark ? this.projectedPoolHeight() : 420;
    const key = `${run.numBlocks}:${width}:${height}`;
    if (this.sized === key) return false;
    this.sized = key;
    this.grid.resize(run.numBlocks, width, height);
    this.density.resize(run.numBlocks, width, height);
    return true;
  }

  /** Projected, the pool fills what its panel has left below its heading and info line. */
  projectedPoolHeight() {
    if (this.poolHeight?.generation === sizeGeneration()) return this.poolHeight.h;
    const wrap = this.el.grid.parentElement;
    const panel = wrap.parentElement.getBoundingClientRect();
    const h = Math.max(40, Math.floor(panel.bottom - wrap.getBoundingClientRect().top - 14));
    this.poolHeight = { generation: sizeGeneration(), h };
    return h;
  }

  /** Draw what `dirty` names for `pane`; returns true when an animation wants another frame. */
  draw(dirty, pane, now) {
    const { run, history } = pane;
    const resized = this.ensureSize(run);
    const all = dirty.has("all") || resized;
    const step = all || dirty.has("step");
    let animating = false;
    if (this.density.active) { // a big pool: aggregated, or one region's cells
      drainChanged(run);
      this.timed("grid", () => this.density.draw(run, this.theme));
      this.drawPoolInfo(run, history);
    } else if (all) {
      drainChanged(run);
      this.grid.drawAll(run, now);
    } else {
      animating = this.timed("grid", () =>
        this.grid.drawChanged(run, step ? drainChanged(run) : [], now, pane.playing));
    }
    if (step || dirty.has("select") || dirty.has("hover")) this.timed("selection", () => this.drawSelection(run));
    if (step) this.drawStep(pane);
    else if (dirty.has("select")) this.drawTimeline(pane);
    else if (dirty.has("controls")) this.updateCharts(pane); // charts left stale when play stopped
    return animating;
  }

  // Time each part when `this.profile` is an object (bench/render.py reads it).
  timed(name, fn) {
    if (!this.profile) return fn();
    const t0 = performance.now();
    const out = fn();
    this.profile[name] = (this.profile[name] ?? 0) + performance.now() - t0;
    return out;
  }

  drawStep(pane) {
    const { run, history } = pane;
    const view = batchView(run);
    this.timed("batch", () => drawBatchBar(this.el.bar, view, this.theme));
    const past = pastBatches(run, history, STRIP_LENGTH);
    this.timed("strip", () => drawStrip(this.el.strip, past, view.budget || run.record?.token_budget || 1, this.theme, run));
    this.el.batchInfo.textContent = `${view.used} of ${view.budget} tokens · ` +
      `${view.num_prefill_tokens ?? 0} prefill, ${view.num_decode_tokens ?? 0} decode · ` +
      `${view.num_seqs} of ${view.max_num_seqs} seqs` + draftsCaption(view, pane.init?.acceptance_source);
    this.drawPoolInfo(run, history);
    this.timed("queues", () => drawQueues(this.el.lanes, lanes(run), run));
    this.drawTimeline(pane);
  }

  drawPoolInfo(run, history) {
    const rec = run.record;
    const used = rec ? rec.num_usable_blocks - rec.num_free_blocks : 0;
    const waste = lessonRow(run, history).kv_waste_pct;
    this.el.poolInfo.textContent = `${run.numBlocks} blocks of ${run.blockSize} tokens · ` +
      `${used} in use` + (rec ? ` (${(rec.kv_usage * 100).toFixed(1)}%)` : "") +
      (Number.isFinite(waste) ? ` · KV waste ${waste.toFixed(1)}%` : "") + this.density.caption();
  }

  drawTimeline(pane) {
    const rec = pane.run.record;
    const cursorS = rec ? rec.time_s + rec.step_time_ms / 1000 : undefined;
    this.timed("timeline", () => this.drawRequests(pane, cursorS));
    this.updateCharts(pane);
  }

  /** While a run plays, one chart a frame (the stalest); else every stale one. */
  updateCharts(pane) {
    if (!this.charts) return;
    const rec = pane.run.record;
    const cursorS = rec ? rec.time_s + rec.step_time_ms / 1000 : undefined;
    const speculative = !!pane.run.config?.speculative_config;
    this.timed("charts", () => this.charts.update(pane.history, cursorS, { oneChart: pane.playing, speculative }));
  }

  /** A row per request from the page's history while the run is small and no window is
   * picked; else the server's view of the window: rows, or the density of states. */
  drawRequests(pane, cursorS) {
    const { run, history } = pane;
    const tv = this.timelineView;
    const count = requestCount(pane);
    const answer = tv.wanted(count) ? (tv.update(), tv.current()) : null;
    const mode = timelineMode(count, tv.window, answer);
    const opts = { cursor_s: cursorS, selected: this.selected, theme: this.theme, maxHeight: 340 };
    if (mode !== "density") this.stateDensity.drawn = null; // rows paint over its picture
    if (mode === "live") {
      const last = history.length - 1;
      this.timelineLayout = this.timeline.draw(run, history, { ...opts, growing: pane.playing,
        t_end_s: last >= 0 ? history.cols.t_s[last] : undefined });
    } else if (!answer) { // asked: the picture stays until the answer comes
      if (tv.error) setText(this.el.timelineInfo, `Timeline unavailable: ${tv.error}`);
      return;
    } else if (mode === "rows") {
      this.timelineLayout = this.timeline.draw(run, tv.rows, { ...opts, t_end_s: answer.end_s, growing: false });
    } else {
      this.timeline.state = null; // the row painter starts afresh after the density
      this.timelineLayout = this.stateDensity.draw(answer, opts);
    }
    tv.layout = this.timelineLayout;
    this.el.timeline.dataset.mode = mode;
    setText(this.el.timelineInfo, timelineInfo(mode, count, tv.window, answer));
  }

  drawSelection(run) {
    const info = this.hoverBlock >= 0 ? blockInfo(run, this.hoverBlock) : null;
    const text = info ? describeBlock(info) : "Hover a block, click a request.";
    if (this.el.blockInfo.textContent !== text) this.el.blockInfo.textContent = text;
    const table = this.selected ? blockTable(run, this.selected) : null;
    drawHighlight(this.el.overlay, this.grid, this.density.active ? null : table, this.theme.ink, this.theme.fontPx);
    this.drawTable(run, table);
  }

  drawTable(run, table) {
    const box = this.el.blockTable;
    if (!this.selected) {
      if (box.firstChild) box.replaceChildren();
      return;
    }
    box.replaceChildren();
    const r = requestInfo(run, this.selected);
    const head = this.doc.createElement("div");
    head.className = "slot";
    head.textContent = r
      ? `${r.id}: ${r.status}, ${r.num_computed_tokens} computed, ${r.num_output_tokens} out, ` +
        `${r.num_cached_tokens} cached, block table:`
      : `${this.selected}: unknown`;
    box.appendChild(head);
    for (const s of table ?? []) {
      const el = this.doc.createElement("span");
      el.className = "slot";
      el.textContent = `${s.logical}\u2192${s.block}${s.ref > 1 ? ` \u00d7${s.ref}` : ""} (${s.fill})`;
      box.appendChild(el);
    }
  }
}

function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

function describeBlock(i) {
  if (i.is_null) return `block 0: the null block, reserved by vLLM; never allocated`;
  if (isPlaceholder(i.owner)) {
    return `block ${i.block}: in use; the recording does not say by which request (${i.owner})`;
  }
  const who = i.owner !== null ? `owned by ${i.owner}` : "free";
  const cache = i.cached ? `, prefix-cached${i.owner === null && i.last_owner ? ` (last held by ${i.last_owner})` : ""}` : "";
  return `block ${i.block}: ${who}, ${i.fill}/${i.block_size} slots filled, ref count ${i.ref_count}${cache}`;
}
