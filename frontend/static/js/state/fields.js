// The config and workload fields the panels show, with vLLM's engine-argument names, and their
// validation: the same rules as EngineConfig.validate, so a bad value is caught before a send.
// The server validates again; its message wins when it has one.

// Which EngineConfig fields the config form shows first, in this order; every other field the
// server lists follows. Layout only: kinds, bounds, choices, defaults and help come from the
// server (GET /api/config/fields, also in the boot data), set with setFieldSchema.
const CONFIG_FORM = ["model", "gpu", "tensor_parallel_size", "data_parallel_size", "dtype", "quantization",
  "kv_cache_dtype", "gpu_memory_utilization", "block_size", "num_gpu_blocks", "max_model_len",
  "max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill",
  "long_prefill_token_threshold", "enable_prefix_caching", "async_scheduling", "policy",
  "allocator"];
// The empty choice of model and gpu: 10 ms + 0.02 ms a token, no memory sizing.
const PLACEHOLDER = "none: placeholder step time";

// kind: int | float | bool | choice | catalog. A `catalog` field is a choice among the names
// GET /api/models or /api/gpus gives (filled in when they arrive); `none` labels the empty
// choice of a nullable choice or catalog field.
export let CONFIG_FIELDS = [];
export let SYNTHETIC_FIELDS = [];

/** The forms' fields from the server's schema {config: [...], synthetic: [...]}. */
export function setFieldSchema(schema) {
  const rank = (f) => (CONFIG_FORM.includes(f.name) ? CONFIG_FORM.indexOf(f.name) : CONFIG_FORM.length);
  CONFIG_FIELDS = (schema?.config ?? []).flatMap(speculativeFields).map(withNone)
    .sort((a, b) => rank(a) - rank(b));
  SYNTHETIC_FIELDS = (schema?.synthetic ?? []).map(withNone);
}

// vLLM's --speculative-config JSON is one field on the server; the form shows the three a user
// sets (the rest keep vLLM's defaults) and reads them back into it. The methods: the server's
// options where it lists them, else the common ones of vLLM 0.33's SpeculativeMethod
// (vllm/config/speculative.py).
const SPEC = "speculative_config";
const SPEC_METHODS = ["ngram", "eagle", "eagle3", "mtp", "draft_model", "suffix"];

function speculativeFields(field) {
  if (field.name !== SPEC) return [field];
  return [
    { name: `${SPEC}.method`, kind: "choice", nullable: true, options: field.options ?? SPEC_METHODS,
      help: "speculative decoding's drafting method (--speculative-config method); none: off" },
    { name: `${SPEC}.num_speculative_tokens`, kind: "int", nullable: true, min: 1,
      help: "K: draft tokens proposed per request per step" },
    { name: `${SPEC}.model`, kind: "text", nullable: true,
      help: "the draft model or EAGLE/MTP head (none: the method's own, e.g. [ngram])" },
  ];
}

/** A field's value in a config: a speculative_config part is read inside that object. */
export function fieldValue(values, field) {
  const [head, part] = field.name.split(".");
  return part === undefined ? values?.[head] : values?.[head]?.[part];
}

/** The parts' values as the one speculative_config object (null when no method is chosen);
 * the keys the form does not show (e.g. acceptance_rates) are kept from `base`, the object the
 * form was filled with, while its method stays the same. */
function foldSpeculative(values, errors, base) {
  const parts = Object.keys(values).filter((k) => k.startsWith(`${SPEC}.`));
  if (!parts.length) return;
  const spec = {};
  for (const k of parts) {
    if (values[k] !== null) spec[k.slice(SPEC.length + 1)] = values[k];
    delete values[k];
  }
  if (!spec.method) {
    values[SPEC] = null;
    return;
  }
  const k = `${SPEC}.num_speculative_tokens`;
  if (spec.num_speculative_tokens === undefined && !errors[k]) errors[k] = `${k}: a value is required with a method`;
  const kept = base?.method === spec.method ? Object.entries(base)
    .filter(([key]) => !parts.includes(`${SPEC}.${key}`)) : [];
  values[SPEC] = { ...Object.fromEntries(kept), ...spec };
}

function withNone(field) {
  if (field.kind === "catalog") return { ...field, none: PLACEHOLDER };
  return field.nullable && field.kind === "choice" ? { ...field, none: "none" } : { ...field };
}

/** Parse one input's text into the field's type; throws Error(message) when it is invalid. */
export function parseField(field, raw) {
  const text = typeof raw === "string" ? raw.trim() : raw;
  if (field.kind === "bool") return raw === true || raw === "true" || raw === "on";
  if (text === "" || text === null || text === undefined) {
    if (field.nullable) return null;
    throw new Error("a value is required");
  }
  if (field.kind === "choice") {
    if (!field.options.includes(text)) throw new Error(`must be one of ${field.options.join(", ")}`);
    return text;
  }
  if (field.kind === "catalog" || field.kind === "text") return String(text); // the server resolves a catalog's aliases
  const value = Number(text);
  if (!Number.isFinite(value)) throw new Error(`expected a number, got ${JSON.stringify(String(text))}`);
  if (field.kind === "int" && !Number.isInteger(value)) throw new Error(`expected a whole number, got ${text}`);
  checkRange(field, value);
  return value;
}

function checkRange(field, value) {
  const low = field.min ?? field.gt;
  const high = field.max ?? field.lt;
  const tooLow = low !== undefined && (field.gt !== undefined ? value <= low : value < low);
  const tooHigh = high !== undefined && (field.lt !== undefined ? value >= high : value > high);
  if (tooLow || tooHigh) throw new Error(`must be ${span(field)}, got ${value}`);
  if (field.pow2 && (value & (value - 1)) !== 0) throw new Error(`must be a power of two, got ${value}`);
}

/** The allowed range in words, as core/config.py's _span writes it. */
function span(field) {
  const bounded = field.max !== undefined || field.lt !== undefined;
  if (field.min !== undefined && !bounded) return `at least ${field.min}`;
  if (field.gt !== undefined && !bounded) return `greater than ${field.gt}`;
  const left = field.min !== undefined ? `[${field.min}` : `(${field.gt}`;
  const right = field.max !== undefined ? `${field.max}]` : `${field.lt})`;
  return `in ${left}, ${right}`;
}

/** Validate a form's raw values: {values, errors: {name: message}}; `filled`: the config the
 * form was last filled with (what its hidden parts keep). */
export function validateForm(fields, raw, filled = null) {
  const values = {};
  const errors = {};
  for (const field of fields) {
    if (!(field.name in raw)) continue;
    try {
      values[field.name] = parseField(field, raw[field.name]);
    } catch (err) {
      errors[field.name] = `${field.name}: ${err.message}`;
    }
  }
  crossCheck(values, errors);
  foldSpeculative(values, errors, filled?.[SPEC]);
  return { values, errors };
}

/** vLLM's default for async_scheduling as `vllm serve` on a GPU resolves it: on when a model
 * and a gpu are chosen (the V1 policy only). */
export function asyncDefault(v) {
  return Boolean(v.model && v.gpu) && (v.policy ?? "vllm-v1") === "vllm-v1";
}

/** The words beside the async_scheduling toggle: what it is set to against vLLM's default. */
export function asyncNote(v) {
  const gpu = Boolean(v.model && v.gpu);
  if (v.async_scheduling) return gpu ? "on, as vllm serve runs on a GPU (vLLM's default)" : "on: vLLM's AsyncScheduler";
  return gpu ? "off: vllm serve would run it on (--no-async-scheduling)" : "off: the synchronous scheduler";
}

function crossCheck(v, errors) {
  if (v.async_scheduling && v.policy && v.policy !== "vllm-v1") {
    errors.async_scheduling = `async_scheduling: only the vllm-v1 policy schedules asynchronously (policy is '${v.policy}')`;
  }
  if (v.allocator && v.allocator !== "paged" && v.policy === "vllm-v1" && v.enable_prefix_caching) {
    errors.allocator = "allocator: contiguous allocators cannot share prefix blocks; " +
      "set enable_prefix_caching to false";
  }
  for (const what of ["prompt_len", "output_len"]) {
    if (v[`${what}_min`] > v[`${what}_max`]) {
      errors[`${what}_max`] = `${what}_max: must be at least ${what}_min (${v[`${what}_min`]})`;
    }
  }
}

/** A server `error` message: the config field it names (compare mode's "configs[1].model" names
 * model; null when none) and the text for the page's error line, which says that a refused
 * configure left the session as it was. */
export function serverError(msg) {
  const [, where = "", name = ""] = /^(configs\[\d+\]\.)?(.*)$/.exec(msg.field ?? "");
  const own = name !== "" && msg.message.startsWith(`${name}: `);
  const text = !msg.field ? msg.message : own ? where + msg.message : `${msg.field}: ${msg.message}`;
  const kept = msg.code === "config" || msg.code === "workload";
  return { field: name || null, text: kept ? `Not applied; the session runs as before. ${text}` : text };
}
