"""A router over live replicas on one port (`--router`): the fleet's routers (core/routers/)
pick from each replica's state as its /metrics says it now, hearing of what finished since."""

from __future__ import annotations

from collections.abc import Sequence

from servescope.api.openai.live import LiveEngine
from servescope.core.fleet import scrape
from servescope.core.request import RequestSpec
from servescope.core.routers.base import Router


class RoutedPick:
    def __init__(self, engines: Sequence[LiveEngine], router: Router) -> None:
        self.engines, self.router = list(engines), router
        self.num_reported = [0] * len(self.engines)

    def __call__(self, spec: RequestSpec) -> LiveEngine:
        now_s = self.engines[0].now_s()
        states = []
        for k, live in enumerate(self.engines):
            done = live.engine.done_requests
            for request in done[self.num_reported[k]:]:
                self.router.finished(request.id, k, request.finish_time or 0.0)
            self.num_reported[k] = len(done)
            states.append(scrape(live.engine, k, now_s))
        replica = self.router.pick(spec, states, now_s).replica
        self.router.sent(spec, replica, now_s)
        return self.engines[replica]
