// The model and GPU choices of the config form, from the server's catalogs (GET /api/models,
// /api/gpus) as {value, text}: the value is the name EngineConfig takes (a model's `name`, its
// Hugging Face id; a GPU's `key`, its short name), the text says what it is.

// Three significant digits, rounded on whole numbers (12.85e9: "12.9B", not 12.8 from 12.849...).
function billions(n) {
  if (n < 1e10) return `${Math.round(n / 1e7) / 100}B`;
  return n < 1e11 ? `${Math.round(n / 1e8) / 10}B` : `${Math.round(n / 1e9)}B`;
}

export function modelOptions(models) {
  return models.map((m) => ({ value: m.name, text: `${m.name} (${billions(m.num_parameters)}, ${m.torch_dtype})` }));
}

export function gpuOptions(gpus) {
  return gpus.map((g) => ({ value: g.key, text: `${g.key}: ${g.name}, ${g.memory_gb} GB` }));
}

/** The options of a catalog field (`field.catalog` "models" | "gpus") from {models, gpus}. */
export function catalogOptions(field, catalog) {
  return field.catalog === "models" ? modelOptions(catalog?.models ?? []) : gpuOptions(catalog?.gpus ?? []);
}

/** `options` with `value` among them: a name the catalog does not list as such (an alias from a
 * link, or the catalog not loaded yet) stays chosen, as given; the server resolves or refuses it. */
export function withValue(options, value) {
  if (value === null || value === undefined || value === "" || options.some((o) => o.value === value)) {
    return options;
  }
  return [...options, { value: String(value), text: `${value} (as given)` }];
}
