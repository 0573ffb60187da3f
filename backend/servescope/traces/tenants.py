"""Multi-tenant, multi-turn chat traffic: tenants with their own system prompt, users' sessions of
several turns each, think time between a turn's answer and the next turn, seeded.

Every prompt is made of shared segments (RequestSpec.prefix), so the prefix cache sees what a
real chat service's does:

    turn 1: [tenant's system prompt][user message 1]
    turn 2: [tenant's system prompt][user message 1][answer 1][user message 2]
    turn k: ... the whole conversation so far, then user message k

A tenant's sessions share its system prompt; a session's next turn shares everything its last
turn sent plus that turn's answer (as a segment of its own: the simulated answer's tokens are
the request's own, so the next turn finds the answer's blocks only where it computed them
itself). Sessions start as a Poisson process; a turn is sent when the previous one would have
finished (the same open-loop estimate as `closed_loop`: prompt / prefill rate + output x TPOT)
plus an exponential think time. `session_id` names each request's session.
"""

from __future__ import annotations

import heapq

import numpy as np

from servescope.core.request import RequestSpec
from servescope.traces.lengths import LengthSpec, lengths

Segment = tuple[str, int]


def multi_tenant(rng: np.random.Generator, num_requests: int, rate_per_s: float,
                 num_tenants: int = 4, system_prompt_len: LengthSpec = (1024, 4096),
                 turns: LengthSpec = (1, 6), user_len: LengthSpec = (32, 512),
                 output_len: LengthSpec = (32, 256), think_s: float = 10.0,
                 tpot_ms: float = 20.0, prefill_tokens_per_s: float = 10_000.0,
                 id_prefix: str = "t") -> list[RequestSpec]:
    """`num_requests` turns of sessions starting at `rate_per_s` sessions a second, each of a
    tenant drawn uniformly; `think_s` is the mean think time between turns (exponential)."""
    if num_requests < 0 or rate_per_s <= 0 or num_tenants < 1:
        raise ValueError("num_requests >= 0, rate_per_s > 0 and num_tenants >= 1 are required")
    if think_s < 0 or tpot_ms < 0 or prefill_tokens_per_s <= 0:
        raise ValueError("think_s and tpot_ms must be >= 0, prefill_tokens_per_s > 0")
    systems = [(f"{id_prefix}-sys{t}", int(n))
               for t, n in enumerate(lengths(rng, system_prompt_len, num_tenants))]
    rows: list[tuple[float, int, int, tuple[Segment, ...], int]] = []
    pending: list[float] = []  # arrivals of drawn turns after the latest session's start
    start, session, num_settled = 0.0, 0, 0
    # Sessions start until num_requests turns arrive before the latest start: a later session
    # starts later still, so those are the first num_requests turns of the whole traffic.
    while num_settled < num_requests:
        start += float(rng.exponential(1.0 / rate_per_s)) if session else 0.0
        while pending and pending[0] <= start:
            heapq.heappop(pending)
            num_settled += 1
        tenant = int(rng.integers(num_tenants))
        drawn = _session(rng, session, start, systems[tenant], int(lengths(rng, turns, 1)[0]),
                         (user_len, output_len, think_s, tpot_ms, prefill_tokens_per_s),
                         id_prefix)
        rows += drawn
        num_settled += 1  # its first turn arrives at its start
        for turn in drawn[1:]:
            heapq.heappush(pending, turn[0])
        session += 1
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return [RequestSpec(f"{id_prefix}{i}", sum(n for _, n in prefix), output, arrival_s=t,
                        prefix=prefix, session_id=f"{id_prefix}-s{s}")
            for i, (t, s, _, prefix, output) in enumerate(rows[:num_requests])]


def _session(rng: np.random.Generator, session: int, start: float, system: Segment,
             num_turns: int, shape: tuple[LengthSpec, LengthSpec, float, float, float],
             id_prefix: str) -> list[tuple[float, int, int, tuple[Segment, ...], int]]:
    """(arrival_s, session, turn, prompt segments, output_len) of each turn of one session."""
    user_len, output_len, think_s, tpot_ms, prefill_tokens_per_s = shape
    users = lengths(rng, user_len, num_turns)
    outputs = lengths(rng, output_len, num_turns)
    thinks = rng.exponential(think_s, num_turns) if think_s > 0 else np.zeros(num_turns)
    history: list[Segment] = [system]
    turns = []
    at = start
    for k in range(num_turns):
        history.append((f"{id_prefix}-s{session}-u{k}", int(users[k])))
        prompt = tuple(history)
        turns.append((at, session, k, prompt, int(outputs[k])))
        prompt_len = sum(n for _, n in prompt)
        at += (prompt_len / prefill_tokens_per_s + int(outputs[k]) * tpot_ms / 1000.0
               + float(thinks[k]))
        history.append((f"{id_prefix}-s{session}-a{k}", int(outputs[k])))
    return turns
