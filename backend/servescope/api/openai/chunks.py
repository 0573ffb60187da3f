"""The answers' JSON, as vLLM 0.33 writes them: completions (object "text_completion"), chat
completions ("chat.completion", streamed as "chat.completion.chunk"), usage, the model card,
and the SSE frames a stream sends (a text chunk's frame written once an answer, its text put in)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

# what json.dumps writes for the text "\0": the place of a text chunk's text in its frame
TEXT_MARK = '"\\u0000"'


@dataclass(frozen=True)
class Answer:
    """What every chunk of one answer repeats, and how it counts."""

    id: str
    created: int
    model: str
    chat: bool
    prompt_tokens: int
    include_usage: bool
    continuous_usage: bool

    def usage(self, completion_tokens: int) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens,
                "total_tokens": self.prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens, "prompt_tokens_details": None}

    def head(self, stream: bool) -> dict[str, Any]:
        kind = "chat.completion" if self.chat else "text_completion"
        return {"id": self.id, "object": kind + (".chunk" if stream and self.chat else ""),
                "created": self.created, "model": self.model}

    def chunk(self, text: str, finish_reason: str | None, num_tokens: int,
              role: bool = False) -> dict[str, Any]:
        """One streamed piece of text (`role`: the chat's first, saying who speaks)."""
        choice: dict[str, Any] = {"index": 0}
        if self.chat:
            choice["delta"] = {"role": "assistant", "content": text} if role else {
                "content": text}
        else:
            choice["text"] = text
        choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
        body = {**self.head(True), "choices": [choice]}
        if self.continuous_usage:
            body["usage"] = self.usage(num_tokens)
        return body

    @cached_property
    def _text_frame(self) -> tuple[bytes, bytes]:
        """A text chunk's frame before and after its text (most frames of a stream: the same
        bytes but for the text, so only the text is encoded per token). The text is the frame's
        last string: split at the last mark, whatever an id or a model name holds."""
        head, tail = frame(self.chunk("\0", None, 0)).rsplit(TEXT_MARK.encode(), 1)
        return head, tail

    def chunk_frame(self, text: str, finish_reason: str | None, num_tokens: int,
                    role: bool = False) -> bytes:
        """`chunk(...)` as one SSE frame."""
        if finish_reason is None and not role and not self.continuous_usage:
            head, tail = self._text_frame
            return head + json.dumps(text).encode() + tail
        return frame(self.chunk(text, finish_reason, num_tokens, role))

    def usage_chunk(self, num_tokens: int) -> dict[str, Any]:
        return {**self.head(True), "choices": [], "usage": self.usage(num_tokens)}

    def whole(self, text: str, finish_reason: str | None, num_tokens: int) -> dict[str, Any]:
        """The answer not streamed."""
        choice: dict[str, Any] = {"index": 0}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text, "refusal": None,
                                 "tool_calls": [], "reasoning_content": None}
        else:
            choice["text"] = text
        choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
        return {**self.head(False), "choices": [choice], "usage": self.usage(num_tokens)}


def frame(body: dict[str, Any]) -> bytes:
    """One Server-Sent Event carrying `body` (vLLM writes compact JSON)."""
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def model_card(name: str, created: int, max_model_len: int | None) -> dict[str, Any]:
    """One entry of GET /v1/models (vllm/entrypoints/openai/models/protocol.py ModelCard)."""
    return {"id": name, "object": "model", "created": created, "owned_by": "vllm",
            "root": name, "parent": None, "max_model_len": max_model_len,
            "permission": [{"id": f"modelperm-{name}", "object": "model_permission",
                            "created": created, "allow_create_engine": False,
                            "allow_sampling": True, "allow_logprobs": True,
                            "allow_search_indices": False, "allow_view": True,
                            "allow_fine_tuning": False, "organization": "*", "group": None,
                            "is_blocking": False}]}
