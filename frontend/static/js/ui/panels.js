// The config and workload panels: forms built from the field lists (flag names as labels),
// read back and validated, with each bad field's message shown beside it.

import { CONFIG_FIELDS, SYNTHETIC_FIELDS, validateForm } from "../state/fields.js";

function input(doc, field, value) {
  let el;
  if (field.kind === "choice") {
    el = doc.createElement("select");
    for (const opt of field.options) {
      const o = doc.createElement("option");
      o.value = opt;
      o.textContent = opt;
      el.appendChild(o);
    }
    el.value = value ?? field.options[0];
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
  return el;
}

/** Fill `form` with one labelled input per field; `values` gives the current config. */
export function buildForm(form, fields, values) {
  const doc = form.ownerDocument;
  const frag = doc.createDocumentFragment();
  for (const field of fields) {
    const label = doc.createElement("label");
    label.dataset.field = field.name;
    const name = doc.createElement("span");
    name.textContent = field.name;
    if (field.help) name.title = field.help;
    label.append(name, input(doc, field, values?.[field.name]));
    frag.appendChild(label);
  }
  form.appendChild(frag);
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
  const c = validateForm(CONFIG_FIELDS, readForm(configForm, CONFIG_FIELDS));
  const s = validateForm(SYNTHETIC_FIELDS, readForm(workloadForm, SYNTHETIC_FIELDS));
  showErrors(configForm, c.errors);
  showErrors(workloadForm, s.errors);
  return { config: c.values, synthetic: s.values, errors: { ...c.errors, ...s.errors } };
}

/** Presets as <option>s (text only); `presets` = [{name, title?, description?}]. */
export function fillPresets(select, presets, current) {
  const doc = select.ownerDocument;
  select.replaceChildren();
  for (const p of presets) {
    const o = doc.createElement("option");
    o.value = p.name;
    o.textContent = p.title ?? p.name;
    select.appendChild(o);
  }
  const synthetic = doc.createElement("option");
  synthetic.value = "synthetic";
  synthetic.textContent = "synthetic (parameters below)";
  select.appendChild(synthetic);
  if (current) select.value = current;
}

export { CONFIG_FIELDS, SYNTHETIC_FIELDS };
