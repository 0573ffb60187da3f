// The fleet view (#fleet): a canvas per pane that runs a fleet (one in explore, side by side in
// compare: two routers on the same traffic), drawn from state/fleet.js by render/fleet.js; hover
// says why a request went where it did, a click on a lane drills down (the session streams
// that replica's blocks, at the same simulated time). A P/D fleet's pane draws its two pools and
// the KV link between them (render/pd.js) in the same canvas, and its summary's P/D lines.

import { drawFleet, fleetHit, fleetLayout, hoverText } from "../render/fleet.js";
import { drawPD, pdHit, pdHoverText, pdLayout } from "../render/pd.js";
import { fitCanvas } from "../render/size.js";
import { lastArrivalTo } from "../state/fleet.js";
import { pdSummaryText, ttftPartsText } from "../state/pd.js";
import { themeColours } from "./explore.js";
import { textPx } from "./projection.js";

const FLEET_COLOURS = {
  // kv: waiting for remote KV, as the queues and the timeline colour it (css: --kv-wait)
  light: { used: "#2b4c7e", half: "#6f8fbf", low: "#b9c9e2", load: "#88ccee", hot: "#d55e00", kv: "#aa3377" },
  dark: { used: "#88ccee", half: "#4f7fa8", low: "#29445c", load: "#44aa99", hot: "#ff6b5e", kv: "#ee99cc" },
};

export class FleetView {
  /** `send(msg)`: the session's; `changed()`: mark the page dirty. */
  constructor(doc, { send, changed }) {
    this.doc = doc;
    this.root = doc.getElementById("fleet");
    this.box = doc.getElementById("fleet-panes");
    this.why = doc.getElementById("fleet-why");
    this.pdSummary = doc.getElementById("pd-summary");
    this.send = send;
    this.changed = changed;
    this.dark = false;
    this.canvases = [];
    this.hover = [];
  }

  setDark(dark) {
    this.dark = dark;
  }

  theme() {
    return { ...themeColours(this.dark), ...FLEET_COLOURS[this.dark ? "dark" : "light"] };
  }

  /** One canvas for each pane with a fleet (the pane index in data-pane). */
  sync(panes) {
    const want = panes.map((p, i) => (p.fleet ? i : -1)).filter((i) => i >= 0);
    this.root.hidden = want.length === 0;
    if (want.join() === this.canvases.map((c) => c.dataset.pane).join()) return;
    this.canvases = want.map((i) => this.makeCanvas(i, panes));
    this.box.replaceChildren(...this.canvases);
    this.hover = [];
  }

  makeCanvas(i, panes) {
    const canvas = this.doc.createElement("canvas");
    canvas.className = "fleet-canvas";
    canvas.dataset.pane = String(i);
    const at = (ev) => {
      const [, , ratio] = fitCanvas(canvas);
      const r = canvas.getBoundingClientRect();
      return [(ev.clientX - r.left) * ratio, (ev.clientY - r.top) * ratio];
    };
    canvas.addEventListener("mousemove", (ev) => {
      const pane = panes[i];
      if (!pane?.fleet || !canvas.layout) return;
      this.hover[i] = this.hit(canvas, pane.fleet, at(ev));
      this.why.textContent = pane.fleet.info.pools
        ? pdHoverText(pane.fleet, this.hover[i], (id) => ttftPartsText(pane.summary?.ttft_parts?.[id]))
        : hoverText(pane.fleet, this.hover[i], lastArrivalTo);
      this.changed();
    });
    canvas.addEventListener("click", (ev) => {
      const pane = panes[i];
      const hit = pane?.fleet && canvas.layout ? this.hit(canvas, pane.fleet, at(ev)) : null;
      if (hit?.replica != null) this.open(i, hit.replica, hit.pool);
    });
    return canvas;
  }

  hit(canvas, fleet, [x, y]) {
    return fleet.info.pools ? pdHit(canvas.layout, fleet, x, y) : fleetHit(canvas.layout, fleet, x, y);
  }

  /** Drill down: pane `i`'s engine streams replica `replica`'s (of `pool`, P/D) block-level
   * records. */
  open(i, replica, pool = undefined) {
    this.send({ type: "replica", engine: i, replica, ...(pool ? { pool } : {}) });
  }

  draw(panes) {
    this.sync(panes);
    const fontCss = this.dark ? Math.ceil(textPx(this.doc)) : 13;
    for (const canvas of this.canvases) {
      const i = Number(canvas.dataset.pane);
      const fleet = panes[i]?.fleet;
      if (!fleet) continue;
      const ratio = this.doc.defaultView?.devicePixelRatio || 1;
      const pd = Boolean(fleet.info.pools);
      const layout = (w) => (pd ? pdLayout(fleet.info, w, Math.ceil(fontCss * ratio))
        : fleetLayout(fleet.info.replicas, w, Math.ceil(fontCss * ratio)));
      canvas.style.height = `${Math.ceil(layout(1).height / ratio)}px`;
      const [w] = fitCanvas(canvas);
      canvas.layout = layout(w);
      canvas.dataset.fontPx = String(fontCss);
      canvas.dataset.viewed = pd ? `${fleet.info.pool} ${fleet.info.replica}` : String(fleet.info.replica);
      const ctx = canvas.getContext("2d");
      if (pd) canvas.dataset.transfers = String(drawPD(ctx, canvas.layout, fleet, this.theme(), this.hover[i] ?? null));
      else drawFleet(ctx, canvas.layout, fleet, this.theme(), this.hover[i] ?? null);
    }
    const pd = panes.find((p) => p.fleet?.info.pools);
    const words = pd ? pdSummaryText(pd.summary) : "";
    this.pdSummary.hidden = !words;
    if (this.pdSummary.textContent !== words) this.pdSummary.textContent = words;
  }
}
