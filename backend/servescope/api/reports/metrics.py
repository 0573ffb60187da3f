"""What GET /metrics serves: vLLM's metrics of every session at its playback position (what its
viewers see; an engine that runs a fleet: each replica's series with its `replica` label, a P/D
fleet's with its `pool` too and the KV connector's, at the session's simulated time), which
engines are simulated or replayed, the count of sessions a scrape had to skip, and the HTTP
metrics vLLM's API server exports."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from starlette.requests import Request
from starlette.responses import Response

from servescope.api.sessions.registry import Registry
from servescope.api.sessions.session import Session
from servescope.api.wire.fleet import MAX_VIEW_REPLICAS
from servescope.observability.families import (
    EngineView,
    Families,
    Sample,
    engine_samples,
    engine_view,
    max_model_len,
    model_name,
)
from servescope.observability.text import render

# vLLM's API server leaves these out of its HTTP metrics (prometheus-fastapi-instrumentator).
UNCOUNTED = frozenset(("/metrics", "/healthz"))
# RFC 9110 section 9's methods and PATCH (RFC 5789); any other token a client sends is counted
# as "other", so made-up methods add no series
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
                     "PATCH"))
# a label value kept as given: the catalog's longest model id is 45 characters
# (meta-llama/Llama-4-Maverick-17B-128E-Instruct); longer ones are named by a digest
MAX_LABEL_CHARS = 64


def short_label(text: str) -> str:
    """`text` as a label value when it is short and writable, else `cfg-` and a digest of it
    (a model_config's whole JSON, say, or a lone surrogate, would bloat or break the scrape)."""
    try:
        text.encode()
        if len(text) <= MAX_LABEL_CHARS and text.isprintable():
            return text
    except UnicodeEncodeError:
        pass
    return "cfg-" + hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()[:12]


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


def public_label(session_id: str) -> str:
    """The `session` label: a short digest, so a scrape never shows a session's id (which
    grants control of it); the session's description lists it as `metrics_label`."""
    return hashlib.sha256(f"servescope-session:{session_id}".encode()).hexdigest()[:12]


class SessionsCollector:
    """Collects every configured session's engines; views (with their histogram cursors)
    are kept between scrapes and dropped with their session or configuration."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        # per session and configuration: per track, its engine's view or its replicas' views
        self.views: dict[tuple[str, int], list[list[EngineView]]] = {}
        self.errors = 0

    def samples(self) -> list[Sample]:
        """Every configured session's samples at its position; a session whose state cannot
        be read adds none and is counted."""
        out: list[Sample] = []
        live: set[tuple[str, int]] = set()
        for session in list(self.registry.sessions.values()):
            if session.built is None:
                continue
            key = (session.id, session.config_epoch)
            live.add(key)
            try:
                views = self.views.get(key) or self._views(session)
                self.views[key] = views
                out += [s for k, track_views in enumerate(views)
                        for view, pos in zip(track_views, positions(session, k), strict=True)
                        for s in engine_samples(view, pos)]
            except Exception:  # a session in a bad state must not fail the scrape
                self.errors += 1
                self.views.pop(key, None)
        for key in set(self.views) - live:
            del self.views[key]
        return out

    def own_families(self) -> list[Metric]:
        """What each session's series are (simulated or replayed), and the skipped count."""
        info = GaugeMetricFamily("servescope_session_info", "A ServeScope session's engine: "
                                 "its source (simulated or replayed) and its config label.",
                                 labels=["session", "engine", "source", "engine_label"])
        for (sid, _), views in sorted(self.views.items()):
            session = self.registry.get(sid)
            if session is None or session.built is None:
                continue
            for (view, *_), engine in zip(views, session.built.engines, strict=False):
                info.add_metric([view.labels[2], view.labels[1], session.built.source,
                                 short_label(str(engine["label"]))], 1.0)
        errors = CounterMetricFamily("servescope_metrics_errors", "Sessions a scrape of "
                                     "/metrics skipped because their state could not be read.")
        errors.add_metric([], self.errors)
        return [info, errors]

    def collect(self) -> Iterator[Metric]:
        """prometheus-client's collector protocol (the reference `text()` is checked on)."""
        families = Families()
        families.put(self.samples())
        yield from families
        yield from self.own_families()

    def snapshot(self) -> tuple[list[Sample], list[Metric]]:
        """What a scrape shows, read on the event loop (no track moves while it is read)."""
        samples = self.samples()
        return samples, self.own_families()

    def text(self) -> str:
        """The Prometheus text format of `collect()`, written without building its objects."""
        return render_text(*self.snapshot())

    @staticmethod
    def _views(session: Session) -> list[list[EngineView]]:
        built = session.built
        assert built is not None
        label = public_label(session.id)
        out = []
        for t, e in zip(built.tracks, built.engines, strict=True):
            name, config = short_label(model_name(e["config"])), e["config"]
            longest = max_model_len(config, t.requests)
            if t.fleet is not None and t.fleet.has_metrics():  # a fleet's or a P/D fleet's
                out.append(t.fleet.metric_views(name, t.number, label, longest))
            else:
                out.append([engine_view(t.meter, name, t.number, label, config, longest)])
        return out


def positions(session: Session, k: int) -> list[int]:
    """Where track k's views stand: its playback position, or a fleet's replicas' last
    records at the session's simulated time."""
    track = session.tracks[k]
    if track.fleet is not None and track.fleet.has_metrics():
        return track.fleet.positions(session.sim_time)[:MAX_VIEW_REPLICAS]
    return [session.position[k]]


class HttpMetrics:
    """http_requests_total and http_request_duration_seconds, labelled as vLLM's are."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("http_requests", "Total number of requests by method, status "
                                "and handler.", ["method", "status", "handler"],
                                registry=registry)
        self.duration = Histogram("http_request_duration_seconds", "Latency with only few "
                                  "buckets by handler.", ["method", "handler"],
                                  buckets=(0.1, 0.5, 1.0), registry=registry)

    async def middleware(self, request: Request,
                         call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = request.scope.get("route")
            handler = getattr(route, "path", None) or "none"
            if handler not in UNCOUNTED:
                method = method_label(request.method)
                self.requests.labels(method, f"{status // 100}xx", handler).inc()
                self.duration.labels(method, handler).observe(
                    time.perf_counter() - start)


def render_text(samples: list[Sample], own: list[Metric]) -> str:
    """A snapshot's Prometheus text (off the event loop: it touches no session)."""
    return render(samples) + generate_latest(_Own(own)).decode()


class _Own:
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics)
