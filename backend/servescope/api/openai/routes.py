"""The OpenAI-compatible routes: parse, one call (Served.prepare, LiveEngine.submit), serialize.
A stream is Server-Sent Events ending in `data: [DONE]`; a client that goes away, streaming or
not, aborts its request (vLLM: serve/utils/api_utils.py with_cancellation)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from servescope.api.openai.chunks import model_card
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


class EventStream(StreamingResponse):
    """A stream that hears its client leave even while no token is due (a request still
    waiting): Starlette listens for the disconnect only below ASGI spec 2.4, so it is asked to."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.3"}}
        await super().__call__(scope, receive, send)


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
        return EventStream(_sse(engine, prepared, events), media_type="text/event-stream",
                           headers=headers)
    whole = await _whole(request, engine, prepared, events)
    if whole is None:
        return Response(status_code=499)  # nobody is there to read it
    return JSONResponse(whole, headers=headers)


async def _sse(engine: LiveEngine, prepared: Prepared,
               events: AsyncIterator[TokenEvent]) -> AsyncIterator[str]:
    answer, sent = prepared.answer, 0
    try:
        async for event in events:
            text = filler(sent, event.num_tokens)
            if answer.chat and sent == 0 and event.num_tokens:
                yield _data(answer.chunk("", None, 0, role=True))
            sent = event.num_tokens
            if text or event.finish_reason:
                yield _data(answer.chunk(text, event.finish_reason, sent))
        if answer.include_usage:
            yield _data(answer.usage_chunk(sent))
        yield "data: [DONE]\n\n"
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


def _data(body: dict[str, Any]) -> str:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


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

