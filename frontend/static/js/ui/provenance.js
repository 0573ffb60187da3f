// Draws where the lead pane's numbers come from: the badge (simulated / replayed / live, and
// "measured" when a benchmark's figures are shown beside), the workload's name, the facts a
// recording lacks, and the measured-versus-simulated line.

import { lessonRow } from "../state/select.js";
import { measuredText, provenance } from "../state/provenance.js";

function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

export function drawProvenance(doc, pane, preset) {
  const $ = (id) => doc.getElementById(id);
  const p = provenance(pane.init, preset);
  const badge = $("source-label");
  setText(badge, p.source);
  badge.dataset.source = p.source;
  badge.title = p.badgeTitle;
  $("measured-label").hidden = !p.measured;
  setText($("scenario-name"), `${p.name}${pane.status === "done" ? " · run complete" : ""}`);
  setText($("charts-title"), p.source === "replayed" ? "Metrics over recorded time (replayed)"
    : p.source === "live" ? "Metrics over simulated time (live: it follows wall time)" : "Metrics over simulated time");
  setText($("provenance"), p.facts.join(" "));
  $("provenance").hidden = p.facts.length === 0;
  const done = pane.status === "done" && pane.summary;
  const text = measuredText(pane.init.trace?.measured, done ? pane.summary : lessonRow(pane.run, pane.history), !!done);
  setText($("measured"), text);
  $("measured").hidden = !text;
}
