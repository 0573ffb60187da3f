"""The one error every trace adapter raises for bad input: which line, which field, what."""

from __future__ import annotations

import reprlib

# A user's value shown in an error: a few items, a few levels, a short string, so that showing
# a YAML alias chain (billions of shared leaves) or a huge number costs microseconds.
# (Python 3.11's Repr takes no keyword arguments.)
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxlong, _SHOWN.maxother = 3, 60, 40, 60
_SHOWN.maxtuple = _SHOWN.maxlist = _SHOWN.maxdict = _SHOWN.maxset = 4


def shown(value: object) -> str:
    """`value` for an error message, bounded (under 1 KiB whatever it holds)."""
    return _SHOWN.repr(value)


class TraceFormatError(ValueError):
    """Bad trace input. `line` is 1-based (for binary captures: the message index; 0 = whole file).

    `field` names the offending column or key ("" when the line as a whole is bad). The API maps
    this error to a 4xx response and the CLI to a one-line message.
    """

    def __init__(self, line: int, field: str, message: str) -> None:
        where = f"line {line}" if line else "file"
        super().__init__(f"{where}, field {field!r}: {message}" if field else f"{where}: {message}")
        self.line = line
        self.field = field
        self.message = message

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "field": self.field, "message": self.message}


class TraceDependencyError(RuntimeError):
    """A format needs an optional package that is not installed (not the input's fault)."""


class TooManyRequests(Exception):
    """More requests than a session may hold, after the options: the upload names a window
    (`fits_end_s`: the window end that holds the first `max_requests`) or a sample."""

    def __init__(self, num_requests: int, max_requests: int, fits_end_s: float | None,
                 windowed: bool) -> None:
        self.num_requests, self.max_requests = num_requests, max_requests
        self.fits_end_s = fits_end_s
        where = " in the window" if windowed else ""
        fits = (f"; the first {max_requests:,} arrive by window_end_s={fits_end_s:.6g}"
                if fits_end_s is not None else "")
        super().__init__(f"{num_requests:,} requests{where}, more than the {max_requests:,} a "
                         "session here can animate. Upload it again with a time window "
                         f"(window_start_s, window_end_s{fits}), sample_n (a uniform sample) or "
                         "limit (the first N).")
