"""What the API serves: the model's name, its live engines (one, or a fleet's replicas behind a
router) and its token counts; a request checked as vLLM checks it, made into an engine request
and the answer's shape (vllm/entrypoints/openai/completion/serving.py, serve/utils/api_utils.py
get_max_tokens, sampling_params.py SamplingParams._verify_args)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from typing_extensions import TypeIs  # typing's own from Python 3.13

from servescope.api.openai.chunks import Answer
from servescope.api.openai.errors import OpenAIError, context_too_long, unknown_model
from servescope.api.openai.live import LiveEngine
from servescope.api.openai.protocol import ChatRequest, CompletionRequest
from servescope.api.openai.tokens import Tokens, output_len
from servescope.core.request import RequestSpec


@dataclass(frozen=True)
class Prepared:
    spec: RequestSpec
    answer: Answer
    stop_reason: str  # "stop" (end of sequence drawn) or "length" (max_tokens reached)
    token_source: str  # where the prompt's count came from


class Served:
    """One port's API: `pick(spec)` chooses the engine a request runs on (a router's choice
    where there are several)."""

    def __init__(self, engines: Sequence[LiveEngine], tokens: Tokens, model_name: str,
                 pick: Callable[[RequestSpec], LiveEngine] | None = None) -> None:
        self.engines = list(engines)
        self.tokens = tokens
        self.model_name = model_name
        self.pick = pick or (lambda spec: self.engines[0])
        self.created = int(time.time())
        config = self.engines[0].config
        self.max_model_len = config.max_model_len
        self.time_scale = self.engines[0].time_scale

    def live(self, request_id: str) -> bool:
        return any(request_id in e.streams for e in self.engines)

    def prepare(self, body: CompletionRequest | ChatRequest, header_id: str | None,
                ) -> Prepared:
        chat = isinstance(body, ChatRequest)
        if body.model and body.model != self.model_name:
            raise unknown_model(body.model, self.model_name)
        if body.n != 1:
            raise OpenAIError(f"n must be 1: a simulated request samples one sequence, got "
                              f"{body.n}.", "n")
        base = header_id or body.request_id or uuid.uuid4().hex
        answer_id = f"{'chatcmpl' if chat else 'cmpl'}-{base}"
        request_id = f"{answer_id}-0"  # vLLM's engine id for the first prompt of a request
        if self.live(request_id):
            raise OpenAIError(f"Request id {request_id} is already running.", "request_id")
        prompt_tokens, source = self._count(body)
        max_tokens = self._max_tokens(body, prompt_tokens)
        if body.min_tokens < 0:
            raise OpenAIError(f"min_tokens must be greater than or equal to 0, got "
                              f"{body.min_tokens}.", "min_tokens")
        if body.min_tokens > max_tokens:
            raise OpenAIError(f"min_tokens must be less than or equal to max_tokens="
                              f"{max_tokens}, got {body.min_tokens}.", "min_tokens")
        length, eos = output_len(request_id, max_tokens, body.ignore_eos, body.min_tokens)
        spec = RequestSpec(request_id, prompt_tokens, length)
        unfit = self.engines[0].engine.unfit(spec)
        if unfit is not None:
            raise OpenAIError(f"This request cannot run on the simulated engine: {unfit[1]}.",
                              "input_tokens")
        options = body.stream_options
        include = bool(body.stream and options and options.include_usage)
        answer = Answer(answer_id, int(time.time()), self.model_name, chat, prompt_tokens,
                        include, include and bool(options and options.continuous_usage_stats))
        return Prepared(spec, answer, "stop" if eos else "length", source)

    def _count(self, body: CompletionRequest | ChatRequest) -> tuple[int, str]:
        if isinstance(body, ChatRequest):
            return self.tokens.chat(body.messages)
        prompt = body.prompt
        if not (isinstance(prompt, str) or _token_ids(prompt)):  # a batch of prompts
            if len(prompt) != 1:
                raise OpenAIError(f"one prompt a request is simulated, got {len(prompt)}",
                                  "prompt")
            prompt = prompt[0]
        count, source = self.tokens.prompt(prompt)
        if count < 1:
            raise OpenAIError("The prompt cannot be empty.", "prompt")
        return count, source

    def _max_tokens(self, body: CompletionRequest | ChatRequest, prompt_tokens: int) -> int:
        """vLLM's max_tokens: the one asked for, within the context left after the prompt."""
        asked = body.max_tokens
        if isinstance(body, ChatRequest) and body.max_completion_tokens is not None:
            asked = body.max_completion_tokens
        limit = self.max_model_len
        if limit is not None:
            if prompt_tokens > limit:
                raise context_too_long(limit, prompt_tokens)
            if asked is not None and asked > limit:
                raise OpenAIError(f"max_tokens={asked} cannot be greater than max_model_len="
                                  f"{limit}. Please request fewer output tokens.", "max_tokens")
        left = None if limit is None else limit - prompt_tokens
        candidates = [v for v in (left, asked) if v is not None]
        if not candidates:
            raise OpenAIError("max_tokens is required: the config sets no max_model_len",
                              "max_tokens")
        max_tokens = min(candidates)
        if max_tokens < 1:
            raise OpenAIError(f"max_tokens must be at least 1, got {max_tokens}.", "max_tokens")
        return max_tokens


def _token_ids(prompt: str | list[int] | list[str] | list[list[int]]) -> TypeIs[list[int]]:
    """Whether a completion's prompt is one prompt's token ids (the request model checked that
    a list's items are all of one kind)."""
    return isinstance(prompt, list) and (not prompt or isinstance(prompt[0], int))
