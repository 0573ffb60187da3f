"""The one error every trace adapter raises for bad input: which line, which field, what."""

from __future__ import annotations


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
