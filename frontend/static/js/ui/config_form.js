// The engine config form's choices and the server's word on them: model and GPU selects filled
// from the catalogs, how the KV pool was sized (init.engines[0].memory_breakdown), and a refused
// config's message beside the field it names.

import { CONFIG_FIELDS, asyncDefault, asyncNote, serverError } from "../state/fields.js";
import { catalogOptions, withValue } from "../state/catalog.js";
import { describeMemory } from "../state/memory.js";

const BASE = new WeakMap(); // select -> its field's own options, without the empty or as-given one

function optionEl(doc, { value, text }) {
  const o = doc.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

/** Give `select` the field's options (`none` first when the field has one) with `value` chosen. */
export function setOptions(select, field, options, value) {
  BASE.set(select, options);
  const none = field.none === undefined ? [] : [{ value: "", text: field.none }];
  const list = [...none, ...withValue(options, value)];
  select.replaceChildren(...list.map((o) => optionEl(select.ownerDocument, o)));
  select.value = value === null || value === undefined ? list[0]?.value ?? "" : String(value);
}

/** A select for a choice or catalog field (a catalog's options come with fillCatalog). */
export function selectFor(doc, field, value) {
  const el = doc.createElement("select");
  const options = field.kind === "choice" ? field.options.map((v) => ({ value: v, text: v })) : [];
  setOptions(el, field, options, value);
  return el;
}

/** Show `value` in a select built by selectFor. */
export function choose(select, field, value) {
  setOptions(select, field, BASE.get(select) ?? [], value);
}

/** Fill the model and GPU selects from {models, gpus}, keeping what each has chosen. */
export function fillCatalog(doc, catalog) {
  const form = doc.getElementById("config-form");
  for (const field of CONFIG_FIELDS.filter((f) => f.kind === "catalog")) {
    const el = form.querySelector(`[name="${field.name}"]`);
    if (el) setOptions(el, field, catalogOptions(field, catalog), el.value || null);
  }
}

/** On init: how engine 0's pool was sized, and no refusal left standing beside a field. */
export function showEngineConfig(doc, init) {
  const engine = init.engines?.[0] ?? init;
  doc.getElementById("kv-sizing").textContent = describeMemory(engine);
  clearServerError(doc);
}

function clearServerError(doc) {
  for (const el of doc.querySelectorAll("#config-form .field-error.server")) {
    el.parentElement.classList.remove("bad");
    el.remove();
  }
}

/** A server `error`: a config refusal's message beside the field it names; returns the text
 * for the page's error line. */
export function showServerError(doc, msg) {
  clearServerError(doc);
  const { field, text } = serverError(msg);
  const label = field && doc.querySelector(`#config-form label[data-field="${CSS.escape(field)}"]`);
  if (label && msg.code === "config") {
    label.querySelector(".field-error")?.remove();
    const p = doc.createElement("span");
    p.className = "field-error server";
    p.textContent = msg.message;
    label.classList.add("bad");
    label.appendChild(p);
  }
  return text;
}

/** The async_scheduling toggle follows vLLM's default (on once a model and a GPU are chosen)
 * until the user sets it; a note beside it says which it is. */
export function bindAsyncDefault(form) {
  const toggle = form.querySelector('[name="async_scheduling"]');
  if (!toggle) return;
  const note = form.ownerDocument.createElement("span");
  note.className = "field-note";
  note.id = "async-note";
  toggle.parentElement.appendChild(note);
  const values = () => Object.fromEntries(["model", "gpu", "policy"].map(
    (name) => [name, form.querySelector(`[name="${name}"]`)?.value || null]));
  const update = (ev) => {
    if (ev?.target === toggle) toggle.dataset.touched = "1";
    else if (ev && ["model", "gpu", "policy"].includes(ev.target.name) && !toggle.dataset.touched) {
      toggle.checked = asyncDefault(values());
    }
    note.textContent = asyncNote({ ...values(), async_scheduling: toggle.checked });
  };
  form.addEventListener("change", update);
  update();
  return update;
}
