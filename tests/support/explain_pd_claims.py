"""The P/D section's claims on /explain (#pd), each shown on the simulator's P/D fleet
(core/pd_fleet.py) with a hand-made request over a slow link (registered into
support/explain_claims.py's CLAIMS)."""

from __future__ import annotations

from servescope.core.kv_link import LinkSpec
from servescope.core.pd_events import PoolStep, Transfer
from servescope.core.pd_fleet import PDFleet
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from support.explain_claims import claim
from support.factories import make_config

# 1,000,000 B/s after 13 ms, 1,000 bytes a token: a 12-token prompt's KV takes 25 ms to cross,
# many decode steps of the placeholder step time (10 ms + 0.02 ms a token).
LINK = LinkSpec("infiniband", 1e-3, 13.0)
BYTES_PER_TOKEN = 1000


def decode_records(prompt_len: int) -> tuple[list, Transfer]:
    configs = [make_config()]
    fleet = PDFleet(configs, configs, [RequestSpec("r0", prompt_len, 3, arrival_s=0.0)],
                    make_router("round-robin", 1), make_router("round-robin", 1), LINK, 0,
                    BYTES_PER_TOKEN, records=True)
    events = list(fleet.run())
    [transfer] = [e for e in events if isinstance(e, Transfer)]
    return [e.record for e in events if isinstance(e, PoolStep) and e.pool == "decode"], transfer


@claim("pd-waiting-for-kv")
def pd_waiting_for_kv() -> None:
    """Admitted with all its prompt's blocks (12 tokens of 4: 3 blocks), nothing scheduled
    while its KV crosses, then its last prompt token alone, sampled."""
    records, transfer = decode_records(12)
    admit = next(k for k, r in enumerate(records) if "r0" in r.new_blocks)  # admitted
    assert len(records[admit].new_blocks["r0"]) == 3
    assert "r0" in records[admit].waiting_for_kv
    assert all(e.id != "r0" for e in records[admit].scheduled)
    arrived = next(k for k, r in enumerate(records) if "r0" in r.kv_arrived)
    assert arrived >= admit
    for rec in records[admit:arrived]:
        assert all(e.id != "r0" for e in rec.scheduled)
    first = next(r for r in records[arrived:] if any(e.id == "r0" for e in r.scheduled))
    entry = next(e for e in first.scheduled if e.id == "r0")
    assert (entry.start, entry.n, entry.sampled) == (11, 1, True)
    assert first.time_s >= transfer.done_s
