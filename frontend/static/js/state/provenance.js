// Where a run's numbers come from, in words for the page: the records (simulated by the engine,
// replayed from a recording, or live: the OpenAI endpoint's engine as requests arrive), the workload's name (a preset or an uploaded file), what the
// file does not record, and a benchmark's measured figures beside the simulated ones.

const LIVE_TITLE = "records of the live engine behind servescope serve --openai, as clients' requests arrive (each under its request id)";

/** {source, name, badgeTitle, measured, facts} for a pane's init. */
export function provenance(init, preset = "") {
  const trace = init?.trace ?? null;
  const source = init?.source ?? "simulated";
  const name = trace ? (trace.filename ?? `uploaded ${trace.format}`) : (init?.preset ?? preset ?? "");
  let badgeTitle = "records simulated by ServeScope's engine";
  if (source === "live") {
    return { source, name: "live endpoint", badgeTitle: LIVE_TITLE, measured: false, facts: [] };
  }
  if (source === "replayed") {
    badgeTitle = `records replayed from ${name} (${trace?.format ?? "a recording"}), not simulated`;
  } else if (trace) {
    badgeTitle = `records simulated on the requests of ${name} (${trace.format})`;
  }
  return { source, name, badgeTitle, measured: !!trace?.measured, facts: traceFacts(trace) };
}

function traceFacts(trace) {
  if (!trace) return [];
  const facts = [];
  if (trace.source) facts.push(`The recording was ${trace.source === "recorded" ? "recorded from vLLM's scheduler" : "simulated"}.`);
  if (trace.unknown?.length) facts.push(`Not in this ${trace.format} file: ${trace.unknown.join("; ")}.`);
  const skipped = Object.entries(trace.skipped ?? {});
  if (skipped.length) facts.push(`Skipped rows: ${skipped.map(([why, n]) => `${n} ${why}`).join(", ")}.`);
  for (const note of trace.notes ?? []) facts.push(note);
  return facts;
}

// The lesson's figures, under the summary keys both sides use.
export const COMPARED = [
  ["mean_ttft_ms", "mean TTFT", "ms"], ["p99_itl_ms", "P99 ITL", "ms"],
  ["output_throughput", "output", "tok/s"],
];

const num = (v, unit) => (v == null || Number.isNaN(v) ? "-" : `${v.toFixed(unit === "ms" ? 1 : 0)} ${unit}`);

/** "measured X · simulated Y" per figure the benchmark measured; `simulated` is the run's
 * summary, or its figures so far (`final` false). Empty when nothing was measured. */
export function measuredText(measured, simulated, final) {
  if (!measured) return "";
  const parts = COMPARED.filter(([key]) => measured[key] != null).map(([key, label, unit]) =>
    `${label}: measured ${num(measured[key], unit)}, simulated ${num(simulated?.[key], unit)}`);
  if (!parts.length) return "";
  return `${parts.join(" · ")}${final ? "" : " (simulated so far)"}`;
}

/** The upload line: what the file is and whether its run is simulated or replayed. */
export function uploadStatus(name, data) {
  const what = data.report?.kind === "steps"
    ? `${data.summary?.num_records ?? "?"} recorded steps, replayed`
    : `${data.num_requests ?? "?"} requests, simulated` + (data.summary?.measured ? "; measured TTFT/ITL kept" : "");
  return `${name} (${data.format}): ${what}`;
}
