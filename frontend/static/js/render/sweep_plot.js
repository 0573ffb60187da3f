// The Sweep view's scatter (uPlot): each config's cost against its goodput or a p99 latency,
// the Pareto frontier joined by a line, and the SLO target on that latency as a dashed line.
// Clicking near a point picks it. uPlot is passed in, as for the explorer's charts.

import { costLabel, plotColumns, Y_AXES } from "../state/sweep.js";

function options(width, yKey, unit, theme) {
  const axis = { stroke: theme.ink, grid: { stroke: theme.grid }, ticks: { stroke: theme.grid } };
  const fmt = (v) => (v == null ? "-" : Number(v).toPrecision(4));
  return {
    width, height: 320, title: `cost vs ${Y_AXES[yKey].label} (simulated)`,
    scales: { x: { time: false } },
    axes: [{ ...axis, label: costLabel(unit) }, { ...axis, label: Y_AXES[yKey].label, size: 60 }],
    cursor: { points: { size: 12 } },
    series: [
      { label: costLabel(unit), value: (u, v) => fmt(v) },
      { label: "configs", stroke: "#0072b2", width: 0, paths: () => null, value: (u, v) => fmt(v),
        points: { show: true, size: 9, fill: "#0072b2" } },
      { label: "Pareto frontier", stroke: "#d55e00", width: 2, spanGaps: true, value: (u, v) => fmt(v),
        points: { show: true, size: 11, fill: "#d55e00" } },
      { label: "SLO", stroke: "#117733", width: 2, dash: [6, 4], points: { show: false },
        value: (u, v) => fmt(v) },
    ],
  };
}

/** A scatter inside `container`; `onPick(point)` when a point is clicked. Returns
 * {update(view, yKey), destroy()}. */
export function createSweepPlot(uPlot, container, onPick, theme = { ink: "#1b1f24", grid: "#d8dde3" }) {
  let u = null;
  let order = [];
  let shape = "";
  const width = () => Math.max(320, container.clientWidth - 8);
  function update(view, yKey) {
    const cols = plotColumns(view, yKey);
    order = cols.order;
    const unit = view.cost_unit ?? "usd";
    if (`${yKey}/${unit}` !== shape) {
      u?.destroy();
      u = new uPlot(options(width(), yKey, unit, theme), cols.data, container);
      u.over.addEventListener("click", () => {
        const i = u.cursor.idx;
        if (i != null && order[i]) onPick(order[i]);
      });
      shape = `${yKey}/${unit}`;
    } else {
      u.setData(cols.data);
    }
    container.dataset.points = String(order.length);
    container.dataset.frontier = String(cols.data[2].filter((v) => v != null).length);
  }
  return { update, destroy: () => u?.destroy(), get uplot() { return u; } };
}
