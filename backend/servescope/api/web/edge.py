"""What every HTTP request meets before a route: JSON bodies bounded in size with every number
finite and in range (a 4xx naming the field), cross-site writes refused (by Origin, and for a
browser's writes the page's CSRF token), and every answer, errors and crashes included, JSON with
the security headers."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from servescope.api.web.origin import cross_site

R = TypeVar("R", bound=Response)

log = logging.getLogger(__name__)
MAX_NUMBER = 1e15  # no quantity this API takes comes near it; beyond it is an attack or a typo
# no message this API takes nests deeper than a model_config's few levels; json.loads and
# pydantic would recurse to Python's stack limit (1,000 frames) on a deeper one
MAX_DEPTH = 64
# JSON longer than this is parsed on a thread: json.loads reads ~100 MB/s, so 64 KiB holds the
# loop under a millisecond.
OFF_LOOP_BYTES = 64 * 1024
WRITES = ("POST", "PUT", "PATCH", "DELETE")
FORMS = ("multipart/", "application/x-www-form-urlencoded")  # bodies a JSON route never reads
CSRF_COOKIE, CSRF_HEADER = "servescope_csrf", "x-csrf-token"  # frontend transport/csrf.js
CSP = ("default-src 'self'; script-src 'self'{nonce}; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'self'")


class Refused(ValueError):
    """A JSON value the edge refuses (a 422, or an error frame), naming its field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field or 'value'}: {message}")
        self.field = field


class NotFinite(Refused):
    def __init__(self, field: str, text: str) -> None:
        super().__init__(field, f"{text} is not a finite number within ±{MAX_NUMBER:.0e}")


class NotText(Refused):
    """A string holding an unpaired surrogate (JSON's "\\ud800" alone): no UTF-8 encodes it,
    so any answer or listing that echoed it would fail."""

    def __init__(self, field: str) -> None:
        super().__init__(field, "text with an unpaired surrogate (\\ud800-\\udfff) is not "
                                "Unicode text")


class TooDeep(Refused):
    def __init__(self) -> None:
        super().__init__("", f"JSON nested deeper than {MAX_DEPTH} levels")


class _Bad:
    def __init__(self, text: str) -> None:
        self.text = text


def _number(parse: Callable[[str], float | int]) -> Callable[[str], Any]:
    def check(text: str) -> Any:
        if len(text) > 40:  # also keeps int() away from its 4,300-digit error
            return _Bad(text[:20] + "...")
        value = parse(text)
        return value if math.isfinite(value) and abs(value) <= MAX_NUMBER else _Bad(text)
    return check


def loads(text: str | bytes) -> Any:
    """JSON as json.loads reads it, but a Refused naming the first bad field
    ("workload.synthetic.request_rate", "configs.1.x"): NaN, Infinity and numbers beyond
    MAX_NUMBER (NotFinite), unpaired surrogates (NotText), nesting past MAX_DEPTH (TooDeep)."""
    try:
        value = json.loads(text, parse_constant=_Bad, parse_float=_number(float),
                           parse_int=_number(int))
    except RecursionError:
        raise TooDeep() from None
    _find_bad(value)
    return value


def encodable(text: str) -> bool:
    """Whether UTF-8 can write `text` (it holds no unpaired surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _find_bad(root: Any) -> None:
    """Depth first, without recursion (the depth is what is checked)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise TooDeep()
        if isinstance(value, _Bad):
            raise NotFinite(".".join(path), value.text)
        if isinstance(value, str) and not encodable(value):
            raise NotText(".".join(path))
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, list) else ()
        for key, item in reversed(list(items)):
            name = str(key)
            if not encodable(name):
                raise NotText(".".join([*path, ascii(name)[1:-1][:40]]))
            stack.append((item, (*path, name[:80])))


def error(status: int, message: str, field: str | None = None, code: str = "bad_message",
          **headers: str) -> JSONResponse:
    detail = {"message": message, "field": field, "code": code}
    return secure(JSONResponse({"detail": detail}, status, headers=headers or None))


def secure(response: R, nonce: str | None = None) -> R:
    response.headers.setdefault(
        "Content-Security-Policy", CSP.format(nonce=f" 'nonce-{nonce}'" if nonce else ""))
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    return response


async def off_loop(fn: Callable[[str | bytes], Any], text: str | bytes) -> Any:
    """fn(text), on a worker thread when the text is large enough to hold the event loop."""
    if len(text) <= OFF_LOOP_BYTES:
        return fn(text)
    return await asyncio.to_thread(fn, text)


async def _read_json(request: Request, limit: int) -> Response | None:
    """Reads a JSON body (kept for the route) and checks it; an error response, or None."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        return error(413, f"body larger than the limit of {limit} bytes", None, "limit",
                     Connection="close")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return error(413, f"body larger than the limit of {limit} bytes", None, "limit",
                         Connection="close")
    # Starlette's Request caches a body it has read in _body, which BaseHTTPMiddleware replays
    # to the route (exempt in tests/test_private_members.py)
    request._body = bytes(body)
    try:
        await off_loop(loads, request._body or b"null")
    except Refused as err:
        return error(422, str(err), err.field or None)
    except ValueError:
        pass  # not JSON at all: the route's own validation says so
    return None


def form_paths(app: FastAPI) -> frozenset[str]:
    """The paths whose routes declare a form body in the OpenAPI schema (an upload's)."""
    paths = set()
    for path, operations in app.openapi().get("paths", {}).items():
        for operation in operations.values():
            content = (operation.get("requestBody") or {}).get("content", {})
            if any(kind.startswith(FORMS) for kind in content):
                paths.add(path)
    return frozenset(paths)


def form_refused(request: Request, forms: frozenset[str]) -> Response | None:
    """A form body (multipart or urlencoded) sent where no route takes one: 415 before a byte
    of it is read; a route that takes one bounds it itself (api/uploads/receive.py)."""
    kind = request.headers.get("content-type", "").lower()
    if not kind.startswith(FORMS) or request.url.path in forms:
        return None
    return error(415, "this route takes a JSON body, not a form", "content-type",
                 "unsupported_media", Connection="close")


def csrf_ok(request: Request) -> bool:
    """A write from a browser (it sends Sec-Fetch-*) must echo the page's CSRF cookie in the
    X-CSRF-Token header; scripts and the CLI (no Sec-Fetch-*) need none: a forged request
    can only come from a browser."""
    if not any(h.startswith("sec-fetch-") for h in request.headers):
        return True
    cookie = request.cookies.get(CSRF_COOKIE, "")
    header = request.headers.get(CSRF_HEADER, "")
    return bool(cookie) and secrets.compare_digest(cookie.encode(), header.encode())


def _shell(path: str) -> bool:
    """The page's shell, which holds no data: served under any Host so that a page opened by
    a name this server does not serve can say why (it asks /api/origin)."""
    return path in ("/", "/favicon.ico", "/api/origin") or \
        path.startswith(("/static/", "/vendor/"))


def _host_refused(request: Request, why: str | None) -> Response | None:
    """A request naming a Host this server does not serve gets 421, but for the page's shell."""
    if why is None:
        return None
    if request.method not in ("GET", "HEAD") or not _shell(request.url.path):
        return error(421, why, "host", "misdirected")
    if request.url.path == "/":  # the bare page, which shows why (api/origin)
        request.scope["query_string"] = b""
    return None


async def _write_refused(request: Request, allowed: bool, forms: frozenset[str],
                         limit: int) -> Response | None:
    """A write's checks: same site, the CSRF token, then the body's kind and size."""
    if cross_site(request.headers) or not allowed:
        return error(403, "cross-site request refused", "origin", "forbidden")
    if not csrf_ok(request):
        return error(403, "a browser's write needs the page's CSRF token (the "
                     f"{CSRF_COOKIE} cookie echoed in X-CSRF-Token)", "csrf", "forbidden")
    refused = form_refused(request, forms)
    if refused is None and not request.headers.get("content-type", "").startswith(FORMS):
        refused = await _read_json(request, limit)
    return refused


def install(app: FastAPI, allowed: Callable[[Request], bool], limit: int,
            misdirected: Callable[[str | None], str | None] = lambda host: None) -> None:
    """`allowed(request)`: whether its Origin may write; `limit`: a JSON body's largest size;
    `misdirected(host)`: why a request naming that Host is not for this server (None: it is)."""
    forms: frozenset[str] | None = None  # known once every route is added

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable) -> Response:  # type: ignore[type-arg]
        nonlocal forms
        refused = _host_refused(request, misdirected(request.headers.get("host")))
        if refused is None and request.method in WRITES:
            if forms is None:
                forms = form_paths(app)
            refused = await _write_refused(request, allowed(request), forms, limit)
        if refused is not None:
            return refused
        response: Response = await call_next(request)
        if response.headers.get("content-type", "").startswith("text/html") and \
                not request.cookies.get(CSRF_COOKIE):
            response.set_cookie(CSRF_COOKIE, secrets.token_urlsafe(24), samesite="strict",
                                path="/")
        return secure(response, getattr(request.state, "csp_nonce", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        # FastAPI's own shape, without `input`: it echoes what was sent, which may not be JSON
        errors = [{k: v for k, v in e.items() if k in ("type", "loc", "msg")}
                  for e in exc.errors()]
        return secure(JSONResponse({"detail": errors}, 422))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error(500, "internal error", None, "internal")
