// The upload control's options: one labelled input per upload option (named as the server
// names the form fields, as the config panel uses vLLM's flag names), read back for an upload,
// and a refusal shown next to the upload with the option it names marked.

import { showErrors } from "./panels.js";

export const UPLOAD_OPTIONS = [
  { name: "format", help: "the trace format, overriding detection" },
  { name: "window_start_s", help: "keep requests arriving this many seconds or more after the trace's first request; arrivals are rebased to it" },
  { name: "window_end_s", help: "keep requests arriving up to this many seconds after the trace's first request" },
  { name: "sample_n", help: "keep a uniform random sample of N requests (after the window), in file order; sharegpt-stats: how many are drawn" },
  { name: "limit", help: "keep the first N requests (after the window)" },
  { name: "seed", help: "the seed of sample_n (default 0)" },
  { name: "arrival_scale", help: "multiply arrival times: 2 halves the rate (default 1)" },
  { name: "length_scale", help: "multiply prompt and output lengths (default 1)" },
  { name: "rate_per_s", help: "sharegpt-stats only: Poisson arrivals at this rate (default: all at 0)" },
];
const NAMES = new Set(UPLOAD_OPTIONS.map((o) => o.name));

function choice(doc, value, text, title = "") {
  const o = doc.createElement("option");
  o.value = value;
  o.textContent = text;
  if (title) o.title = title;
  return o;
}

function optionInput(doc, option) {
  let el;
  if (option.name === "format") {
    el = doc.createElement("select");
    el.append(choice(doc, "", "detect"));
  } else {
    el = doc.createElement("input");
    el.type = "text";
    el.inputMode = "decimal";
  }
  el.name = option.name;
  el.id = `upload-${option.name}`;
  el.title = option.help;
  return el;
}

/** Build the option inputs, fill the format choices once `formats` (a promise of GET
 * /api/traces/formats) resolves (if it fails, detection still works), and bind "upload again"
 * (the chosen file, the options as they are now) to `onUpload(file)`. */
export function bindUploadOptions(doc, onUpload, formats = Promise.resolve([])) {
  const fields = doc.getElementById("upload-fields");
  for (const option of UPLOAD_OPTIONS) {
    const label = doc.createElement("label");
    label.dataset.field = option.name;
    const name = doc.createElement("span");
    name.textContent = option.name;
    name.title = option.help;
    label.append(name, optionInput(doc, option));
    fields.appendChild(label);
  }
  const input = doc.getElementById("upload");
  const again = doc.getElementById("upload-again");
  input.addEventListener("change", () => { again.disabled = !input.files.length; });
  again.addEventListener("click", (ev) => {
    ev.preventDefault();
    if (input.files.length) onUpload(input.files[0]);
  });
  doc.getElementById("upload-form").addEventListener("submit", (ev) => ev.preventDefault());
  formats.then((list) => fillFormats(doc, list), () => {});
}

/** The format select's choices: [{name, kind, description}] from GET /api/traces/formats. */
export function fillFormats(doc, formats) {
  const select = doc.getElementById("upload-format");
  for (const f of formats) select.append(choice(doc, f.name, `${f.name} (${f.kind})`, f.description));
}

/** {option: text} of the options that are not blank. */
export function readUploadOptions(doc) {
  const out = {};
  for (const option of UPLOAD_OPTIONS) {
    const text = doc.getElementById(`upload-${option.name}`)?.value.trim() ?? "";
    if (text) out[option.name] = text;
  }
  return out;
}

/** Show an UploadError next to the upload (null clears it): an option it names is marked with
 * the message, and the options open when the fix is there (a bad option, too many requests). */
export function showUploadError(doc, err) {
  const box = doc.getElementById("upload-error");
  const option = err && NAMES.has(err.field) ? err.field : null;
  const text = !err ? "" : option ? `Upload refused: ${option} (marked below).` : `Upload failed: ${err.message}`;
  box.textContent = text;
  box.hidden = !text;
  showErrors(doc.getElementById("upload-fields"), option ? { [option]: err.message } : {});
  if (option || err?.detail?.max_requests) doc.getElementById("upload-options").open = true;
}
