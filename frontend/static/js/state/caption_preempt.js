// What a preemption gives back and what its resume will cost (and at the resume, what it did):
// the victim's full blocks keep their hashes in the free queue until handed out again, so its
// resume finds them in the prefix cache and recomputes only the rest, under the token budget.

import {
  countable, factsOf, listIds, num, plural, prefillHow, reqOf, tokensOf,
} from "./caption_words.js";

const WHY = "no free KV block for the running batch";

/** true / false when the config says whether the victim's blocks can be found again; null when
 * it does not say (a recording without the flag). Contiguous reservations are never cached. */
function caching(run) {
  const c = run.config ?? {};
  if ((c.allocator ?? "paged") !== "paged") return false;
  return c.enable_prefix_caching ?? null;
}

function vagueResume(run, rec) {
  const how = prefillHow(run, rec);
  return caching(run) === false ? `will recompute all its tokens, ${how}`
    : `will take what the prefix cache still holds of it and recompute the rest, ${how}`;
}

/** "its resume will take 1,648 tokens from the prefix cache ... and recompute 5, chunked ...":
 * the full blocks it had computed stay cached unless the free queue hands them out first. */
function resumePlan(run, rec, id) {
  const facts = factsOf(run, rec);
  const total = tokensOf(run, id);
  const computed = facts?.num_computed_at_preemption.get(id);
  const how = prefillHow(run, rec);
  if (!countable(run) || total === null || computed === undefined) return `its resume ${vagueResume(run, rec)}`;
  const cache = caching(run);
  if (cache === null) return `its resume ${vagueResume(run, rec)}`;
  const bs = run.blockSize;
  const full = cache ? Math.min(Math.floor(computed / bs), Math.floor((total - 1) / bs)) : 0;
  if (full === 0) {
    return `its resume will recompute all ${num(total)} tokens (prompt and output so far), ${how}`;
  }
  return `its resume will take ${num(full * bs)} tokens from the prefix cache (its ` +
    `${plural(full, "full block")}, if none is evicted first) and recompute ` +
    `${num(total - full * bs)}, ${how}`;
}

function givesBack(run, rec, id) {
  const n = factsOf(run, rec)?.num_blocks_given_back.get(id);
  return n === undefined ? "it gives back its blocks" : `it gives back its ${plural(n, "block")}`;
}

/** (Async scheduling) Whether the victim's last token was in flight: the token finished it in
 * the previous record's update (reduce.js keeps it finished), so it is never resumed. */
const lastInFlight = (run, id) => reqOf(run, id)?.status === "finished";

const IN_FLIGHT = "while its last token is in flight";
const NO_RESUME = "that token finishes it, so it never resumes";

/** The clause for a step that preempted: who, why, and what the resume will cost. */
export function preemptClause(run, rec) {
  const ids = rec.preempted;
  if (ids.length > 1) {
    return `${listIds(ids)} are preempted (${WHY}): they give back their blocks, and each resume ` +
      vagueResume(run, rec);
  }
  const id = ids[0];
  if (lastInFlight(run, id)) {
    return `${id} is preempted (${WHY}) ${IN_FLIGHT}: ${givesBack(run, rec, id)}, and ${NO_RESUME}`;
  }
  return `${id} is preempted (${WHY}): ${givesBack(run, rec, id)}, and ${resumePlan(run, rec, id)}`;
}

/** The tour's note at the first preemption, in the caption's terms. */
export function preemptionNote(run, rec) {
  const id = rec.preempted[0];
  const last = run.config?.scheduling_policy === "priority" ? "" : " (the last one admitted)";
  if (lastInFlight(run, id)) {
    return `Notice: ${id}${last} is preempted ${IN_FLIGHT}: the pool has no free block for the ` +
      `running batch, so ${givesBack(run, rec, id)}; ${NO_RESUME}.`;
  }
  return `Notice: ${id}${last} is preempted: the pool has no free block for the running batch, so ` +
    `${givesBack(run, rec, id)} and goes back to the head of the queue; ${resumePlan(run, rec, id)}.`;
}

/** At a resume: how much of it the prefix cache gave back and how much it recomputes. */
export function resumeClause(run, rec) {
  const id = rec.resumed?.[0];
  if (id === undefined) return null;
  const others = rec.resumed.length > 1 ? ` (and ${plural(rec.resumed.length - 1, "other")})` : "";
  const e = rec.scheduled.find((x) => x.id === id);
  const now = tokensOf(run, id);
  if (!countable(run) || !e || now === null) return `${id}${others} resumes after its preemption`;
  const total = now - (e.sampled ? 1 : 0); // its tokens before this step sampled one
  const hit = rec.num_cached_tokens?.[id] ?? 0;
  const cost = hit > 0
    ? `takes ${num(hit)} of its ${num(total)} tokens from the prefix cache and recomputes ${num(total - hit)}`
    : `recomputes all ${num(total)} of its tokens`;
  const chunk = e.n < total - hit ? `, ${num(e.n)} of them this step` : " this step";
  return `${id}${others} resumes after its preemption: it ${cost}${chunk}`;
}
