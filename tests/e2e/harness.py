"""A stand-in server for the page while the real app is not in the tree: templates, static
files, uPlot, and one WebSocket per session replaying a simulated run (init/step/keyframe/done)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.requests import Request

from servescope.core.config import ConfigError, EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

ROOT = Path(__file__).resolve().parents[2]
UPLOT = ROOT / "node_modules" / "uplot" / "dist"


def demo_specs(n: int = 36) -> list[RequestSpec]:
    lens = [64, 512, 128, 1024, 256, 96, 2048, 192]
    return [RequestSpec(id=f"r{i}", prompt_len=lens[i % 8], output_len=24 + (i * 7) % 60,
                        arrival_s=i * 0.02) for i in range(n)]


BASE = {"num_gpu_blocks": 320, "block_size": 16, "max_num_batched_tokens": 512, "max_num_seqs": 32}


def run_records(config: EngineConfig, specs: list[RequestSpec]) -> list[dict]:
    return [r.to_dict() for r in Engine(config, specs).run()]


def keyframe(records: list[dict], upto: int) -> dict:
    tables: dict[str, list[int]] = {}
    counters: dict[str, dict] = {}
    cached: set[int] = set()
    for rec in records[: upto + 1]:
        for rid in rec["preempted"]:
            tables.pop(rid, None)
            counters.setdefault(rid, {})["num_computed_tokens"] = 0
        for rid, blocks in rec["new_blocks"].items():
            tables.setdefault(rid, []).extend(blocks)
        for ev in rec["kv_events"]:
            if ev["type"] == "BlockStored":
                cached.update(ev["block_ids"])
            else:
                cached.difference_update(ev["block_ids"])
        for e in rec["scheduled"]:
            c = counters.setdefault(e["id"], {"num_output_tokens": 0})
            c["num_computed_tokens"] = e["start"] + e["n"]
            c["num_output_tokens"] = c.get("num_output_tokens", 0) + int(e["sampled"])
            c["status"] = "running"
        for rid in rec["finished"]:
            tables.pop(rid, None)
            counters.setdefault(rid, {})["status"] = "finished"
    rec = records[upto]
    return {"type": "keyframe", "v": 1, "step": rec["step"], "tables": tables,
            "cached_blocks": sorted(cached), "requests": counters,
            "running": [r for r in rec["running"] if r not in rec["finished"]],
            "waiting": rec["waiting"], "record": rec}


def create_app() -> FastAPI:
    app = FastAPI()
    templates = Jinja2Templates(directory=ROOT / "frontend" / "templates")
    app.mount("/static", StaticFiles(directory=ROOT / "frontend" / "static"), name="static")
    if UPLOT.exists():
        app.mount("/vendor/uplot", StaticFiles(directory=UPLOT), name="uplot")

    @app.get("/")
    def index(request: Request):
        boot = {"presets": [{"name": "demo", "title": "demo (36 requests)"}], "config": BASE}
        return templates.TemplateResponse(request, "index.html", {"boot": boot})

    @app.post("/api/traces")
    async def upload(request: Request):
        form = await request.form()
        text = (await form["file"].read()).decode(errors="replace")
        try:
            rows = json.loads(text)
            if not isinstance(rows, list):
                raise ValueError("expected a JSON list of requests")
        except ValueError as err:
            detail = {"message": f"{form['file'].filename}: not a trace this server reads ({err})"}
            return JSONResponse({"detail": detail}, status_code=400)
        return {"trace_id": "t1", "num_requests": len(rows)}

    @app.websocket("/ws/sessions/{session_id}")
    async def ws(socket: WebSocket, session_id: str) -> None:
        await socket.accept()
        await Session(socket).serve()

    return app


class Session:
    def __init__(self, socket: WebSocket) -> None:
        self.socket = socket
        self.records: list[dict] = []
        self.cursor = -1
        self.playing = False
        self.speed = 1.0

    async def send(self, msg: dict) -> None:
        await self.socket.send_text(json.dumps(msg))

    async def serve(self) -> None:
        pump = asyncio.create_task(self.pump())
        try:
            while True:
                await self.handle(json.loads(await self.socket.receive_text()))
        except WebSocketDisconnect:
            pass
        finally:
            pump.cancel()

    async def handle(self, msg: dict) -> None:
        kind = msg["type"]
        if kind == "configure":
            try:
                config = EngineConfig.from_dict({**BASE, **(msg.get("config") or {})})
            except (ConfigError, TypeError) as err:
                await self.send({"type": "error", "v": 1, "message": str(err)})
                return
            specs = demo_specs()
            self.records = run_records(config, specs)
            self.cursor = -1
            self.playing = False
            await self.send({"type": "init", "v": 1, "config": config.to_dict(),
                             "num_gpu_blocks": config.num_gpu_blocks,
                             "block_size": config.block_size,
                             "requests": [{"id": s.id, "prompt_len": s.prompt_len,
                                           "output_len": s.output_len, "arrival_s": s.arrival_s}
                                          for s in specs],
                             "num_records": len(self.records), "source": "simulated"})
        elif kind == "play":
            self.playing, self.speed = True, float(msg.get("speed", 1))
        elif kind == "pause":
            self.playing = False
        elif kind == "step":
            await self.advance(int(msg.get("n", 1)))
        elif kind == "seek":
            target = next((i for i, r in enumerate(self.records) if r["step"] >= msg["step"]),
                          len(self.records) - 1)
            self.cursor = target
            await self.send(keyframe(self.records, target))

    async def advance(self, n: int) -> None:
        batch = self.records[self.cursor + 1: self.cursor + 1 + n]
        if batch:
            self.cursor += len(batch)
            await self.send({"type": "step", "v": 1, "records": batch})
        if self.cursor >= len(self.records) - 1:
            self.playing = False
            await self.send({"type": "done", "v": 1, "summary": {}})

    async def pump(self) -> None:
        tick = 0.05
        while True:
            await asyncio.sleep(tick)
            if not self.playing or not self.records:
                continue
            now = self.records[max(0, self.cursor)]["time_s"] + tick * self.speed
            n = 0
            ahead = self.records[self.cursor + 1:]
            while n < len(ahead) and ahead[n]["time_s"] <= now:
                n += 1
            await self.advance(max(1, n))
