"""Drill-down in a session that runs a fleet: stream another replica's block-level records.
The fleet is run again from its start with that replica viewed (it is deterministic, so every
replica does exactly what it did), and the session goes back to the simulated time it was at,
playing if it was."""

from __future__ import annotations

from servescope.api.errors import SessionError
from servescope.api.sessions.session import Session
from servescope.api.wire import protocol as P


async def view_replica(session: Session, msg: P.ViewReplica) -> None:
    built = session.built
    assert built is not None
    if msg.engine >= len(built.engines) or built.engines[msg.engine]["fleet"] is None:
        raise SessionError(f"engine {msg.engine} of this session runs no fleet", "engine",
                           "bad_message")
    fleet = built.engines[msg.engine]["fleet"]
    if msg.replica >= fleet["replicas"]:
        raise SessionError(f"replica {msg.replica}: this fleet has replicas 0-"
                           f"{fleet['replicas'] - 1}", "replica", "bad_message")
    viewed = [e["fleet"]["replica"] if e["fleet"] else 0 for e in built.engines]
    if viewed[msg.engine] == msg.replica:
        return
    viewed[msg.engine] = msg.replica
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
