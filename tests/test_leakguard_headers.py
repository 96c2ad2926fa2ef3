"""The leak guard's reading of a request's headers (leakguard.scan_headers): what the rule
set remembers of headers it found nothing in (rules/found.py), and a copy of an original
a rule found in the body, in a header or the URL, where no rule finds it (base/copies.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis.registry import recognise
from disguiselib.config import build_config
from disguiselib.rules import found as found_mod
from disguiselib.rules.found import Found
from disguiselib.rules.knowing import Knowing
from strategies import make_rules

COPY = "hunter2xyz9Q"  # a value PASSWORD finds after its key, and nothing finds alone
MAPPING = r"""
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+'
  - name: PASSWORD
    regex: 'password=(?P<v>[A-Za-z0-9]{8,})'
    group: v
"""
HEADERS = [("host", "api.example"), ("accept", "application/json"), ("user-agent", "sdk/1.0"),
           ("anthropic-version", "2023-06-01"), ("x-stainless-os", "Linux")]  # fmt: skip


def counting(rules):
    """rules whose prescan counts the texts it is handed (calls[0])."""
    calls = [0]
    inner = rules.prescan

    def prescan(pieces, *a, **k):
        calls[0] += len(pieces)
        return inner(pieces, *a, **k)

    rules.prescan = prescan
    return calls


def test_a_header_read_clean_is_not_read_again() -> None:
    rules = make_rules()
    calls = counting(rules)
    assert leakguard.scan_headers(HEADERS, rules) is None
    assert calls[0] == 4 * len(HEADERS)  # its value, its name, both decoded
    assert leakguard.scan_headers(HEADERS, rules) is None
    assert calls[0] == 4 * len(HEADERS)  # (remembered: none read again)
    # a new one is read alone; an original in it is found, the others still unread
    assert str(leakguard.scan_headers([*HEADERS, ("x-note", "Acme Corp")], rules)) == "literal in header x-note"
    assert calls[0] == 4 * len(HEADERS) + 4
    # a rule set without memory reads every one every time
    bare = make_rules()
    bare.found = Found(limit=0)
    calls = counting(bare)
    leakguard.scan_headers(HEADERS, bare)
    leakguard.scan_headers(HEADERS, bare)
    assert calls[0] == 2 * 4 * len(HEADERS)
    # forgotten with the rest of the rule set's memory
    rules.found.clear()
    calls = counting(rules)
    leakguard.scan_headers(HEADERS, rules)
    assert calls[0] == 4 * len(HEADERS)


def test_the_memory_of_headers_is_bounded() -> None:
    f = Found()
    f.add_clean_headers(("x-n", str(i)) for i in range(found_mod.HEADERS * 3))
    assert len(f.unmet_headers([("x-n", "x-n", str(i)) for i in range(found_mod.HEADERS * 3)])) >= found_mod.HEADERS * 2
    f.add_clean_headers([("cookie", "c" * (found_mod.HEADER_MAX + 1))])  # a long value: read each time
    assert f.unmet_headers([("cookie", "cookie", "c" * (found_mod.HEADER_MAX + 1))])
    assert Found(limit=0).unmet_headers([("a", "a", "b")]) == [("a", "a", "b")]


def test_a_header_a_knowing_of_disguises_read_clean_is_not_taken_for_clean_by_the_rules() -> None:
    """A span the rules find that is a disguise whole is none under the request's
    disguises (knowing.Knowing): such a header is not remembered as one the rules find
    nothing in, for the next request knows other disguises, or none."""
    rules = make_rules()
    k = Knowing(rules, frozenset({"bob@corp.example.com"}))  # (a fake e-mail the request was given)
    assert leakguard.scan_headers([("x-to", "bob@corp.example.com")], k) is None
    assert str(leakguard.scan_headers([("x-to", "bob@corp.example.com")], rules)) == "EMAIL in header x-to"


def test_a_copy_of_a_found_original_in_a_header_is_found() -> None:
    """Knowing the request's originals (of_session(copies=True)), a header holding a copy
    of one is read, whether the rules' scan marks it or not, remembered clean or not."""
    rules = make_rules()
    header = [("x-note", f"see {COPY}")]
    assert leakguard.scan_headers(header, rules) is None  # (no rule finds it alone: now remembered)
    k = Knowing(rules, frozenset(), {COPY: "PASSWORD"})
    assert str(leakguard.scan_headers(header, k)) == "PASSWORD in header x-note"
    assert str(leakguard.scan_headers([("x-note", quote(f"see {COPY}"))], k)) == "PASSWORD in header x-note"
    b64 = base64.b64encode(COPY.encode()).decode()
    assert str(leakguard.scan_headers([("x-note-bin", b64)], k)) == "PASSWORD in header x-note-bin (base64-decoded)"
    fresh = make_rules()
    assert str(leakguard.scan_headers(header, Knowing(fresh, frozenset(), {COPY: "PASSWORD"}))) == "PASSWORD in header x-note"


VALUES = st.sampled_from(["sdk/1.0", "Acme Corp", "bob@corp.example.com", f"x {COPY}", quote(f"x {COPY}"), "2023-06-01",
                          "Zenith Labs", base64.b64encode(b"Acme Corp").decode(), "keep-alive", "a%40b"])  # fmt: skip
NAMES = st.sampled_from(["x-note", "x-note-bin", "user-agent", "Acme Corp", "x-to"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(NAMES, VALUES), max_size=6), st.integers(0, 3)), min_size=1, max_size=6))
def test_what_the_memory_answers_is_what_a_reading_answers(requests) -> None:
    """Requests' headers read one after the other, by the rule set, knowing a request's
    disguises, or knowing its originals too: each verdict is the one of a rule set
    without memory."""
    rules, bare = make_rules(), make_rules()
    bare.found = Found(limit=0)

    def reader(r, how: int):
        return [r, Knowing(r, frozenset()), Knowing(r, frozenset({"bob@corp.example.com"})),
                Knowing(r, frozenset(), {COPY: "PASSWORD"})][how]  # fmt: skip

    for headers, how in requests:
        assert str(leakguard.scan_headers(headers, reader(rules, how))) == str(leakguard.scan_headers(headers, reader(bare, how)))


def _config(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    return build_config([str(tmp_path / "m.yaml")], False, [])


def test_a_password_the_body_keys_is_refused_in_a_header_or_the_url(tmp_path: Path) -> None:
    """The body gives the value its key (`password=`), and masking replaces it there; the
    same value in a header or the URL, where no rule finds it, is an original leaving
    (base/copies.py): the request is refused, on the full path and on a next turn cut
    from the turn before (pipeline._cut)."""
    cfg = _config(tmp_path)
    api = recognise("POST", "/v1/messages")
    msgs = [{"role": "user", "content": "a long file " * 6000 + f"db: password={COPY} ok"}]  # (cut from 64 KiB on)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": msgs}).encode()
    plain = [("content-type", "application/json")]
    ok = pipeline.mask_request(api, body, cfg, "/v1/messages", plain)
    assert isinstance(ok, pipeline.Masked) and COPY.encode() not in ok.body
    for path, headers, where in (("/v1/messages", [*plain, ("x-note", COPY)], "header x-note"),
                                 (f"/v1/messages?x={COPY}", plain, "url")):  # fmt: skip
        got = pipeline.mask_request(api, body, cfg, path, headers)
        assert isinstance(got, pipeline.Refused), where
        assert got.reason == f"an original (PASSWORD in {where}) would have left unmasked"
    # a next turn: the conversation before it went through; this one adds a header's copy
    turn = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        *msgs, {"role": "assistant", "content": "noted"}, {"role": "user", "content": "and now?"}]}).encode()  # fmt: skip
    clean = pipeline.mask_request(api, turn, cfg, "/v1/messages", plain)
    assert isinstance(clean, pipeline.Masked) and clean.cut
    turn2 = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        *json.loads(turn)["messages"], {"role": "assistant", "content": "ok"}, {"role": "user", "content": "so?"}]}).encode()  # fmt: skip
    got = pipeline.mask_request(api, turn2, cfg, "/v1/messages", [*plain, ("x-note", COPY)])
    assert isinstance(got, pipeline.Refused)
    assert got.reason == "an original (PASSWORD in header x-note) would have left unmasked"


def test_a_header_the_scan_marks_and_the_rules_find_nothing_in_is_remembered_too() -> None:
    """`anthropic-version: 2023-06-01` (the shipped patterns' scan marks a date's digits,
    and no rule finds anything there) is read once per rule set, as an unmarked one is."""
    rules = build_config([], True, []).rules
    header = [("anthropic-version", "2023-06-01")]
    assert rules.prescan(["2023-06-01"])[0] == {0}  # (what makes it a case)
    calls = counting(rules)
    assert leakguard.scan_headers(header, Knowing(rules, frozenset({"[EMAIL_1]"}))) is None
    assert calls[0] == 4
    assert leakguard.scan_headers(header, rules) is None
    assert calls[0] == 4


def test_a_content_length_is_the_bodys_length_not_a_text() -> None:
    """A Content-Length of digits is the length of the body that leaves (mitmproxy sets
    it): not read. Any other value is read as every header is."""
    rules = build_config([], True, []).rules
    calls = counting(rules)
    assert leakguard.scan_headers([("Content-Length", "1038341")], rules) is None
    assert calls[0] == 0
    assert str(leakguard.scan_headers([("content-length", "bob@corp.example.com")], rules)) == "EMAIL in header content-length"
