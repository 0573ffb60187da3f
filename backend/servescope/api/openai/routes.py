"""The OpenAI-compatible routes: parse, one call (Served.prepare, LiveEngine.submit), serialize.
A stream is Server-Sent Events ending in `data: [DONE]`; a client that goes away, streaming or
not, aborts its request (vLLM: serve/utils/api_utils.py with_cancellation)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from servescope.api.openai.chunks import frame, model_card
from servescope.api.openai.errors import OpenAIError, invalid
from servescope.api.openai.live import LiveEngine, TokenEvent
from servescope.api.openai.protocol import ChatRequest, CompletionRequest
from servescope.api.openai.serving import Prepared, Served
from servescope.api.openai.tokens import filler

router = APIRouter()
VLLM_VERSION = "0.33.0"  # the vLLM whose API this one answers as (pyproject's vllm extra)
# the largest request body read: a 1M-token prompt as ids or text fits (vLLM reads any size)
MAX_BODY_BYTES = 64 * 1024 * 1024
PROMPT_TOKENS_HEADER = "X-ServeScope-Prompt-Tokens"  # prompt_token_ids, tokenizer or estimate


class EventStream(Response):
    """Server-Sent Events sent straight to the ASGI server, a frame a step: no task group around
    the body (Starlette's StreamingResponse makes one a stream), one task a stream that waits on
    the receive channel and calls `on_disconnect` when the client leaves, even while no token is
    due (a request still waiting)."""

    media_type = "text/event-stream"

    def __init__(self, frames: AsyncIterator[bytes], headers: dict[str, str],
                 on_disconnect: Callable[[], object]) -> None:
        self.frames, self.on_disconnect = frames, on_disconnect
        self.status_code, self.background = 200, None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        listener = asyncio.get_running_loop().create_task(self._listen(receive))
        try:
            async for body in self.frames:  # a gone client's frames are dropped by the server
                await send({"type": "http.response.body", "body": body, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()

    async def _listen(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.on_disconnect()


def served(request: Request) -> Served:
    return request.app.state.served  # type: ignore[no-any-return]


async def parse(request: Request, model: type[CompletionRequest | ChatRequest],
                ) -> CompletionRequest | ChatRequest:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise OpenAIError(f"request body larger than {MAX_BODY_BYTES} bytes", "body",
                              err_type="BadRequestError")
    try:
        return model.model_validate_json(bytes(body))
    except ValidationError as err:
        raise invalid(err) from None


@router.post("/v1/completions")
async def completions(request: Request) -> Response:
    return await _answer(request, CompletionRequest)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    return await _answer(request, ChatRequest)


async def _answer(request: Request, model: type[CompletionRequest | ChatRequest]) -> Response:
    api = served(request)
    try:
        body = await parse(request, model)
        prepared = api.prepare(body, request.headers.get("x-request-id"))
    except OpenAIError as err:
        return err.response()
    engine = api.pick(prepared.spec)
    events = engine.submit(prepared.spec, prepared.stop_reason)
    headers = {PROMPT_TOKENS_HEADER: prepared.token_source}
    if body.stream:
        return EventStream(_sse(engine, prepared, events), headers,
                           lambda: engine.abort(prepared.spec.id))
    whole = await _whole(request, engine, prepared, events)
    if whole is None:
        return Response(status_code=499)  # nobody is there to read it
    return JSONResponse(whole, headers=headers)


async def _sse(engine: LiveEngine, prepared: Prepared,
               events: AsyncIterator[TokenEvent]) -> AsyncIterator[bytes]:
    answer, sent = prepared.answer, 0
    try:
        async for event in events:
            text = filler(sent, event.num_tokens)
            if answer.chat and sent == 0 and event.num_tokens:
                yield answer.chunk_frame("", None, 0, role=True)
            sent = event.num_tokens
            if text or event.finish_reason:
                yield answer.chunk_frame(text, event.finish_reason, sent)
        if answer.include_usage:
            yield frame(answer.usage_chunk(sent))
        yield b"data: [DONE]\n\n"
    finally:
        engine.abort(prepared.spec.id)  # a no-op once it finished


async def _whole(request: Request, engine: LiveEngine, prepared: Prepared,
                 events: AsyncIterator[TokenEvent]) -> dict[str, Any] | None:
    """The answer once finished, or None when the client left first (its request aborted)."""
    async def collect() -> TokenEvent:
        last = TokenEvent(0, 0, None)
        async for event in events:
            last = event
        return last

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    finished, left = asyncio.create_task(collect()), asyncio.create_task(gone())
    try:
        await asyncio.wait((finished, left), return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
        if not finished.done():
            finished.cancel()
            engine.abort(prepared.spec.id)
    if not finished.done() or finished.cancelled():
        return None
    last = finished.result()
    return prepared.answer.whole(filler(0, last.num_tokens), last.finish_reason,
                                 last.num_tokens)


@router.get("/v1/models")
async def models(request: Request) -> dict[str, Any]:
    api = served(request)
    return {"object": "list",
            "data": [model_card(api.model_name, api.created, api.max_model_len)]}


@router.get("/health")
async def health() -> Response:
    return Response(status_code=200)


@router.get("/version")
async def version() -> dict[str, str]:
    return {"version": VLLM_VERSION}

