"""Helpers for tests against a real server process: websockets clients that decode the
stream as the browser does (the request list read in pages after each init)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

from websockets.asyncio.client import connect

from servescope.api.wire.keyframes import load_keyframe
from servescope.api.wire.serialize import unpack
from servescope.api.wire.stream_state import StreamState
from support.server import request_list, validate


class Client:
    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.options = {"origin": "http://" + url.split("/")[2], **options}  # a page of ours
        self.ws: Any = None
        self.init: dict[str, Any] | None = None
        self.requests: list[dict[str, Any]] = []  # the session's, GET .../requests
        self.states: dict[int, StreamState] = {}
        self.records: dict[int, list[dict[str, Any]]] = {}
        self.last: dict[int, dict[str, Any]] = {}
        self.kinds: list[str] = []
        self.num_bytes = 0
        self.status: dict[str, Any] | None = None

    async def __aenter__(self) -> Client:
        self.ws = await connect(self.url, **self.options)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()

    async def send(self, **msg: Any) -> None:
        await self.ws.send(json.dumps({"v": 1, **msg}))

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        text = await asyncio.wait_for(self.ws.recv(), timeout)
        self.num_bytes += len(text)
        msg = validate(json.loads(text))
        self.feed(msg)
        return msg

    def feed(self, msg: dict[str, Any]) -> None:
        self.kinds.append(msg["type"])
        if msg["type"] == "init":
            self.init = msg
            self.requests = request_list(self.get, msg["session_id"])
        elif msg["type"] == "keyframe":
            assert self.init is not None
            self.states[msg["engine"]] = load_keyframe(self.requests, msg)
            if msg["record"]:
                self.last[msg["engine"]] = msg["record"]
        elif msg["type"] == "step":
            state = self.states[msg["engine"]]
            recs = [unpack(state, p) for p in msg["records"]]
            self.records.setdefault(msg["engine"], []).extend(recs)
            self.last[msg["engine"]] = recs[-1]
        elif msg["type"] == "status":
            self.status = msg

    def get(self, path: str) -> Any:
        """A GET on the server this socket talks to (blocking: a test's short read)."""
        with urllib.request.urlopen("http://" + self.url.split("/")[2] + path, timeout=10) as r:
            return json.loads(r.read())

    async def until(self, pred: Any, timeout: float = 20.0) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            msg = await self.recv(max(0.01, deadline - loop.time()))
            if pred(msg):
                return msg

    def at(self, engine: int = 0) -> int:
        return self.last[engine]["iter"] if engine in self.last else -1
