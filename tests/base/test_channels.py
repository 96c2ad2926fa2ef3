"""Channel streams (base/channels.py): a window per channel key, strings sent to
their channel's window by rule, a finishing choice's channels flushed into its event, a
bound on the channels one stream holds, compact JSON as the APIs send it."""

from __future__ import annotations

import json

import pytest

from disguiselib.base.channels import MAX_CHANNELS, Chan, ChannelStream, channel_index, dumps_bytes
from disguiselib.base.holdback import Window
from disguiselib.errors import StreamError
from disguiselib.wire.jsonspan import PROSE, VALUES, Arr, Obj, transform
from strategies import PLACEHOLDERS, RULES


class Stream(ChannelStream):
    """The smallest channel stream: no events of its own (the machinery is what is tested)."""

    def on_event(self, ev):  # pragma: no cover - not fed events here
        return [ev.raw]

    def drain(self):
        return []

    def error_event(self, message: str) -> bytes:
        return b"error\n\n"


def stream() -> Stream:
    return Stream(RULES.restorer(PLACEHOLDERS))


RULE = Obj({"choices": Arr(Obj({"a": Chan((0, "a"), Window.TEXT), "b": Chan((1, "b"), Window.TEXT),
                                "name": VALUES, "note": PROSE}))})  # fmt: skip


def run(s: Stream, doc: dict, finishing: frozenset = frozenset()) -> dict:
    text = json.dumps(doc)
    new, _ = transform(text, doc, RULE, s.channel_fn(finishing))
    return json.loads(new)


def test_each_channel_has_its_own_window_and_interleaving_does_not_splice() -> None:
    s = stream()
    out = [run(s, {"choices": [{"a": "x Zenith La", "b": "y nov"}]}),
           run(s, {"choices": [{"b": "a", "a": "bs z"}]})]  # fmt: skip
    a = "".join(o["choices"][0].get("a", "") for o in out) + s.windows[(0, "a")].flush()
    b = "".join(o["choices"][0].get("b", "") for o in out) + s.windows[(1, "b")].flush()
    assert (a, b) == ("x Acme Corp z", "y nova-internal")
    assert out[0]["choices"][0] == {"a": "x ", "b": "y "}  # the tails held, each in its own window


def test_a_finishing_choice_is_flushed_into_its_event_and_forgotten() -> None:
    s = stream()
    run(s, {"choices": [{"a": "see nova"}]})
    assert s.windows[(0, "a")].held == "nova"
    got = run(s, {"choices": [{"a": "", "b": "x"}]}, finishing=frozenset({0}))
    assert got["choices"][0]["a"] == "nova-internal"
    assert (0, "a") not in s.windows and (1, "b") in s.windows


def test_touched_notes_the_channels_this_event_changed_or_held() -> None:
    s = stream()
    run(s, {"choices": [{"a": "plain.", "b": "Zenith Labs"}]})
    assert s.touched == {(1, "b")}
    run(s, {"choices": [{"a": "held nov"}]})
    assert s.touched == {(0, "a")}
    run(s, {"choices": [{"name": "Zenith Labs", "note": "Zenith Labs"}]})  # not channels: restored whole
    assert s.touched == set()


def test_a_rule_that_is_not_a_channel_is_restored_whole() -> None:
    s = stream()
    got = run(s, {"choices": [{"name": "Zenith Labs", "note": "a [[reply_to_current]] b"}]})
    assert got["choices"][0] == {"name": "Acme Corp", "note": "a  b"}


def test_too_many_channels_is_an_explicit_error_after_empty_ones_are_forgotten() -> None:
    s = stream()
    for k in range(MAX_CHANNELS):
        s.window((k,), Window.TEXT)
    s.window((MAX_CHANNELS,), Window.TEXT)  # every window is empty: forgotten, room again
    assert len(s.windows) == 1
    for k in range(MAX_CHANNELS):
        s.window((1000 + k,), Window.TEXT).feed("nov")  # each holds text
    with pytest.raises(StreamError, match=f"more than {MAX_CHANNELS} channels"):
        s.window(("one more",), Window.TEXT)
    assert s.window((1000,), Window.TEXT).held == "nov"  # an existing channel is still found


def test_chan_records_its_channel_and_parts() -> None:
    c = Chan((3, "content"), Window.JSON, parts=True)
    assert c.string and c.key == (3, "content") and c.mode == Window.JSON and c.parts


def test_dumps_bytes_is_compact_utf8_and_escapes_a_lone_surrogate() -> None:
    assert dumps_bytes({"a": "é", "b": [1]}) == '{"a":"é","b":[1]}'.encode()
    assert dumps_bytes({"a": "\ud83d"}) == b'{"a":"\\ud83d"}'


# -- survivors of `make mutation` (base/channels.py) --------------------------------


def test_a_finishing_channel_gets_what_its_event_releases_and_then_its_tail() -> None:
    s = stream()
    got = run(s, {"choices": [{"a": "x nov"}]}, finishing=frozenset({0}))
    assert got["choices"][0]["a"] == "x nov"  # released "x ", then the held "nov", in order


def test_a_text_channel_applies_strip_rules_and_a_json_channel_escapes() -> None:
    s = stream()
    got = run(s, {"choices": [{"a": "x [[reply_to_current]] y."}]})
    assert got["choices"][0]["a"] == "x  y."
    rule = Obj({"args": Chan(("t",), Window.JSON)})
    doc = {"args": '{"p": "WINPATH"}'}
    new, _ = transform(json.dumps(doc), doc, rule, s.channel_fn())
    out = json.loads(new)["args"] + s.windows[("t",)].flush()
    assert json.loads(out) == {"p": 'C:\\Users\\a "b"'}  # inserted JSON-escaped: still parses


def test_channels_whose_text_came_as_parts_are_noted() -> None:
    s = stream()
    rule = Obj({"content": Arr(Obj({"text": Chan((0, "content"), Window.TEXT, parts=True)}))})
    doc = {"content": [{"text": "hi"}]}
    transform(json.dumps(doc), doc, rule, s.channel_fn())
    assert s.parts == {(0, "content")}
    assert Chan((1,), Window.TEXT).parts is False


def test_dumps_bytes_keeps_compact_separators_when_it_must_escape() -> None:
    assert dumps_bytes({"a": "\ud83d", "b": [1, 2]}) == b'{"a":"\\ud83d","b":[1,2]}'


@pytest.mark.parametrize("text", ["0", "0.0", "0E0", "-0", "-0.0", "0e5", "0.000e+2"])
def test_a_channel_index_is_read_as_json_readers_read_it(text) -> None:
    """JSON has one number type: an integral float is that integer (the same key)."""
    assert channel_index(json.loads(text)) == 0 and type(channel_index(json.loads(text))) is int
    assert channel_index(json.loads("3.0")) == 3 and channel_index(json.loads("30e-1")) == 3


@pytest.mark.parametrize("text", ["0.5", "1e400", "-1e400", '"0"', "true", "false", "null", "[0]", "{}"])
def test_a_channel_index_that_is_no_integer_is_an_error_naming_the_member(text) -> None:
    with pytest.raises(StreamError, match="`content_index` is not an integer"):
        channel_index(json.loads(text), "content_index")
