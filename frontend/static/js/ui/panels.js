// The config and workload panels: forms built from the field lists (flag names as labels),
// read back and validated, with each bad field's message shown beside it.

import { CONFIG_FIELDS, SYNTHETIC_FIELDS, fieldValue, setFieldSchema, validateForm } from "../state/fields.js";
import { bindAsyncDefault, choose, selectFor } from "./config_form.js";
import { baseConfig, blocksNote, RESOLVED } from "../state/config_state.js";

function input(doc, field, value) {
  let el;
  if (field.kind === "choice" || field.kind === "catalog") {
    el = selectFor(doc, field, value);
  } else {
    el = doc.createElement("input");
    if (field.kind === "bool") {
      el.type = "checkbox";
      el.checked = !!value;
    } else {
      el.type = "text";
      el.inputMode = field.kind === "text" ? "text" : "decimal";
      el.value = value ?? "";
    }
  }
  el.name = field.name;
  el.id = `field-${field.name}`;
  if (field.help) el.title = field.help;
  return el;
}

/** Fill `form` with one labelled input per field; `values` gives the current config. */
export function buildForm(form, fields, values) {
  const doc = form.ownerDocument;
  const frag = doc.createDocumentFragment();
  for (const field of fields) {
    const label = doc.createElement("label");
    label.dataset.field = field.name;
    if (field.kind === "catalog") label.className = "wide"; // long names: the select on its own row
    const name = doc.createElement("span");
    for (const [k, part] of field.name.split(/(?<=_)/).entries()) { // wrap after an underscore
      name.append(...(k ? [doc.createElement("wbr"), part] : [part]));
    }
    if (field.help) name.title = field.help;
    label.append(name, input(doc, field, fieldValue(values, field)));
    frag.appendChild(label);
  }
  form.appendChild(frag);
}

let refreshAsyncNote = () => {};
const filledWith = new WeakMap(); // form -> the config it was last filled with

/** Show `values` in the form's inputs; `readOnly` disables them (a replay's recorded config). */
export function fillForm(form, fields, values, readOnly = false) {
  filledWith.set(form, values);
  for (const field of fields) {
    const el = form.querySelector(`[name="${field.name}"]`);
    if (!el) continue;
    const value = fieldValue(values, field);
    if (field.kind === "bool") el.checked = !!value;
    else if (el.tagName === "SELECT") choose(el, field, value);
    else el.value = value ?? "";
    el.disabled = readOnly;
  }
  refreshAsyncNote();
}

/** Raw values of the fields present in `form`. */
export function readForm(form, fields) {
  const raw = {};
  for (const field of fields) {
    const el = form.querySelector(`[name="${field.name}"]`);
    if (!el) continue;
    raw[field.name] = field.kind === "bool" ? el.checked : el.value;
  }
  return raw;
}

/** Mark bad fields and show their messages (as text); returns whether all were valid. */
export function showErrors(form, errors) {
  for (const label of form.querySelectorAll("label[data-field]")) {
    label.classList.toggle("bad", label.dataset.field in errors);
    label.querySelector(".field-error")?.remove();
    const message = errors[label.dataset.field];
    if (message) {
      const p = form.ownerDocument.createElement("span");
      p.className = "field-error";
      p.textContent = message;
      label.appendChild(p);
    }
  }
  return Object.keys(errors).length === 0;
}

/** Validate both forms; {config, synthetic, errors}. */
export function collect(configForm, workloadForm) {
  const c = validateForm(CONFIG_FIELDS, readForm(configForm, CONFIG_FIELDS), filledWith.get(configForm));
  const s = validateForm(SYNTHETIC_FIELDS, readForm(workloadForm, SYNTHETIC_FIELDS));
  showErrors(configForm, c.errors);
  showErrors(workloadForm, s.errors);
  return { config: c.values, synthetic: s.values, errors: { ...c.errors, ...s.errors } };
}

// The workload select's entry for the uploaded trace the page runs.
export const UPLOADED = "uploaded";

/** Presets as <option>s (text only); `presets` = [{name, title?, description?}]. `upload`
 * names the uploaded trace the page runs, shown as one more choice. */
export function fillPresets(select, presets, current, upload = null) {
  const doc = select.ownerDocument;
  select.replaceChildren();
  const option = (value, text) => {
    const o = doc.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  };
  for (const p of presets) option(p.name, p.title ?? p.name);
  option("synthetic", "synthetic (parameters below)");
  if (upload) option(UPLOADED, `uploaded: ${upload}`);
  if (upload) select.value = UPLOADED;
  else if (current) select.value = current;
}

/** The workload select names the uploaded trace a session runs; a replay's config form shows
 * the config it was recorded with, read-only, and any other run the page's own config (put
 * back when the form was a replay's). Returns whether the form is now read-only. */
export function showWorkload(doc, init, { presets, preset, pageConfig, readOnly }) {
  const form = doc.getElementById("config-form");
  if (init.trace) fillPresets(doc.getElementById("preset"), presets, preset, init.trace.filename ?? init.trace.format);
  const replay = init.source === "replayed";
  const live = init.source === "live";
  if (replay || live) fillForm(form, CONFIG_FIELDS, init.config, true);
  else if (readOnly) fillForm(form, CONFIG_FIELDS, pageConfig);
  doc.getElementById("config-note").textContent = replay ? "the recording's config: a replay cannot change it"
    : live ? "the live endpoint's config: restart servescope serve --openai to change it" : "";
  return replay || live;
}

const blocksInput = (doc) => doc.querySelector('#config-form [name="num_gpu_blocks"]');
const blocksTyped = (doc) => blocksInput(doc)?.dataset.typed === "1";
/** The RESOLVED settings the user set in the form (the others follow vLLM's defaults). */
const typedResolved = (doc) => RESOLVED.filter((name) =>
  doc.querySelector(`#config-form [name="${name}"]`)?.dataset.typed === "1");

/** Say where the pool size comes from (model and GPU, or the number given). */
function showBlocksNote(doc) {
  const form = doc.getElementById("config-form");
  const read = (name) => form.querySelector(`[name="${name}"]`)?.value || null;
  doc.getElementById("blocks-note").textContent = blocksNote({ model: read("model"), gpu: read("gpu") }, blocksTyped(doc));
}

/** Show `config` in the config form; `typed`: whether its num_gpu_blocks was the user's
 * (a preset chosen: nothing is). */
function showConfig(doc, config, typed, resetTyped = false) {
  fillForm(doc.getElementById("config-form"), CONFIG_FIELDS, config);
  const el = blocksInput(doc);
  if (el) el.dataset.typed = typed ? "1" : "";
  for (const name of resetTyped ? RESOLVED : []) {
    const input = doc.querySelector(`#config-form [name="${name}"]`);
    if (input) input.dataset.typed = "";
  }
  showBlocksNote(doc);
}

/** On init of a simulated run: the form shows the config that runs and the preset it runs. */
export function showRunningConfig(doc, init, { typedBlocks }) {
  if (init.source === "replayed" || init.source === "live") return;
  showConfig(doc, init.config, typedBlocks);
  const select = doc.getElementById("preset");
  if (init.preset && !init.trace && [...select.options].some((o) => o.value === init.preset)) select.value = init.preset;
}

/** The config form validated: {config (every field), blocksTyped, errors}. */
export function formConfig(doc) {
  const { config, errors } = collect(doc.getElementById("config-form"), doc.getElementById("workload-form"));
  return { config, blocksTyped: blocksTyped(doc), typed: typedResolved(doc), errors };
}

/** Build the forms from `boot` (config, the fields' schema, presets) and bind them:
 * `onApply({config, synthetic, choice, blocksTyped})` once both forms validate, `onUpload(file)`.
 * Choosing a preset shows its own config in the form. */
export function bindPanels(doc, boot, preset, { onApply, onUpload }) {
  const $ = (id) => doc.getElementById(id);
  setFieldSchema(boot.fields);
  buildForm($("config-form"), CONFIG_FIELDS, boot.config ?? {});
  refreshAsyncNote = bindAsyncDefault($("config-form")) ?? (() => {});
  buildForm($("synthetic"), SYNTHETIC_FIELDS, Object.fromEntries(SYNTHETIC_FIELDS.map((f) => [f.name, f.default])));
  fillPresets($("preset"), boot.presets ?? [], preset);
  showBlocksNote(doc);
  $("preset").addEventListener("change", (ev) => {
    const p = (boot.presets ?? []).find((x) => x.name === ev.target.value);
    $("preset-about").textContent = p?.description ?? "";
    showConfig(doc, baseConfig(boot.presets ?? [], ev.target.value), false, true);
  });
  $("config-form").addEventListener("input", (ev) => {
    if (ev.target.name === "num_gpu_blocks") ev.target.dataset.typed = ev.target.value.trim() ? "1" : "";
    if (RESOLVED.includes(ev.target.name)) ev.target.dataset.typed = "1";
    showBlocksNote(doc);
  });
  $("apply").addEventListener("click", (ev) => {
    ev.preventDefault();
    const { config, synthetic, errors } = collect($("config-form"), $("workload-form"));
    const messages = Object.values(errors);
    $("form-errors").hidden = messages.length === 0;
    $("form-errors").textContent = messages.join("\n");
    if (!messages.length) onApply({ config, synthetic, choice: $("preset").value, blocksTyped: blocksTyped(doc), typed: typedResolved(doc) });
  });
  $("upload").addEventListener("change", (ev) => onUpload(ev.target.files[0]));
}

export { CONFIG_FIELDS, SYNTHETIC_FIELDS };
