"""The process that drives Ray for the server's sweeps. Ray's driver runs there, not in the
server, so that Ray failing ends a sweep, never the server: a check failure in Ray's core
worker aborts its process (Ray 2.60 aborts when a task it cancels replies as done at that
moment: it fails the task, then the reply completes it; a cancel as a point finished took the
whole server down). One process is kept between
sweeps (Ray stays up); it is replaced after a sweep that did not end done (a cancel may have
left Ray's own bookkeeping mid-way) and when it has died; the server stops it when no sweep
has run for a while (api/jobs/sweeps.py).

    server -> driver   ("run", sweep_id, plan, specs, max_parallel) | ("cancel", sweep_id)
                       | ("stop",)
    driver -> server   ("report", report)... then ("done", result) | ("cancelled", None)
                       | ("failed", message)
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from servescope.api.errors import DriverDied
from servescope.api.jobs.workers import tree_rss_bytes
from servescope.core.request import RequestSpec
from servescope.sweep import plan as sweep_plan
from servescope.sweep import ray_runner
from servescope.sweep.ray_runner import Cancelled

CTX = multiprocessing.get_context("spawn")  # Ray's threads do not survive a fork
POLL_S = 0.25
STOP_S = 20.0  # how long a stopping driver may take to shut Ray down before it is killed



def _main(conn: Connection, ray_address: str | None, num_cpus: int | None) -> None:
    """The driver: run each sweep it is sent; the receiving thread takes cancels meanwhile."""
    runs: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
    current: dict[str, Any] = {"id": None, "cancel": threading.Event()}
    threading.Thread(target=_receive, args=(conn, runs, current), daemon=True).start()
    started = False
    try:
        while (msg := runs.get()) is not None:
            _, _, plan, specs, max_parallel = msg
            try:
                started |= ray_runner.connect(ray_address, num_cpus)
                result = sweep_plan.execute(plan, specs, ray_address, max_parallel,
                                            on_report=lambda r: conn.send(("report", r)),
                                            cancel=current["cancel"], num_cpus=num_cpus)
                end: tuple[str, Any] = ("done", result)
            except Cancelled:
                end = ("cancelled", None)
            except Exception as err:  # noqa: BLE001 - the sweep reports what ended it
                end = ("failed", f"{type(err).__name__}: {err}")
            current["id"] = None  # before the server hears of the end and sends the next run
            conn.send(end)
    finally:
        if started:
            import ray

            ray.shutdown()


def _receive(conn: Connection, runs: queue.Queue[tuple[Any, ...] | None],
             current: dict[str, Any]) -> None:
    """Runs go to the main thread; a cancel for the sweep running sets its event; a stop or
    the server gone ends the driver."""
    try:
        while (msg := conn.recv())[0] != "stop":
            if msg[0] == "run":
                current["cancel"] = threading.Event()
                current["id"] = msg[1]
                runs.put(msg)
            elif msg[0] == "cancel" and msg[1] == current["id"]:
                current["cancel"].set()
    except (EOFError, OSError):
        pass
    current["cancel"].set()
    runs.put(None)


class Driver:
    """The server's side: one sweep at a time, from one thread (Sweeps' worker)."""

    def __init__(self, ray_address: str | None, num_cpus: int | None) -> None:
        self.ray_address, self.num_cpus = ray_address, num_cpus
        self.proc: Any = None
        self.conn: Connection | None = None

    def run(self, sweep_id: str, plan: sweep_plan.Plan, specs: list[RequestSpec],
            max_parallel: int | None, cancel: threading.Event,
            on_report: Callable[[dict[str, Any]], None]) -> tuple[str, Any]:
        """Run a sweep to its end, handing each point's report to `on_report` as it comes:
        its end, ("done", result) | ("cancelled", None) | ("failed", message);
        DriverDied when the process ended meanwhile."""
        conn = self._connection()
        try:
            conn.send(("run", sweep_id, plan, specs, max_parallel))
            cancelling = False
            while True:
                if cancel.is_set() and not cancelling:
                    conn.send(("cancel", sweep_id))
                    cancelling = True
                if not conn.poll(POLL_S):
                    continue
                kind, payload = conn.recv()
                if kind != "report":
                    break
                on_report(payload)
        except (EOFError, OSError):
            raise DriverDied(f"the process running Ray for this sweep ended (exit code "
                             f"{self.close()}); the next sweep starts a new one") from None
        if kind != "done":
            self.close()
        return kind, payload

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def memory(self) -> int:
        """Resident bytes of the driver and the Ray processes it started (0 when none)."""
        proc = self.proc
        return tree_rss_bytes(proc.pid) if proc is not None and proc.pid else 0

    def _connection(self) -> Connection:
        if self.proc is None or not self.proc.is_alive():
            self.close()
            ours, theirs = CTX.Pipe()
            self.proc = CTX.Process(target=_main, args=(theirs, self.ray_address, self.num_cpus),
                                    daemon=True, name="servescope-sweep-driver")
            self.proc.start()
            theirs.close()  # the driver's end: our recv sees EOF when it dies
            self.conn = ours
        assert self.conn is not None
        return self.conn

    def close(self, grace_s: float = STOP_S) -> int | None:
        """Stop the driver (Ray with it): asked first, killed after `grace_s`; its exit
        code."""
        proc, conn, self.proc, self.conn = self.proc, self.conn, None, None
        if conn is not None:
            try:
                conn.send(("stop",))
            except OSError:
                pass
        if proc is not None:
            proc.join(grace_s)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        if conn is not None:
            conn.close()
        return None if proc is None else proc.exitcode
