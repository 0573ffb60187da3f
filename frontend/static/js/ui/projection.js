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

/** The projected type size in CSS pixels (the body's font size: it scales with the viewport). */
export function basePx(doc) {
  return parseFloat(doc.defaultView.getComputedStyle(doc.body).fontSize) || 14;
}

/** The large mode label: what the panes run. */
export function drawModeLabel(doc, panes) {
  const el = doc.getElementById("mode-label");
  const text = modeLabel(panes.map((p) => p.init?.config).filter(Boolean));
  if (el.textContent !== text) el.textContent = text;
}
