// The diagnosis and export tools: a "Diagnose" button that asks the server to diagnose the
// session's run so far (in compare mode, each engine's), rendered as text nodes only, and
// downloads of the run (bench JSON, CSV, Perfetto trace) and of each chart as PNG and SVG.

import { CHART_SPECS } from "../render/charts.js";
import { chartModel, chartSvg } from "../render/chart_svg.js";

export const EXPORTS = [
  { format: "bench", label: "vllm bench JSON", file: "servescope-bench.json" },
  { format: "csv", label: "per-request CSV", file: "servescope-requests.csv" },
  { format: "perfetto", label: "Perfetto trace", file: "servescope-trace.json" },
];

export function diagnosisUrl(sessionId, { engine = 0, check = false } = {}) {
  const q = new URLSearchParams({ engine: String(engine) });
  if (check) q.set("check", "true");
  return `/api/sessions/${encodeURIComponent(sessionId)}/diagnosis?${q}`;
}

export function exportUrl(sessionId, format, engine = 0) {
  const q = new URLSearchParams({ format, engine: String(engine) });
  return `/api/sessions/${encodeURIComponent(sessionId)}/export?${q}`;
}

function num(value) {
  if (typeof value !== "number") return String(value ?? "-");
  return Number.isInteger(value) ? String(value) : value.toPrecision(3);
}

/** A recommended flag and, once re-simulated, its outcome with the figures that moved. */
function flagLine(r) {
  const flag = r.value === undefined || r.value === null ? r.flag : `${r.flag} ${r.value}`;
  const exp = r.expected;
  const checked = !exp ? "" : exp.checked ? ` · re-simulated, ${exp.text}` : ` · unchecked: ${exp.reason}`;
  return `${flag}: ${r.why}${checked}`;
}

/** The diagnosis as plain lines: {heading, headline, provenance, evidence[], flags[],
 * others[] (the other verdicts that are not minor), next[], missing[]}. */
export function describeDiagnosis(data) {
  const top = data.verdicts?.find((v) => v.kind === data.dominant) ?? null;
  const scope = data.complete ? "the whole run" : `the first ${data.num_records} steps`;
  const out = {
    heading: top ? `${top.title} (${top.kind}, score ${num(top.score)})`
      : "No dominant bottleneck: every limit scored as minor",
    provenance: `Computed from the ${data.source ?? "simulated"} run, ${scope}` +
      (data.label ? ` · ${data.label}` : ""),
    headline: top?.headline ?? "",
    evidence: (top?.evidence ?? []).map((e) => `${e.name} = ${num(e.value)}: ${e.text}`),
    flags: (top?.recommendations ?? []).map(flagLine),
    others: (data.verdicts ?? []).filter((v) => v !== top && !v.minor).flatMap((v) =>
      [`${v.title} (${v.kind}, score ${num(v.score)}): ${v.headline}`,
        ...v.recommendations.map((r) => `  ${flagLine(r)}`)]),
    next: top?.measure_next ?? [],
    missing: (data.missing ?? []).map((m) => `missing ${m.metric} (for ${m.needed_for}); ` +
      `still concluded: ${m.still_concluded}`),
  };
  return out;
}

function list(doc, className, items) {
  const ul = doc.createElement("ul");
  ul.className = className;
  for (const item of items) {
    const li = doc.createElement("li");
    li.textContent = item;
    ul.appendChild(li);
  }
  return ul;
}

/** Replace `el`'s content with the diagnosis (textContent only, never markup). */
export function renderDiagnosis(el, data) {
  const doc = el.ownerDocument;
  const d = describeDiagnosis(data);
  el.replaceChildren();
  const add = (tag, className, text) => {
    const node = doc.createElement(tag);
    node.className = className;
    node.textContent = text;
    el.appendChild(node);
  };
  add("p", "diagnosis-provenance help", d.provenance);
  add("h3", "diagnosis-verdict", d.heading);
  if (d.headline) add("p", "diagnosis-headline", d.headline);
  if (d.evidence.length) add("h4", "", "Evidence");
  el.appendChild(list(doc, "diagnosis-evidence", d.evidence));
  if (d.flags.length) add("h4", "", "Recommended flags, in order");
  el.appendChild(list(doc, "diagnosis-flags", d.flags));
  if (d.others.length) add("h4", "", "Also limiting");
  el.appendChild(list(doc, "diagnosis-others", d.others));
  if (d.next.length) add("h4", "", "Measure next");
  el.appendChild(list(doc, "diagnosis-next", d.next));
  el.appendChild(list(doc, "diagnosis-missing help", d.missing));
}

function download(doc, href, file) {
  const a = doc.createElement("a");
  a.href = href;
  a.download = file;
  doc.body.appendChild(a);
  a.click();
  a.remove();
}

function downloadBlob(doc, blob, file) {
  const url = URL.createObjectURL(blob);
  download(doc, url, file);
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** A chart's canvas as a PNG download, on an opaque background. */
export function chartPng(doc, canvas, name, background = "#ffffff") {
  const out = doc.createElement("canvas");
  out.width = canvas.width;
  out.height = canvas.height;
  const ctx = out.getContext("2d");
  ctx.fillStyle = background;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(canvas, 0, 0);
  out.toBlob((blob) => blob && downloadBlob(doc, blob, `servescope-${name}.png`), "image/png");
}

/** A chart ({spec, u}) as an SVG download, drawn from its data and scales. */
export function chartSvgFile(doc, chart) {
  const blob = new Blob([chartSvg(chartModel(chart))], { type: "image/svg+xml" });
  downloadBlob(doc, blob, `servescope-${chart.spec.key}.svg`);
}

async function diagnose(el, status, load, opts) {
  status.textContent = "diagnosing…";
  try {
    renderDiagnosis(el, await load(opts));
    status.textContent = "";
  } catch (err) {
    status.textContent = `Diagnosis failed: ${err.message}`;
  }
}

/** One compare row: the engine's label, its dominant verdict and that verdict's first knob. */
export function verdictRow(data) {
  const top = data.verdicts?.find((v) => v.kind === data.dominant) ?? null;
  const rec = top?.recommendations?.[0];
  const knob = !rec ? "-" : rec.value === undefined || rec.value === null ? rec.flag
    : `${rec.flag} ${rec.value}`;
  const scope = data.complete ? "whole run" : `first ${data.num_records} steps`;
  return { label: data.label ?? `engine ${data.engine}`,
    verdict: top ? `${top.title} (${top.kind})` : "no dominant bottleneck", knob, scope };
}

/** Diagnose each of a compare session's `n` engines; one table row per engine. */
async function diagnoseEach(table, status, load, n) {
  status.textContent = "diagnosing…";
  const rows = await Promise.all(Array.from({ length: n }, (_, engine) =>
    load({ engine }).then(verdictRow,
      (err) => ({ label: `engine ${engine}`, verdict: `failed: ${err.message}`, knob: "-", scope: "" }))));
  const doc = table.ownerDocument;
  table.tBodies[0].replaceChildren(...rows.map((row, engine) => {
    const tr = doc.createElement("tr");
    tr.dataset.engine = String(engine);
    for (const text of [row.label, row.verdict, row.knob, row.scope]) {
      const td = doc.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    return tr;
  }));
  table.hidden = false;
  status.textContent = "";
}

/** Wire the tools. `sessionId()` names the session; `charts()` the explorer's uPlot charts;
 * `getJson(url)` asks the server (transport/reports.js). */
export function bindTools(doc, { sessionId, charts, getJson }) {
  const $ = (id) => doc.getElementById(id);
  const load = (opts) => getJson(diagnosisUrl(sessionId(), opts));
  const result = $("diagnosis");
  const status = $("diagnosis-status");
  $("btn-diagnose").addEventListener("click", () =>
    diagnose(result, status, load, { check: $("diagnosis-check").checked }));
  const exportsEl = $("exports");
  for (const x of EXPORTS) {
    const b = doc.createElement("button");
    b.type = "button";
    b.dataset.export = x.format;
    b.textContent = x.label;
    b.addEventListener("click", () => download(doc, exportUrl(sessionId(), x.format), x.file));
    exportsEl.appendChild(b);
  }
  const chartFiles = { png: (c) => chartPng(doc, c.u.ctx.canvas, c.spec.key),
    svg: (c) => chartSvgFile(doc, c) };
  for (const spec of CHART_SPECS) {
    for (const [kind, save] of Object.entries(chartFiles)) {
      const b = doc.createElement("button");
      b.type = "button";
      b.dataset.export = `${kind}-${spec.key}`;
      b.textContent = `${spec.title} (${kind.toUpperCase()})`;
      b.addEventListener("click", () => {
        const c = charts().find((x) => x.spec.key === spec.key);
        if (c) save(c);
      });
      exportsEl.appendChild(b);
    }
  }
  $("btn-compare-diagnose").addEventListener("click", () =>
    diagnoseEach($("compare-diagnosis"), $("compare-diagnosis-status"), load,
      doc.querySelectorAll("#compare-panes > [data-pane]").length));
}
