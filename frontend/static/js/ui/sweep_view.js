// The Sweep view's figures for the sweep's latest view: its progress, answer, plot and table,
// and the table's picks (a heading sorts, a box picks a point for the compare).

import { progressText } from "../state/sweep.js";
import { drawTable } from "./sweep_table.js";

/** `state`: the page's {view, sort, selected, plot}; redraws the plot, table and compare button. */
export function drawSweep(doc, state) {
  const $ = (id) => doc.getElementById(id);
  const view = state.view;
  if (!view) return;
  state.plot?.update(view, $("sweep-y").value);
  drawTable(doc, $("sweep-table"), view, state.sort, state.selected);
  $("sweep-compare").disabled = state.selected.size < 2 || state.selected.size > 4;
  doc.body.dataset.sweepStatus = view.status;
}

/** A new view of the sweep (from the server) shown: buttons, progress, answer, figures. */
export function showSweep(doc, state, view, showError) {
  const $ = (id) => doc.getElementById(id);
  state.view = view;
  const running = view.status === "running";
  $("sweep-start").disabled = running;
  $("sweep-cancel").disabled = !running;
  $("sweep-progress").textContent = progressText(view);
  Object.assign($("sweep-bar"), { max: Math.max(1, view.total), value: view.done ?? 0 });
  $("sweep-answer").hidden = !view.answer;
  $("sweep-answer").textContent = view.answer ?? "";
  if (view.status === "failed") showError(view.error);
  drawSweep(doc, state);
}

/** Clicks in the table: a heading sorts by its column (again: the other way), a box picks. */
export function bindSweepTable(doc, state) {
  doc.getElementById("sweep-table").addEventListener("click", (ev) => {
    const sort = ev.target.closest("[data-sort]")?.dataset.sort;
    if (sort) {
      state.sort = { key: sort, dir: state.sort.key === sort ? -state.sort.dir : 1 };
      return drawSweep(doc, state);
    }
    const pick = ev.target.closest("[data-pick]");
    if (pick) {
      const i = Number(pick.dataset.pick);
      if (pick.checked) state.selected.add(i); else state.selected.delete(i);
      drawSweep(doc, state);
    }
  });
}
