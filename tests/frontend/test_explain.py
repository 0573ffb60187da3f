"""The /explain page says only true things about vLLM: each claim (a `data-claim` span) cites
the vLLM 0.33 function it describes (a routing claim: the router project's, as the router
modules cite it) and the simulator's counterpart, and is shown on the
simulator's core by a check in support/explain_claims.py; each number it quotes (a
`data-figure` span: preset|variant|metric|decimals) is what the simulator computes now."""

from __future__ import annotations

import importlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import (
    explain_pd_claims,  # noqa: F401 (registers the P/D claims)
    explain_routing_claims,  # noqa: F401 (registers the routing claims)
)
from support.explain_claims import CLAIMS, preset_run

TEMPLATES = Path(__file__).resolve().parents[2] / "frontend" / "templates"
VLLM = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/"
# What the page may cite, file by file, as vLLM 0.33.0 defines it.
VLLM_FUNCTIONS = {
    "v1/core/sched/scheduler.py": {"Scheduler.schedule", "Scheduler._preempt_request",
                                   "Scheduler.update_from_output",
                                   "Scheduler._update_request_with_output",
                                   "Scheduler._update_waiting_for_remote_kv"},
    "v1/core/sched/async_scheduler.py": {"AsyncScheduler._update_after_schedule"},
    "v1/core/kv_cache_manager.py": {"KVCacheManager.allocate_slots",
                                    "KVCacheManager.get_computed_blocks"},
    "v1/core/block_pool.py": {"BlockPool.free_blocks", "BlockPool.get_new_blocks"},
    "engine/arg_utils.py": {"EngineArgs.get_batch_defaults"},
    "v1/engine/core_client.py": {"DPLBAsyncMPClient.get_core_engine_for_request"},
}
# The routers' other sources (data-fn: the function or constant), at the version each router
# module under backend/servescope/core/routers/ cites.
LLM_D = ("https://github.com/llm-d/llm-d-inference-scheduler/blob/520af478/pkg/epp/framework/"
         "plugins/")
ROUTING_SOURCES = {
    "https://github.com/vllm-project/production-stack/blob/main/src/vllm_router/routers/": {
        "routing_logic.py": {"RoundRobinRouter.route_request", "SessionRouter.route_request"}},
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension/blob/main/pkg/epp/": {
        "server/runserver.go": {"DefaultRefreshMetricsInterval"}},
    LLM_D: {"requestcontrol/dataproducer/approximateprefix/plugin.go": {"matchLongestPrefix"},
            "scheduling/scorer/preciseprefixcache/utils.go": {"absoluteScoredPods"}},
}
SOURCES = {VLLM: VLLM_FUNCTIONS, **ROUTING_SOURCES}
# What the explainers said before issue 31 and vLLM does not do.
UNTRUE = ["whatever budget the decodes leave", "Running requests are served first",
          "as one prefill", "keeps the P99"]


class Claims(HTMLParser):
    """Each data-claim span's citations, and each data-figure span's text."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: dict[str, list[dict[str, str]]] = {}
        self.figures: list[tuple[str, str]] = []
        self.open: list[tuple[str, str | None, str | None]] = []  # (tag, claim, figure)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.open.append((tag, a.get("data-claim"), a.get("data-figure")))
        if a.get("data-claim"):
            self.claims[a["data-claim"]] = []
        if tag == "a" and a.get("class") == "cite":
            for _, claim, _ in self.open:
                if claim:
                    self.claims[claim].append({k: v or "" for k, v in a.items()})
        if a.get("data-figure"):
            self.figures.append((a["data-figure"], ""))

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self.open and self.open[-1][2] is not None:
            spec, text = self.figures[-1]
            self.figures[-1] = (spec, text + data)


def page() -> Claims:
    parser = Claims()
    parser.feed((TEMPLATES / "explain.html").read_text())
    return parser


def resolve(target: str) -> object:
    module, _, name = target.partition(":")
    obj: object = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_claim_cites_the_vllm_function_and_our_counterpart() -> None:
    claims = page().claims
    assert len(claims) >= 8
    for name, cites in claims.items():
        assert cites, f"{name} cites nothing"
        for cite in cites:
            base = next((b for b in SOURCES if cite["href"].startswith(b)), None)
            assert base is not None, cite["href"]
            path, functions = cite["href"].removeprefix(base), SOURCES[base]
            assert path in functions, cite["href"]
            fn = cite["data-vllm"] if base == VLLM else cite["data-fn"]
            assert fn in functions[path], (name, fn)
            assert callable(resolve(cite["data-core"])), cite["data-core"]


def test_every_claim_is_shown_on_the_core() -> None:
    assert set(page().claims) == set(CLAIMS)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_claim(name: str) -> None:
    CLAIMS[name]()


def test_every_quoted_number_is_what_the_simulator_computes() -> None:
    figures = page().figures
    assert len(figures) >= 8
    for spec, text in figures:
        preset, variant, metric, decimals = spec.split("|")
        value = preset_run(preset, variant)[metric]
        assert text == f"{value:,.{int(decimals)}f}", (spec, text, value)


def test_no_explainer_says_what_vllm_does_not() -> None:
    text = " ".join((TEMPLATES / "explain.html").read_text().split())
    assert [s for s in UNTRUE if s in text] == []
    compare = " ".join((TEMPLATES / "index.html").read_text().split())
    assert "chunking cuts P99 ITL" not in compare
