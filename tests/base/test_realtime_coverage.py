"""The realtime tables against the official SDKs' own types: every client event type the
openai SDK can send (GA and beta) has a table, every server event type is a delta, a
done, a snapshot, audio or one of the events restored whole; every field of
google-genai's Live messages is known. A new event type in an SDK fails here (it would
otherwise be scanned as unknown, or restored whole without its channel)."""

from __future__ import annotations

import typing

import pytest

from disguiselib.apis.google import live as gemini_live
from disguiselib.apis.openai import realtime as openai_realtime

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")


def _types(union: object) -> set[str]:
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    out: set[str] = set()
    for model in typing.get_args(union):
        out.update(typing.get_args(model.model_fields["type"].annotation))
    return out


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.title() for w in rest)


def test_every_openai_client_event_has_a_table() -> None:
    from openai.types.beta.realtime import RealtimeClientEvent as Beta
    from openai.types.realtime import RealtimeClientEvent

    missing = (_types(RealtimeClientEvent) | _types(Beta)) - set(openai_realtime.CLIENT_EVENTS)
    assert not missing, f"client events without a table: {sorted(missing)}"


def test_every_openai_server_event_is_known() -> None:
    from openai.types.beta.realtime import RealtimeServerEvent as Beta
    from openai.types.realtime import RealtimeServerEvent

    known = (set(openai_realtime.DELTAS) | set(openai_realtime.DONES) | set(openai_realtime.SNAPSHOTS)
             | openai_realtime.OPAQUE | openai_realtime.GENERIC_EVENTS)  # fmt: skip
    missing = (_types(RealtimeServerEvent) | _types(Beta)) - known
    assert not missing, f"server events this module does not list: {sorted(missing)}"


def test_every_gemini_live_field_is_known() -> None:
    from google.genai import types

    client = {_camel(f) for f in types.LiveClientMessage.model_fields}
    assert client <= set(gemini_live.CLIENT_MESSAGES), client - set(gemini_live.CLIENT_MESSAGES)
    server = {_camel(f) for f in types.LiveServerMessage.model_fields}
    assert server <= set(gemini_live.SERVER_MESSAGE.fields) | {"serverContent"}
    content = {_camel(f) for f in types.LiveServerContent.model_fields}
    channels = {"modelTurn", "outputTranscription", "inputTranscription"}
    assert content <= set(gemini_live._CONTENT_FIELDS) | channels, content - set(gemini_live._CONTENT_FIELDS)
