"""Drill-down in a session that runs a fleet: stream another replica's block-level records.
The fleet is run again from its start with that replica viewed (it is deterministic, so every
replica does exactly what it did), and the session goes back to the simulated time it was at,
playing if it was."""

from __future__ import annotations

from typing import Any

from servescope.api.errors import SessionError
from servescope.api.sessions.session import Session
from servescope.api.wire import protocol as P
from servescope.api.wire.fleet import ViewReplica


async def view_replica(session: Session, msg: ViewReplica) -> None:
    built = session.built
    assert built is not None
    if msg.engine >= len(built.engines) or built.engines[msg.engine]["fleet"] is None:
        raise SessionError(f"engine {msg.engine} of this session runs no fleet", "engine",
                           "bad_message")
    fleet = built.engines[msg.engine]["fleet"]
    lane = wanted_lane(fleet, msg)
    viewed = [lane_of(e["fleet"]) if e["fleet"] else 0 for e in built.engines]
    if viewed[msg.engine] == lane:
        return
    viewed[msg.engine] = lane
    t, playing, speed = session.sim_time, session.playing, session.speed
    configs = built.configs
    again = P.Configure(type="configure", workload=built.workload, labels=built.labels,
                        **({"configs": configs} if len(configs) > 1 else {"config": configs[0]}))
    await session.configure(again, viewed)
    if t != float("-inf"):
        await session.seek(P.Seek(type="seek", time_s=t))  # a fleet's seek keeps time t
    if playing:
        session.play(speed)
    else:
        session.pause()  # tells every viewer where it stands


def lane_of(fleet: dict[str, Any]) -> int:
    """The viewed replica's lane (a P/D fleet's: prefill replicas first, then decode)."""
    pools = fleet.get("pools")
    if pools and fleet.get("pool") == "decode":
        return int(pools["prefill"]["replicas"]) + int(fleet["replica"])
    return int(fleet["replica"])


def wanted_lane(fleet: dict[str, Any], msg: ViewReplica) -> int:
    """The lane a drill-down asks for: replica `replica` (of `pool`, in a P/D fleet)."""
    pools = fleet.get("pools")
    if not pools:
        count, where = fleet["replicas"], "this fleet"
    elif msg.pool is None:
        raise SessionError("a P/D fleet's drill-down names the pool (prefill or decode)",
                           "pool", "bad_message")
    else:
        count, where = pools[msg.pool]["replicas"], f"the {msg.pool} pool"
    if msg.replica >= count:
        raise SessionError(f"replica {msg.replica}: {where} has replicas 0-{count - 1}",
                           "replica", "bad_message")
    offset = pools["prefill"]["replicas"] if pools and msg.pool == "decode" else 0
    return int(msg.replica) + int(offset)
