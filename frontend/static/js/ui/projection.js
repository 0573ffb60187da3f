// Projection mode for a lecture hall: large type that scales with the viewport, high contrast,
// the whole explorer on one screen with the key bar below it (not over it), and a large label
// saying which mode and config runs. It is a flag over the view: compare stays projected.

import { modeLabel } from "../state/mode_label.js";

/** Turn projection on or off for the page; the views re-measure and redraw themselves. */
export function applyProjection(doc, on) {
  doc.body.classList.toggle("projection", on);
  doc.getElementById("keys").hidden = !on;
  for (const b of doc.querySelectorAll('[data-view="projection"]')) b.setAttribute("aria-pressed", String(on));
}

/** The projected type size in CSS pixels: the body's font size, which projection.css sets to
 * 2.5% of the viewport height (--text), so canvas text follows the rule DOM text does. */
export function textPx(doc) {
  return parseFloat(doc.defaultView.getComputedStyle(doc.body).fontSize) || 14;
}

/** Call `onChange` once a frame when a projected view's box changes size: the window, or a
 * line more or less of caption or tour note above it. The views lay out again to fit; the
 * boxes' sizes come from the page's rows, not from what the views draw in them. */
export function watchProjectedBoxes(doc, onChange) {
  const win = doc.defaultView;
  if (!win.ResizeObserver) return;
  const seen = new Map();
  let queued = false;
  const observer = new win.ResizeObserver((entries) => {
    let changed = false;
    for (const e of entries) {
      const size = `${Math.round(e.contentRect.width)}x${Math.round(e.contentRect.height)}`;
      if (seen.get(e.target) !== size) changed = seen.has(e.target) || changed;
      seen.set(e.target, size);
    }
    if (!changed || queued || !doc.body.classList.contains("projection")) return;
    queued = true;
    win.requestAnimationFrame(() => {
      queued = false;
      onChange();
    });
  });
  for (const id of ["explore", "compare"]) {
    const el = doc.getElementById(id);
    if (el) observer.observe(el);
  }
}

/** The large mode label: what the panes run. */
export function drawModeLabel(doc, panes) {
  const el = doc.getElementById("mode-label");
  const text = modeLabel(panes.map((p) => p.init?.config).filter(Boolean));
  if (el.textContent !== text) el.textContent = text;
}
