"""vLLM's error answers: {"error": {"message", "type", "param", "code"}} with the status in `code`
(vLLM 0.33's ErrorResponse, vllm/entrypoints/serve/exception_handling/error_response.py)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import ValidationError


class OpenAIError(Exception):
    """A request refused as vLLM refuses it; `err_type` as vLLM names it (BadRequestError, a
    VLLMValidationError's; NotFoundError; the status's phrase otherwise)."""

    def __init__(self, message: str, param: str | None = None,
                 status: HTTPStatus = HTTPStatus.BAD_REQUEST,
                 err_type: str = "BadRequestError") -> None:
        super().__init__(message)
        self.message, self.param, self.status, self.err_type = message, param, status, err_type

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.err_type, "param": self.param,
                          "code": self.status.value}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), self.status.value)


def invalid(err: ValidationError) -> OpenAIError:
    """A body that fails the request model: 400 naming the field, as vLLM's validation handler
    answers (vllm/entrypoints/serve/exception_handling/handlers/validation.py)."""
    first = err.errors(include_input=False)[0]
    param = ".".join(str(part) for part in first["loc"] if not _internal(part)) or None
    return OpenAIError(f"{param or 'body'}: {first['msg']}", param)


def _internal(part: Any) -> bool:
    """A pydantic location step that is a union's branch, not a field ("str", "list[int]")."""
    return isinstance(part, str) and (any(c in part for c in "[]()") or part in (
        "str", "int", "list", "dict", "function-after", "union", "tagged-union"))


def context_too_long(max_model_len: int, num_tokens: int) -> OpenAIError:
    """vLLM's refusal of a prompt past the model's context (renderers/params.py,
    TokenizeParams._token_len_check)."""
    return OpenAIError(
        f"This model's maximum context length is {max_model_len} tokens. However, your prompt "
        f"contains {num_tokens} input tokens, which exceeds this limit even without any output "
        f"tokens. Please reduce the length of the input prompt.", "input_tokens")


def unknown_model(name: str, served: str) -> OpenAIError:
    """vLLM's answer to a model it does not serve (serve/engine/serving.py, _check_model)."""
    return OpenAIError(f"The model `{name}` does not exist. Valid aliases: {served}.", "model",
                       HTTPStatus.NOT_FOUND, "NotFoundError")
