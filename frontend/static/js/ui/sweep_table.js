// The Sweep view's table: one row per point (its grid values, status, goodput, p99s, cost,
// bottleneck: for a point that misses an SLO the verdict on the latency it misses, else the
// dominant one; node), sortable by clicking a heading, with a box to pick 2-4 points
// to compare and a link that opens one point in the explorer.

import { costOf, explorerUrl, openable, sortPoints } from "../state/sweep.js";

const COLUMNS = [
  ["index", "#"], [null, "config"], ["meets_slo", "SLO"], ["request_goodput", "goodput (req/s)"],
  ["p99_ttft_ms", "p99 TTFT (ms)"], ["p99_itl_ms", "p99 ITL (ms)"], ["cost", "cost"],
  [null, "bottleneck"], [null, "node"], [null, "open"],
];

const BOTTLENECK = COLUMNS.findIndex(([, text]) => text === "bottleneck");
const num = (v, digits = 1) => (v == null ? "-" : Number(v).toFixed(digits));

function cells(p, view, pareto) {
  const ran = p.status === "ok";
  const values = Object.entries(p.point).map(([k, v]) => `${k}=${v}`).join(", ");
  const status = ran ? (p.meets_slo ? "meets" : "misses") : p.status.replace(/_/g, " ");
  const cost = costOf(p, view.cost_unit);
  return [String(p.index) + (pareto.has(p.index) ? " *" : ""), values, status,
    ran ? num(p.request_goodput, 2) : "-", ran ? num(p.summary.p99_ttft_ms) : "-",
    ran ? num(p.summary.p99_itl_ms) : "-", cost == null ? "-" : num(cost, 3),
    ran ? bottleneck(p) : (p.reason ?? "").slice(0, 80), (p.node ?? "").slice(0, 8)];
}

/** The first missed SLO and the verdict that explains it, or the dominant verdict. */
export function bottleneck(p) {
  const why = (p.why_fails ?? [])[0];
  if (why) return `${why.metric}: ${why.kind ?? "unexplained"}`;
  return p.diagnosis.dominant ?? "none";
}

/** Fill `table` with the view's points, sorted by `sort` {key, dir}; returns nothing. */
export function drawTable(doc, table, view, sort, selected) {
  const pareto = new Set(view.pareto ?? []);
  const head = COLUMNS.map(([key, text]) => {
    const mark = key && key === sort.key ? (sort.dir > 0 ? " ▲" : " ▼") : "";
    return key ? `<th><button data-sort="${key}">${text}${mark}</button></th>` : `<th>${text}</th>`;
  }).join("");
  table.innerHTML = `<thead><tr><th>pick</th>${head}</tr></thead><tbody></tbody>`;
  const body = table.querySelector("tbody");
  for (const p of sortPoints(view.points ?? [], sort.key, sort.dir)) {
    const tr = doc.createElement("tr");
    tr.dataset.index = String(p.index);
    tr.classList.toggle("pareto", pareto.has(p.index));
    const pick = doc.createElement("td");
    const box = Object.assign(doc.createElement("input"), { type: "checkbox", disabled: !openable(p),
      checked: selected.has(p.index), title: "pick 2-4 points to compare" });
    box.dataset.pick = String(p.index);
    pick.appendChild(box);
    tr.appendChild(pick);
    const why = (p.why_fails ?? []).map((w) => `${w.metric}: ${w.headline ?? "no verdict explains it"}`);
    cells(p, view, pareto).forEach((text, k) => {
      const td = Object.assign(doc.createElement("td"), { textContent: text });
      if (k === BOTTLENECK && why.length) td.title = why.join("\n");  // the evidence, on hover
      tr.appendChild(td);
    });
    const open = doc.createElement("td");
    if (openable(p)) {
      open.appendChild(Object.assign(doc.createElement("a"), { href: explorerUrl(view, [p]), textContent: "explore" }));
    } else {
      open.textContent = p.status === "ok" ? `${p.replicas} replicas` : "-";
      open.title = "the explorer runs one engine; this point ran several replicas or did not run";
    }
    tr.appendChild(open);
    body.appendChild(tr);
  }
}
