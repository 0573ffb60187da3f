// The explorer page as a whole: what one frame draws (controls, lesson bar, provenance, mode
// label, caption, then the view shown and the overview strip), a pick in a view (a request, a
// hovered or clicked block) made the selection, and the page's status and error lines.

import { caption } from "../state/caption.js";
import { markDirty } from "../state/store.js";
import { drawControls } from "./controls.js";
import { drawLessonBar, drawTimelineMarks } from "./lesson_bar.js";
import { drawModeLabel } from "./projection.js";
import { drawProvenance } from "./provenance.js";

export function setText(doc, id, text) {
  const el = doc.getElementById(id);
  if (el && el.textContent !== text) el.textContent = text;
}

export function showError(doc, message) {
  const el = doc.getElementById("error");
  el.hidden = !message;
  el.textContent = message ?? "";
}

/** `views()`: {explore, compare, overview, fleet} built so far (null until then). Returns
 * {draw(dirty): the store's frame callback, onSelect(sel): the explore view's picks}. */
export function createPage({ doc, store, scenario, lesson, views }) {
  const lead = () => store.panes[0];

  function draw(dirty) {
    const now = performance.now();
    const p = lead();
    const { explore, compare, overview, fleet } = views();
    fleet?.draw(store.panes);
    drawControls(doc, p, { playing: store.panes.some((x) => x.playing), speed: scenario.speed });
    drawLessonBar(doc, lesson, p);
    if (p) {
      drawProvenance(doc, p, scenario.preset);
      drawModeLabel(doc, store.panes);
      setText(doc, "caption", lesson.caption(caption(p.run, p.run.record), now));
    }
    let again = false;
    if (scenario.view === "compare") compare?.draw(dirty, store.panes, now);
    else if (p) {
      again = explore.draw(dirty, p, now);
      drawTimelineMarks(doc, lesson.events, explore.timelineLayout?.xOf);
    }
    if (again) markDirty(store, "anim");
    if (dirty.has("step") || dirty.has("all")) overview?.draw();
  }

  // A block picks the request that owns it (none for a free block or a log's anonymous slot).
  function onSelect(sel) {
    const { explore } = views();
    const p = lead();
    if (sel.request !== undefined) explore.selected = sel.request;
    if (sel.fromBlock !== undefined && p) {
      const owner = p.run.owner[sel.fromBlock];
      explore.selected = owner >= 0 && !p.run.reqs[owner].placeholder ? p.run.ids[owner] : null;
    }
    markDirty(store, sel.block !== undefined ? "hover" : "select");
  }

  return { draw, onSelect };
}
