// The fleet view (#fleet): a canvas per pane that runs a fleet (one in explore, side by side in
// compare: two routers on the same traffic), drawn from state/fleet.js by render/fleet.js; hover
// says why a request went where it did, a click on a lane drills down (the session streams
// that replica's blocks, at the same simulated time).

import { drawFleet, fleetHit, fleetLayout, hoverText } from "../render/fleet.js";
import { fitCanvas } from "../render/size.js";
import { lastArrivalTo } from "../state/fleet.js";
import { themeColours } from "./explore.js";
import { textPx } from "./projection.js";

const FLEET_COLOURS = {
  light: { used: "#2b4c7e", half: "#6f8fbf", low: "#b9c9e2", load: "#88ccee", hot: "#d55e00" },
  dark: { used: "#88ccee", half: "#4f7fa8", low: "#29445c", load: "#44aa99", hot: "#ff6b5e" },
};

export class FleetView {
  /** `send(msg)`: the session's; `changed()`: mark the page dirty. */
  constructor(doc, { send, changed }) {
    this.doc = doc;
    this.root = doc.getElementById("fleet");
    this.box = doc.getElementById("fleet-panes");
    this.why = doc.getElementById("fleet-why");
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
      this.hover[i] = fleetHit(canvas.layout, pane.fleet, ...at(ev));
      this.why.textContent = hoverText(pane.fleet, this.hover[i], lastArrivalTo);
      this.changed();
    });
    canvas.addEventListener("click", (ev) => {
      const pane = panes[i];
      const hit = pane?.fleet && canvas.layout ? fleetHit(canvas.layout, pane.fleet, ...at(ev)) : null;
      if (hit?.replica != null) this.open(i, hit.replica);
    });
    return canvas;
  }

  /** Drill down: pane `i`'s engine streams replica `replica`'s block-level records. */
  open(i, replica) {
    this.send({ type: "replica", engine: i, replica });
  }

  draw(panes) {
    this.sync(panes);
    const fontCss = this.dark ? Math.ceil(textPx(this.doc)) : 13;
    for (const canvas of this.canvases) {
      const i = Number(canvas.dataset.pane);
      const fleet = panes[i]?.fleet;
      if (!fleet) continue;
      const ratio = this.doc.defaultView?.devicePixelRatio || 1;
      const probe = fleetLayout(fleet.info.replicas, 1, Math.ceil(fontCss * ratio));
      canvas.style.height = `${Math.ceil(probe.height / ratio)}px`;
      const [w] = fitCanvas(canvas);
      canvas.layout = fleetLayout(fleet.info.replicas, w, Math.ceil(fontCss * ratio));
      canvas.dataset.fontPx = String(fontCss);
      canvas.dataset.viewed = String(fleet.info.replica);
      drawFleet(canvas.getContext("2d"), canvas.layout, fleet, this.theme(), this.hover[i] ?? null);
    }
  }
}
