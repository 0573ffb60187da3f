"""One settings object for the server: where it listens, where it keeps data, and its limits."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = REPO / "data"
    frontend_dir: Path = REPO / "frontend"
    node_modules: Path = REPO / "node_modules"
    demo_preset: str = "demo"
    max_upload_bytes: int = 100 * 1024 * 1024  # as sent and, for gzip, as inflated
    max_upload_ratio: float = 100.0  # inflated / gzip size beyond which an upload is a bomb
    max_sessions: int = 64
    max_viewers_per_session: int = 256
    max_requests_per_session: int = 1_000_000
    # records a session keeps on disk (about 650 bytes each): Azure conversation traffic on Llama
    # 3.1 8B / H100 runs 21 steps a request (bench/scale_server.py), 1M requests about 21M
    max_records_per_session: int = 25_000_000
    max_gpu_blocks: int = 1_000_000  # a pool's blocks, given or derived from model and GPU
    session_idle_s: float = 1800.0  # a saved or followed session without a driver
    session_grace_s: float = 180.0  # a session nobody watches after its driver left
    max_fps: int = 60
    keyframe_interval: int = 64
    # an engine's session over this many requests or more runs a scout process ahead of it, so
    # that a seek past what is stored leaps there from a checkpoint (api/leaps/scout.py); a shorter
    # run is stored to its end in seconds (the Azure conversation trace, 19,366, takes 20 s)
    leap_min_requests: int = 10_000
    catch_up_records: int = 256  # a viewer further behind than this gets a keyframe instead
    max_message_bytes: int = 4 * 1024 * 1024
    send_timeout_s: float = 10.0  # a viewer whose socket takes longer to drain is dropped
    max_buffered_bytes: int = 64 * 1024 * 1024  # held for all viewers' sockets together
    max_jobs: int = 2  # heavy REST jobs (exports, full diagnoses) running at once
    # the server's resident memory (its process and job workers): over it, new sessions and
    # jobs are refused; each job's worker may map memory_cap_mb / (max_jobs + 1). 0: no cap
    memory_cap_mb: int = 8192
    job_timeout_s: float = 120.0  # a heavy job's answer comes within this, or a 503
    max_export_bytes: int = 512 * 1024 * 1024  # an export stops (or is refused) past this
    max_perfetto_records: int = 200_000  # a Perfetto trace is built whole: longer runs refused
    sweep_ray_address: str = ""  # sweeps join this Ray cluster; "": Ray in the server process
    sweep_num_cpus: int = 0  # CPUs of the in-process Ray; 0: this machine's
    # Ray started for sweeps is shut down after this long without one (it holds ~1.5 GB)
    sweep_idle_s: float = 300.0
    # fair shares (api/web/clients.py): what one client (its upload token, else its session
    # token, else its address) may hold. Sized so that a classroom behind one address passes:
    # 40 followers and 20 new sessions at once, 60 page loads in 10 s (tests/hostile)
    client_max_sessions: int = 32  # sessions it created, held at once (of max_sessions)
    client_max_sockets: int = 128  # WebSocket connections open at once, followers included
    client_max_uploads_per_hour: int = 60
    client_max_stored_mb: int = 1024  # upload bytes it has stored
    client_max_sweeps_per_hour: int = 6
    # a socket that made a session and has not configured it within this is closed, and the
    # session freed (a page configures on connect, within a second)
    unconfigured_timeout_s: float = 10.0
    # a sweep's work (grid points x the workload's requests) and wall-clock deadline: the
    # issue's 4,800-point sweep was 10-135 hours of every CPU; a session stores the Azure
    # conversation trace's 19,366 requests in ~20 s (leap_min_requests below), so 2M
    # request-simulations are about half an hour of one core
    sweep_max_work: int = 2_000_000
    sweep_deadline_s: float = 1800.0
    # the data directory: uploads and run stores together, and how long an upload is kept
    # after it was stored (expired ones that no session runs are deleted by the reaper)
    data_quota_mb: int = 20480
    upload_retention_s: float = 7 * 86400.0
    allowed_origins: tuple[str, ...] = ()  # full origins allowed besides the served names
    server_names: tuple[str, ...] = ()  # host names served besides loopback and `host`
    # a room's server (api/web/classroom.py): all interfaces, this machine's own addresses
    # served, and `public_address` (detected when empty) advertised in follow links
    classroom: bool = False
    # the name or address (or a base URL, behind a proxy) followers' links and QR codes carry,
    # on `port`; "": they name the address the page was opened by
    public_address: str = ""

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then SERVESCOPE_<FIELD> environment variables, then `overrides`."""
        values: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            raw = os.environ.get(f"SERVESCOPE_{f.name.upper()}")
            if raw is None:
                continue
            values[f.name] = _parse(f.type if isinstance(f.type, str) else str(f.type), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "data_dir" in values:
            values["data_dir"] = Path(str(values["data_dir"]))
        return cls(**values)  # type: ignore[arg-type]


def _parse(kind: str, raw: str) -> object:
    if kind.startswith("bool"):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind.startswith("int"):
        return int(raw)
    if kind.startswith("float"):
        return float(raw)
    if kind.startswith("Path"):
        return Path(raw)
    if kind.startswith("tuple"):
        return tuple(x.strip() for x in raw.split(",") if x.strip())
    return raw
