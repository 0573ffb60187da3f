"""The text the server sends for a protocol message (api/wire/protocol.py): pydantic's serializer
over the model, with JSON the server already holds as text (stored packed records) spliced in."""

from __future__ import annotations

from servescope.api.wire.message import Message


class Raw(str):
    """JSON text that goes into a message as it is: a step frame's packed records, serialized
    once when the run store keeps them (api/sessions/track.py), are never parsed to be sent."""


def dump(msg: Message) -> str:
    """The text the server sends for `msg`: pydantic's serializer over its fields, each `Raw`
    field spliced in after the others (a JSON object's keys are unordered)."""
    raw = {k: v for k, v in msg.__dict__.items() if isinstance(v, Raw)}
    text = msg.__pydantic_serializer__.to_json(msg, exclude=set(raw)).decode()
    return text[:-1] + "".join(f',"{k}":{v}' for k, v in raw.items()) + "}"


class Template:
    """`dump` of a message sent again and again with only one list field changing, that field
    given as the JSON text of its items: the rest is serialized once, so a message costs one
    string join (a step frame goes to every viewer up to max_fps times a second)."""

    def __init__(self, msg: Message, field: str) -> None:
        self._head = dump(msg.model_copy(update={field: Raw("")}))[:-1]  # ends `"field":`

    def fill(self, items: str) -> str:
        """dump(msg) with the field Raw(f"[{items}]")."""
        return f"{self._head}[{items}]}}"
