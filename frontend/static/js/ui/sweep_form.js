// The Sweep view's form: the workloads it can sweep (the presets and the uploaded traces, the
// URL's choice picked), and the sweep it asks for: {workload, config, grid, slos, gpu_prices}.

import { parsePairs } from "../state/sweep.js";

/** `boot`: the page's {presets, grid_keys, slo_metrics} and this browser's uploaded request
 * `traces` (GET /api/traces); `query`: the URL's params. */
export function fillWorkloads(doc, boot, query) {
  const $ = (id) => doc.getElementById(id);
  const select = $("sweep-workload");
  const options = [...boot.presets.map((p) => [`preset:${p.name}`, `preset: ${p.title ?? p.name}`]),
    ...boot.traces.map((t) => [`trace:${t.trace_id}`, `uploaded: ${t.filename}`])];
  for (const [value, text] of options) select.appendChild(Object.assign(doc.createElement("option"), { value, textContent: text }));
  const wanted = query.get("trace") ? `trace:${query.get("trace")}` : `preset:${query.get("preset") ?? "demo"}`;
  if (options.some(([v]) => v === wanted)) select.value = wanted;
  $("sweep-keys").textContent = `grid keys: ${boot.grid_keys.join(", ")}; SLO metrics: ${boot.slo_metrics.join(", ")}`;
}

/** The sweep the form asks for; an Error naming the field that does not parse. */
export function readForm(doc) {
  const $ = (id) => doc.getElementById(id);
  const [kind, name] = $("sweep-workload").value.split(/:(.*)/s);
  const json = (id, what) => {
    try { return JSON.parse($(id).value); } catch (err) { throw new Error(`${what}: not JSON (${err.message})`); }
  };
  return { workload: { [kind]: name }, config: json("sweep-config", "base config"),
    grid: json("sweep-grid", "grid"), slos: parsePairs($("sweep-slos").value, "SLOs"),
    gpu_prices: parsePairs($("sweep-prices").value, "GPU prices") };
}
