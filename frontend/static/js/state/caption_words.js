// Words and counts the caption modules share: numbers as a reader says them, request lists,
// and what the run's config and state say about one request.

export const num = (n) => n.toLocaleString("en-US");

export function plural(n, word) {
  return `${num(n)} ${word}${n === 1 ? "" : "s"}`;
}

export function listIds(ids, max = 3) {
  if (ids.length > max) return `${ids.slice(0, max).join(", ")} and ${ids.length - max} more`;
  return ids.length < 2 ? ids.join("") : `${ids.slice(0, -1).join(", ")} and ${ids[ids.length - 1]}`;
}

/** The batching policy the run's engine used (a recording of vLLM carries none: vLLM V1). */
export const policyOf = (run) => run.config?.policy ?? "vllm-v1";

export const reqOf = (run, id) => run.reqs[run.index.get(id)] ?? null;

/** A request's tokens now: its prompt and the tokens it has sampled (what a resume recomputes). */
export function tokensOf(run, id) {
  const r = reqOf(run, id);
  const prompt = r?.spec?.prompt_len;
  return prompt === undefined ? null : prompt + (r.num_output_tokens ?? 0);
}

/** The facts reduce.js kept about `rec`, when the state at the cursor was folded from it. */
export const factsOf = (run, rec) => (run.facts && run.facts.iter === rec.iter ? run.facts : null);

/** Whether captions may count blocks and tokens: under async scheduling a record's counts are
 * taken a step apart (the next step is scheduled before this one's update), so they say less. */
export const countable = (run) => !run.config?.async_scheduling;

export const cdiv = (a, b) => Math.ceil(a / b);

/** How the resume of a preempted request (or any admission) computes its prompt. */
export function prefillHow(run, rec) {
  const chunked = policyOf(run) === "vllm-v1" && run.config?.enable_chunked_prefill !== false;
  return chunked ? `chunked under the ${num(rec.token_budget)}-token budget` : "in one prefill";
}
