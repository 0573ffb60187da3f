"""Random: a replica drawn uniformly, from the router's own seeded generator.

llm-d's random picker (gateway-api-inference-extension, pkg/epp/scheduling/framework/plugins/
picker/random_picker.go: picks uniformly among the candidate endpoints); the draw is numpy's
`Generator.integers` seeded by the run's seed, so a run repeats.
"""

from __future__ import annotations

from collections.abc import Sequence

from servescope.core.request import RequestSpec
from servescope.core.routers.base import Decision, ReplicaState, Router


class RandomRouter(Router):
    name = "random"
    reads_replicas = False

    def pick(self, request: RequestSpec, replicas: Sequence[ReplicaState],
             now_s: float) -> Decision:
        chosen = int(self.rng.integers(self.num_replicas))
        scores = tuple(1.0 if i == chosen else 0.0 for i in range(self.num_replicas))
        return Decision(chosen, scores, "drawn at random (uniform, seeded)")
