"""What turns.remember records of where a request's conversation's last elements begin in
its bytes (turns.tail_offsets, from the text masking read): the offsets the body's own
bytes give when walked again (the reference: their JSON read one byte a character), for
random conversations with non-ASCII text and members after the conversation; none where
the bytes are not the text's; and the body is not walked again to find them."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from turns_util import API, HDRS, any_size, conversation

from disguiselib import pipeline, turns
from disguiselib.config import build_config
from disguiselib.wire import spanwalk


def walked(raw: bytes, member: str) -> tuple[list[int], int]:
    """The byte offsets of member's last turns.CUTS elements and of its `]`, by a walk of
    raw read one byte a character (latin-1: the JSON's structure is ASCII)."""
    b = raw.decode("latin-1")
    starts, keys = spanwalk.members(b)
    at = turns._COLON.match(b, turns.json_string_end(b, starts[keys.index(member)])).end()  # type: ignore[union-attr]
    el, close = spanwalk.elements(b, at)
    return list(el[-turns.CUTS :]), close


def offsets(raw: bytes) -> tuple[list[int], int] | None:
    s = raw.decode("utf-8")
    note = turns.Note(API, raw, "messages")
    m = note.marks(s, json.loads(s), None)
    assert m is not None
    return turns.tail_offsets(s, raw, [*m.at, m.hi])


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(conversation(), st.sampled_from(["", "ü→", "\U0001f600"]), st.integers(0, 3))
def test_the_offsets_are_those_the_bytes_walked_again_give(bodies: list[bytes], extra: str, after: int) -> None:
    for raw in bodies:
        doc = json.loads(raw)
        for k in range(after):  # members after the conversation, some not ASCII
            doc[f"after{k}"] = {"x": [extra * k, "é"], "n": k}
        doc["messages"].append({"role": "user", "content": extra + "ünïcode"})
        raw = json.dumps(doc, ensure_ascii=bool(after % 2)).encode()
        assert offsets(raw) == walked(raw, "messages")


def test_none_where_the_bytes_are_not_the_texts() -> None:
    doc = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "ü"}], "z": "é"}
    raw = json.dumps(doc, ensure_ascii=False).encode()
    s = raw.decode()
    note = turns.Note(API, raw, "messages")
    m = note.marks(s, json.loads(s), None)
    assert m is not None
    xs = [*m.at, m.hi]
    assert turns.tail_offsets(s, raw, xs) == walked(raw, "messages")
    assert turns.tail_offsets(s, raw.replace(b'"z"', b'"y"'), xs) is None  # its tail another
    assert turns.tail_offsets(s, raw + b" ", xs) is None  # a byte more at its end
    assert turns.tail_offsets(s, raw.replace("é".encode(), b"e"), xs) is None  # a byte fewer in its tail
    assert turns.tail_offsets(s, raw[-3:], xs) is None  # shorter than the tail


def test_remembering_does_not_walk_the_body_again(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The full path walks the body's members once, in its text (turns.Note.marks): the
    prompt's order is read from that walk (base/prompt.py: the body is not in it), and
    what remember records of its bytes too, not from another walk of its bytes."""
    (tmp_path / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    cfg = build_config([str(tmp_path / "m.yaml")], True, [])
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Acme Corp ü {i}"} for i in range(6)]
    raw = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs, "system": "s"}, ensure_ascii=False).encode()
    walks: list[str] = []
    members = spanwalk.members

    def counted(s: str) -> object:
        walks.append(s)
        return members(s)

    monkeypatch.setattr(turns.spanwalk, "members", counted)
    with any_size():
        v = pipeline.mask_request(API, raw, cfg, "/v1/messages", HDRS)
    assert isinstance(v, pipeline.Masked) and v.turn is not None  # remembered
    assert walks == [raw.decode()]
    got = turns.turns_of(cfg.rules).turns[-1]  # type: ignore[union-attr]
    assert [c.raw for c in got.cuts] == [*walked(raw, "messages")[0], walked(raw, "messages")[1]]
