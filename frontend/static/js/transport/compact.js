// Expands a keyframe's compact columns (docs/protocol.md, "Keyframe"): `{runs: [value, count,
// ...]}` and `{ranges: [first, count, ...]}` back to plain arrays; plain arrays pass through.

const RUN_COLUMNS = ["status", "num_computed_tokens", "num_output_tokens", "num_cached_tokens",
  "num_preemptions", "block_owner", "block_ref_count"];

export function expand(column) {
  if (Array.isArray(column)) return column;
  const out = [];
  if (column.runs) {
    const r = column.runs;
    for (let k = 0; k < r.length; k += 2) for (let n = 0; n < r[k + 1]; n++) out.push(r[k]);
  } else {
    const r = column.ranges;
    for (let k = 0; k < r.length; k += 2) for (let n = 0; n < r[k + 1]; n++) out.push(r[k] + n);
  }
  return out;
}

export function expandKeyframe(kf) {
  const out = { ...kf, tables: kf.tables.map(([r, b]) => [r, expand(b)]),
    cached_blocks: expand(kf.cached_blocks) };
  for (const name of RUN_COLUMNS) out[name] = expand(kf[name]);
  return out;
}
