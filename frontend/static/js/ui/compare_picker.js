// The compare picker: choose 2-4 configs to run side by side among the lesson's four modes and
// the current preset's variants, by their plain names.

import { LESSON_FOUR } from "./compare_mode.js";

/** The choices for a preset: the lesson's four modes, then its variants ([{name, config}]). */
export function pickerEntries(presets, preset) {
  const own = presets.find((p) => p.name === preset)?.variant_sets ?? [];
  return [...LESSON_FOUR, ...own.map((v) => ({ name: `${preset}: ${v.name}`, config: v.set }))];
}

const key = (config) => JSON.stringify(Object.entries(config).sort());

/** Fill the picker with `entries`, ticking those in `chosen` (configs); `onChoose(configs)`
 * when the user asks for 2-4 of them. */
export function showPicker(doc, entries, chosen, onChoose) {
  const box = doc.getElementById("compare-picker");
  const want = new Set(chosen.map(key));
  const boxes = entries.map((e) => {
    const label = doc.createElement("label");
    const input = doc.createElement("input");
    input.type = "checkbox";
    input.checked = want.has(key(e.config));
    input.dataset.config = JSON.stringify(e.config);
    label.append(input, ` ${e.name}`);
    return label;
  });
  const go = doc.createElement("button");
  go.type = "button";
  go.id = "compare-these";
  go.textContent = "Compare these";
  const count = () => box.querySelectorAll("input:checked").length;
  const sync = () => { go.disabled = count() < 2 || count() > 4; };
  const legend = doc.createElement("legend");
  legend.textContent = "configs to compare (2-4)";
  box.replaceChildren(legend, ...boxes, go);
  box.onchange = sync;
  go.onclick = () => onChoose([...box.querySelectorAll("input:checked")].map((i) => JSON.parse(i.dataset.config)));
  sync();
}
