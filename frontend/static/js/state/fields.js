// The config and workload fields the panels show, with vLLM's engine-argument names, and their
// validation: the same rules as EngineConfig.validate, so a bad value is caught before a send.
// The server validates again; its message wins when it has one.

export const POLICIES = ["vllm-v1", "vllm-v0", "static", "naive"];
export const ALLOCATORS = ["paged", "max", "pow2", "oracle"];

// kind: int | float | bool | choice | catalog; `help` is the field's tooltip.
// A `catalog` field is a choice among the names GET /api/models or /api/gpus gives (filled in
// when they arrive); `none` labels the empty choice of a nullable choice or catalog field.
const PLACEHOLDER = "none: placeholder step time"; // 10 ms + 0.02 ms a token, no memory sizing
export const CONFIG_FIELDS = [
  { name: "model", kind: "catalog", catalog: "models", nullable: true, none: PLACEHOLDER,
    help: "--model: a Hugging Face id from the catalog; with a gpu, the cost model prices each " +
      "step, and sizes the KV pool when num_gpu_blocks is empty" },
  { name: "gpu", kind: "catalog", catalog: "gpus", nullable: true, none: PLACEHOLDER,
    help: "the GPU each tensor-parallel rank runs on (catalog short name)" },
  { name: "tensor_parallel_size", kind: "int", min: 1, help: "--tensor-parallel-size" },
  { name: "dtype", kind: "choice", options: ["auto", "bfloat16", "float16"],
    help: "--dtype of activations and unquantized weights; auto = the checkpoint's" },
  { name: "quantization", kind: "choice", options: ["fp8", "nvfp4"], nullable: true,
    none: "none", help: "--quantization fp8: 1-byte linear-layer weights; nvfp4: 4.5-bit " +
      "(Blackwell only); none: weights in dtype or the checkpoint's own format" },
  { name: "data_parallel_size", kind: "int", min: 1,
    help: "--data-parallel-size: replicas of the TP group; the session runs one engine with " +
      "every request, `servescope sim` deals them over the ranks" },
  { name: "kv_cache_dtype", kind: "choice", options: ["auto", "fp8"],
    help: "--kv-cache-dtype: auto = dtype; fp8 halves the bytes a token's KV takes" },
  { name: "gpu_memory_utilization", kind: "float", gt: 0, max: 1, help: "fraction in (0, 1]" },
  { name: "block_size", kind: "int", min: 1, pow2: true, help: "tokens per KV block" },
  { name: "num_gpu_blocks", kind: "int", min: 2, nullable: true,
    help: "KV blocks incl. the null block; empty = sized from model and gpu memory" },
  { name: "max_model_len", kind: "int", min: 2, nullable: true,
    help: "--max-model-len; empty = the model's max_position_embeddings" },
  { name: "max_num_seqs", kind: "int", min: 1 },
  { name: "max_num_batched_tokens", kind: "int", min: 1, help: "the token budget per step" },
  { name: "enable_chunked_prefill", kind: "bool" },
  { name: "long_prefill_token_threshold", kind: "int", min: 0, help: "0 = no cap per chunk" },
  { name: "enable_prefix_caching", kind: "bool" },
  { name: "policy", kind: "choice", options: POLICIES },
  { name: "allocator", kind: "choice", options: ALLOCATORS },
];

export const SYNTHETIC_FIELDS = [
  { name: "num_requests", kind: "int", min: 1, max: 5000 },
  { name: "request_rate", kind: "float", gt: 0, help: "requests per second (Poisson)" },
  { name: "prompt_len_min", kind: "int", min: 1 },
  { name: "prompt_len_max", kind: "int", min: 1 },
  { name: "output_len_min", kind: "int", min: 1 },
  { name: "output_len_max", kind: "int", min: 1 },
  { name: "seed", kind: "int", min: 0 },
];

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
  if (field.kind === "catalog") return String(text); // the server resolves the catalog's aliases
  const value = Number(text);
  if (!Number.isFinite(value)) throw new Error(`expected a number, got ${JSON.stringify(String(text))}`);
  if (field.kind === "int" && !Number.isInteger(value)) throw new Error(`expected a whole number, got ${text}`);
  checkRange(field, value);
  return value;
}

function checkRange(field, value) {
  if (field.min !== undefined && value < field.min) throw new Error(`must be at least ${field.min}, got ${value}`);
  if (field.max !== undefined && value > field.max) throw new Error(`must be at most ${field.max}, got ${value}`);
  if (field.gt !== undefined && value <= field.gt) throw new Error(`must be greater than ${field.gt}, got ${value}`);
  if (field.pow2 && (value & (value - 1)) !== 0) throw new Error(`must be a power of two, got ${value}`);
}

/** Validate a form's raw values: {values, errors: {name: message}}. */
export function validateForm(fields, raw) {
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
  return { values, errors };
}

function crossCheck(v, errors) {
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
