"""The packed-key tables have one source: the browser's keys.js is what wire_keys writes, and
the wire model (protocol.PackedRecord) has a field for every packed key."""

from __future__ import annotations

from servescope.api.wire import protocol as P
from servescope.api.wire.keys import CARRIED, JS_PATH, LISTS, js_module


def test_the_decoder_imports_the_tables_python_packs_with() -> None:
    assert JS_PATH.read_text(encoding="utf-8") == js_module(), (
        "frontend/static/js/transport/keys.js is stale: run python -m servescope.api.wire.keys")


def test_every_packed_key_is_a_field_of_the_wire_model() -> None:
    fields = set(P.PackedRecord.model_fields)
    assert {key for key, _ in (*LISTS, *CARRIED)} <= fields
