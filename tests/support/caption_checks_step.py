"""Checks of what a caption says a step did: its batch, a preemption and the resume it
promises, a resume, a prefix-cache hit, a finish and static batching's waste."""

from __future__ import annotations

import re

from support.caption_claims import Ctx, N, claim, named_ids, num

RESUME_HOW = rf"(?P<how>chunked under the (?P<budget>{N})-token budget|in one prefill)"


def check_how(ctx: Ctx, m: re.Match[str]) -> None:
    chunked = ctx.policy == "vllm-v1" and ctx.config.enable_chunked_prefill
    if chunked:
        ctx.check(num(m["budget"]) == ctx.rec["token_budget"], f"budget in {m[0]!r}")
    else:
        ctx.check(m["how"] == "in one prefill", f"{ctx.policy} does not chunk: {m[0]!r}")


@claim(rf"(?P<live>{N}) requests? decodes? one token each"
       rf"( and (?P<pad>\d+) finished (one decodes|ones decode) padding)?")
def decodes(ctx: Ctx, m: re.Match[str]) -> None:
    sched = ctx.rec["scheduled"]
    ctx.check(all(e["kind"] == "decode" for e in sched), "only decodes")
    live = sum(e["sampled"] for e in sched)
    ctx.check((num(m["live"]), num(m["pad"])) == (live, len(sched) - live), m[0])


@claim("nothing is scheduled this step")
def nothing(ctx: Ctx, m: re.Match[str]) -> None:
    ctx.check(not ctx.rec["scheduled"], m[0])


@claim(rf"a batch of (?P<k>\d+) requests? starts: (it|each) prefills (?P<n>{N}) tokens"
       r"(, the longest prompt \(shorter ones padded\))?")
def batch_start(ctx: Ctx, m: re.Match[str]) -> None:
    new = ctx.rec["new"]
    longest = max(ctx.fold.specs[r].prompt_len for r in new)
    ctx.check(ctx.policy == "static" and len(new) == num(m["k"]) == len(ctx.rec["scheduled"])
              and all(e["n"] == num(m["n"]) == longest for e in ctx.rec["scheduled"]), m[0])


CHUNK = rf"(?P<id>\S+)'s (?P<last>last )?(?P<n>{N})-token prefill chunk"


@claim(rf"(?P<chunks>.+? prefill chunk)( and (?P<more>\d+) more chunks)?"
       rf" (fills? the step|shares? this step with (?P<d>{N}) decodes?)")
def chunks(ctx: Ctx, m: re.Match[str]) -> None:
    prefills = [e for e in ctx.rec["scheduled"] if e["kind"] == "prefill"]
    named = [c.groupdict() for c in re.finditer(CHUNK, m["chunks"])]
    ctx.check(len(prefills) == len(named) + num(m["more"]), f"chunk count: {m[0]!r}")
    for c in named:
        e = ctx.entry(c["id"])
        prompt = ctx.fold.specs[c["id"]].prompt_len
        ctx.check(e is not None and e["kind"] == "prefill" and e["n"] == num(c["n"]), m[0])
        assert e is not None
        last = e["start"] + e["n"] >= prompt and e["start"] > 0
        ctx.check(bool(c["last"]) == last, f"'last' chunk of {c['id']}: {m[0]!r}")
    decodes = len(ctx.rec["scheduled"]) - len(prefills)
    ctx.check(num(m["d"]) == decodes, f"decodes: {m[0]!r}")


PREEMPT = r"(?P<id>\S+) is preempted \(no free KV block for the running batch\): "


@claim(PREEMPT + rf"it gives back its (?P<b>{N}) blocks?, and its resume will "
       rf"(take (?P<x>{N}) tokens from the prefix cache \(its (?P<k>{N}) full blocks?, if none is "
       rf"evicted first\) and recompute (?P<y>{N})|recompute all (?P<t>{N}) tokens \(prompt and "
       rf"output so far\)), {RESUME_HOW}")
def preempted(ctx: Ctx, m: re.Match[str]) -> None:
    """Checked at the preemption, and again at its resume (`resumed` below)."""
    rid, fold = m["id"], ctx.fold
    table = fold.given_back.get(rid, [])
    ctx.check(ctx.rec["preempted"] == [rid] and num(m["b"]) == len(table), m[0])
    x, total = num(m["x"]), num(m["x"]) + num(m["y"]) if m["x"] else num(m["t"])
    ctx.check(total == fold.tokens[rid], f"{rid} has {fold.tokens[rid]} tokens: {m[0]!r}")
    ctx.check(x == num(m["k"]) * ctx.config.block_size, m[0])
    check_how(ctx, m)
    blocks = set(table[:num(m["k"])])
    ctx.pending[rid] = {"x": x, "total": total, "blocks": blocks, "claim": m[0],
                        "evicted": bool(blocks & ctx.fold.removed)}


def check_resumes(ctx: Ctx) -> None:
    """At every record (mid phase): a promised resume as the preemption's caption said. Its
    cached blocks give exactly the promised tokens unless some were evicted meanwhile."""
    for p in ctx.pending.values():
        p["evicted"] |= bool(p["blocks"] & ctx.fold.removed)
    for rid in ctx.rec["resumed"]:
        ctx.check(rid not in ctx.fold.finish_step, f"{rid} resumes after it finished")
        p = ctx.pending.pop(rid, None)
        if p is None:
            continue
        hit = ctx.rec["num_cached_tokens"][rid]
        ctx.check(ctx.fold.tokens[rid] == p["total"], f"{rid} resumes with other tokens: {p}")
        ok = hit <= p["x"] if p["evicted"] else hit == p["x"]
        ctx.check(ok, f"{rid} resumes with {hit} cached tokens, not as {p['claim']!r} said")


@claim(PREEMPT + rf"it gives back its (?P<b>{N}) blocks?, and its resume will (take what the "
       rf"prefix cache still holds of it and recompute the rest|recompute all its tokens), "
       + RESUME_HOW)
def preempted_vague(ctx: Ctx, m: re.Match[str]) -> None:
    """Counts left out (async scheduling, or a record reached by a keyframe)."""
    table = ctx.fold.given_back.get(m["id"], [])
    ctx.check(ctx.rec["preempted"] == [m["id"]] and num(m["b"]) == len(table), m[0])
    check_how(ctx, m)


@claim(r"(?P<id>\S+) is preempted \(no free KV block for the running batch\) while its last "
       rf"token is in flight: it gives back its ((?P<b>{N}) )?blocks?, and that token finishes "
       "it, so it never resumes")
def preempted_finishing(ctx: Ctx, m: re.Match[str]) -> None:
    """(Async scheduling) The victim's last sampled token was in flight: the records finish it
    in the update before this schedule, and its table goes back at this preemption."""
    rid, fold = m["id"], ctx.fold
    ctx.check(ctx.config.async_scheduling and ctx.rec["preempted"] == [rid], m[0])
    ctx.check(fold.finish_step.get(rid) == ctx.rec["step"] - 1, f"{rid} did not finish: {m[0]!r}")
    table = fold.given_back.get(rid, [])
    ctx.check(m["b"] is None or num(m["b"]) == len(table), f"{len(table)} blocks: {m[0]!r}")


@claim(r"(?P<ids>.+) are preempted \(no free KV block for the running batch\): they give back "
       r"their blocks, and each resume will (take what the prefix cache still holds of it and "
       rf"recompute the rest|recompute all its tokens), {RESUME_HOW}")
def preempted_many(ctx: Ctx, m: re.Match[str]) -> None:
    ids, more = named_ids(m["ids"])
    ctx.check(ctx.rec["preempted"][:len(ids)] == ids
              and len(ctx.rec["preempted"]) == len(ids) + more, m[0])
    check_how(ctx, m)


@claim(r"(?P<id>\S+)( \(and \d+ others?\))? resumes after its preemption: it "
       rf"(takes (?P<x>{N}) of its (?P<t>{N}) tokens from the prefix cache and recomputes "
       rf"(?P<y>{N})|recomputes all (?P<t2>{N}) of its tokens)(, (?P<n>{N}) of them)? this step")
def resumed(ctx: Ctx, m: re.Match[str]) -> None:
    rid, rec = m["id"], ctx.rec
    hit, total = rec["num_cached_tokens"][rid], ctx.fold.tokens[rid]
    e = ctx.entry(rid)
    ctx.check(rid in rec["resumed"] and e is not None and e["start"] == hit, m[0])
    assert e is not None
    ctx.check((num(m["x"]), num(m["t"] or m["t2"])) == (hit, total), f"{hit}/{total}: {m[0]!r}")
    ctx.check(not m["y"] or num(m["y"]) == total - hit, m[0])
    ctx.check(num(m["n"] or str(total - hit)) == e["n"], f"this step's tokens: {m[0]!r}")


@claim(r"(?P<id>\S+)( \(and (?P<o>\d+) others?\))? resumes after its preemption")
def resumed_vague(ctx: Ctx, m: re.Match[str]) -> None:
    resumed = ctx.rec["resumed"]
    ctx.check(resumed[:1] == [m["id"]] and len(resumed) == 1 + num(m["o"]), m[0])


@claim(rf"(?P<id>\S+)( \(and (?P<o>\d+) others?\))? reuses (?P<n>{N}) cached prompt tokens "
       rf"\((?P<b>{N}) blocks?\) from the prefix cache")
def cache_hit(ctx: Ctx, m: re.Match[str]) -> None:
    hits = {r: n for r, n in ctx.rec["num_cached_tokens"].items()
            if n > 0 and r not in ctx.rec["resumed"]}
    ctx.check(hits.get(m["id"]) == num(m["n"]) == num(m["b"]) * ctx.config.block_size
              and len(hits) == 1 + num(m["o"]), m[0])


@claim(rf"(?P<ids>.+?) finish(es)?, freeing (?P<b>{N}) blocks?")
def finish(ctx: Ctx, m: re.Match[str]) -> None:
    ids, more = named_ids(m["ids"])
    fin = ctx.rec["finished"]
    ctx.check(fin[:len(ids)] == ids and len(fin) == len(ids) + more, m[0])
    ctx.check(num(m["b"]) == len(ctx.rec["freed_blocks"]), m[0])


@claim(rf"(?P<ids>.+?) finish(es)? but keeps? (its|their) (?P<b>{N}) blocks? until the batch ends")
def finish_static(ctx: Ctx, m: re.Match[str]) -> None:
    ids, more = named_ids(m["ids"])
    fin = ctx.rec["finished"]
    ctx.check(ctx.policy == "static" and fin[:len(ids)] == ids and len(fin) == len(ids) + more
              and not set(fin) & set(ctx.rec["released"]), m[0])
    ctx.check(num(m["b"]) == sum(len(ctx.fold.tables[r]) for r in fin), m[0])


@claim(rf"the batch ends: (?P<ids>.+) had finished (up to (?P<ago>{N}) steps? )?earlier but held "
       rf"(its|their) ((?P<b>{N}) blocks?|blocks), decoding padding, until (?P<last>.+) finished")
def static_waste(ctx: Ctx, m: re.Match[str]) -> None:
    """The W key's caption: the members that held their blocks after finishing, how long, how
    many blocks, and who finished last."""
    rec, fold = ctx.rec, ctx.fold
    early = [r for r in rec["released"] if r not in rec["finished"]]
    ids, more = named_ids(m["ids"])
    ctx.check(ctx.policy == "static" and early[:len(ids)] == ids
              and len(early) == len(ids) + more, m[0])
    ago = max(rec["step"] - fold.finish_step[r] for r in early)
    ctx.check(not m["ago"] or num(m["ago"]) == ago > 0, f"{ago} steps: {m[0]!r}")
    held = sum(len(fold.tables[r]) for r in early)
    ctx.check(not m["b"] or num(m["b"]) == held, f"{held} blocks: {m[0]!r}")
    last, _ = named_ids(m["last"])
    ctx.check(rec["finished"][:len(last)] == last, m[0])
