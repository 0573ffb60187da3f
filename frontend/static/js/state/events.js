// The lesson's events, found in step records: what a "next event" key jumps to, what lesson
// playback pauses at, and what the markers on the scrubber and the charts show. Pure.

// key: the keyboard key that jumps to the next one; colour: its marker (colour-blind-safe).
export const EVENT_KINDS = [
  { kind: "preemption", label: "preemption", key: "r", colour: "#d55e00" },
  { kind: "prefix_cache_hit", label: "prefix-cache hit", key: "h", colour: "#009e73" },
  { kind: "chunked_prefill", label: "chunked prefill", key: "u", colour: "#56b4e9" },
  { kind: "finished", label: "request finished", key: "f", colour: "#999999" },
  { kind: "budget_blocked", label: "admission blocked by the budget", key: "b", colour: "#e69f00" },
  { kind: "static_waste", label: "static batch waste", key: "w", colour: "#cc79a7" },
];

/** The event kinds a record shows; `promptLen(id)` gives a request's prompt length. */
export function eventKinds(rec, promptLen = () => undefined) {
  const kinds = [];
  if (rec.preempted?.length) kinds.push("preemption");
  if (Object.values(rec.num_cached_tokens ?? {}).some((n) => n > 0)) kinds.push("prefix_cache_hit");
  const partial = (e) => e.kind === "prefill" && (promptLen(e.id) ?? Infinity) > e.start + e.n;
  if (rec.scheduled?.some(partial)) kinds.push("chunked_prefill");
  if (rec.finished?.length) kinds.push("finished");
  const used = (rec.scheduled ?? []).reduce((a, e) => a + e.n, 0);
  if (rec.waiting?.length && !rec.new?.length && used >= rec.token_budget) kinds.push("budget_blocked");
  // static batching frees a batch's tables at its end: members that finished earlier held theirs
  const finished = new Set(rec.finished ?? []);
  if ((rec.released ?? []).some((id) => !finished.has(id))) kinds.push("static_waste");
  return kinds;
}

/** The first of `events` ([{iter, kind}], by iter) of `kind` after record `iter`, or null. */
export function nextEvent(events, kind, iter) {
  return events.find((e) => e.kind === kind && e.iter > iter) ?? null;
}

export const kindForKey = (key) => EVENT_KINDS.find((k) => k.key === key)?.kind ?? null;
export const labelOf = (kind) => EVENT_KINDS.find((k) => k.kind === kind)?.label ?? kind;
