"""Percent-encoded text read decoded (wire/percent.py), and what the masker and the leak
guard make of it: a URL in a request body (an image's or a document's source, a file's
URL) is fetched by the provider, which decodes it, so `Acme%20Corp` and a query's
`Acme+Corp` are the original. Both went out unmasked, and the guard passed them."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote_plus

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib import leakguard, pipeline
from disguiselib.apis.registry import recognise
from disguiselib.base import fields
from disguiselib.config import build_config
from disguiselib.pipeline import Masked
from disguiselib.wire import jsonspan, percent

# -- decode, transform -----------------------------------------------------------------------

_coded_chars = st.sampled_from(list("%+ab:/?=&~.-_ ")) | st.sampled_from(["%20", "%41", "%C3%A9", "%E2%82%AC", "%F0%9F%98%80",
                                                                           "%C3", "%FF", "%zz", "%2", "%%", "%2B"])  # fmt: skip
_tail = st.lists(_coded_chars | st.characters(blacklist_categories=("Cs",)), max_size=24).map("".join)
_coded = st.lists(_tail | st.sampled_from(["https://", "://", "mailto:", "s3://b/", " ", "\n"]), max_size=6).map(
    "".join
)
_URL_RUN = re.compile(r"(?:://|mailto:)([^\t\n\x0b\x0c\r ]*)")


def reference(value: str) -> str:
    """What decode reads, by urllib: a string that begins as a URL unquoted after its
    scheme (a form's `+` a space); else each URL's part after `://` or `mailto:` (up to
    whitespace) unquoted; everything else as it is."""
    whole = re.match(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://|mailto:", value)
    if whole is not None:
        return value[: whole.end()] + unquote_plus(value[whole.end() :], errors="surrogateescape")
    return _URL_RUN.sub(
        lambda m: m.group(0)[: m.start(1) - m.start()] + unquote_plus(m.group(1), errors="surrogateescape"), value
    )


@settings(max_examples=2000, deadline=None)
@given(_coded)
@example("https://x/%C3%41")  # a lead byte, then a character of its own
@example("see https://x/a+b%20%E2%82 and a+b %41")  # a character cut short; text outside a URL as it is
@example("svn+ssh://h/%41")  # a `+` before the `://` is no space
@example("mailto:bob%40corp.example.com")
# each width of a character an escape run writes, at its bounds, then a character after it
# (the mutation run: _width's bounds went untested by the drawn examples)
@example("https://x/%C2%80a%DF%BFb%E0%A0%80c%EF%BF%BFd%F0%90%80%80e%F0%9F%98%80f")
@example("https://x/%80a%FFb%C3c")  # bytes that are no character: one escape each
@example("see https://a/b and https://c/%41 x")  # a URL with nothing encoded before one with
@example("://a%41 mailto:b")  # a run at the very start, before a mailto
@example("mailto: x https://y/%41")  # an empty run
def test_decode_is_unquote_plus_of_each_url_and_each_character_comes_from_its_place(value: str) -> None:
    text, offsets = percent.decode(value)
    at = list(offsets)
    assert text == reference(value) == percent.decoded(value)
    assert len(at) == len(offsets) == len(text) + 1 and at[-1] == len(value) and at == sorted(at)
    for i, c in enumerate(text):  # each character read from its own place
        piece = value[at[i] : at[i + 1]]
        assert piece == c or unquote_plus(piece, errors="surrogateescape") == c
    with pytest.raises(IndexError):
        offsets[len(offsets)]
    assert percent.coded(value) is (text != value or any("+" in value[a:b] for a, b in percent.runs(value))
                                    or any(re.search("%[0-9A-Fa-f]{2}", value[a:b]) for a, b in percent.runs(value)))  # fmt: skip


@pytest.mark.skipif(percent.c_coded is None or percent.c_decoded is None, reason="no compiled span walk")
@settings(max_examples=3000, deadline=None)
@given(_coded | st.text())
@example("mailto://x/%41")
@example("ab:c://x %41")
@example("https:// %41")
@example("see mailto:a+b")
@example("https://x/%C3%A9%zz%F0%9F%98+%41 b")
@example("x mailto:%41%42 y://%FF")
@example("€ https://x/%41")  # two bytes a character
@example("€ https://x/ %41")
@example("😀 mailto:a+b")  # four
@example("😀mailto:a b+")
@example("€ a+b://")
@example("see https://a/b and https://c/%41 x")
@example("://a%41 mailto:b")
@example("a" * 32 + "://x/%41")  # a scheme of 32 characters: the whole string's
@example("a" * 33 + "://x y/%41")  # 33: the run after `://` only
def test_the_compiled_coded_and_decoded_are_the_reference(value: str) -> None:
    assert percent.c_coded(value) is percent.py_coded(value)
    got = percent.c_decoded(value)
    assert got == percent.py_decoded(value)
    if got == value:
        assert got is value  # (nothing decoded: the string itself, no copy)


@settings(max_examples=2000, deadline=None)
@given(_coded)
@example("a mailto://x y://z")
@example("x mailto: y :// z")  # runs that are empty: the place after the space is in none
@example("a mailto:b mailto:c d")  # the last mailto before the place, not the first
@example("a://b c://d")
@example("x://a " * 50 + "mailto:b x mailto:c ://d")  # one kind far after many of the other
def test_runs_are_the_regexs_matches(value: str) -> None:
    """runs' str.find walk (each of `://` and `mailto:` looked for again only once passed:
    linear) finds what the regex tried at every character finds, for a value that does
    not begin as a URL."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://|mailto:", value):
        return
    assert percent.runs(value) == [m.span(1) for m in _URL_RUN.finditer(value)]


_reps = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


@settings(max_examples=2000, deadline=None)
@given(_coded, st.data())
def test_transform_puts_each_edit_where_its_characters_were_and_nothing_else_changes(value: str, data) -> None:
    """Edits in one URL's decoded text: read decoded again, the result is those edits
    made; what lies before and after them is as it was written."""
    text, offsets = percent.decode(value)
    at = list(offsets)
    runs = [(at.index(a), at.index(b)) for a, b in percent.runs(value)]  # in text's offsets
    if not runs:
        assert percent.transform(value, lambda t: [(0, 0, "x")]) == "x" + value  # outside a URL: as it is
        return
    lo, hi = data.draw(st.sampled_from(runs))
    cuts = sorted(data.draw(st.lists(st.integers(lo, hi), max_size=6)))
    edits = [(cuts[k], cuts[k + 1], data.draw(_reps)) for k in range(0, len(cuts) - 1, 2)]
    out = percent.transform(value, lambda t: edits)
    assert reference(out) == jsonspan.splice(text, edits)
    if not edits:
        assert out is value
    else:  # what lies before the first edit and after the last one is as it was written
        # (but a stray `%` just before a deletion, written as its escape)
        assert out.startswith(value[: max(0, at[edits[0][0]] - 2)]) and out.endswith(value[at[edits[-1][1]] :])


def test_a_stray_percent_before_a_deletion_meets_nothing_after_it() -> None:
    for value, cut in (("https://x/%zz41", "zz"), ("https://x/%4z1", "z")):
        text, _ = percent.decode(value)
        a, b = text.index(cut), text.index(cut) + len(cut)
        out = percent.transform(value, lambda t, a=a, b=b: [(a, b, "")])
        assert reference(out) == text[:a] + text[b:]


def test_an_edit_after_a_deletion_at_a_stray_percent_is_still_in_the_url() -> None:
    """The deletion's `%25` once reused the index put walks the runs with: the replacement
    after it was taken for text outside any URL and its space written as it is."""
    assert percent.put("https://x/a%Zb?q=Acme", [(12, 13, ""), (17, 21, "Ze La")]) == "https://x/a%25b?q=Ze%20La"


@pytest.mark.parametrize("value", ["https://x/100%", "https://x/a%4", "https://x/%%", "https://x/%4%"])
def test_a_stray_percent_before_a_replacement_makes_no_escape_with_it(value: str) -> None:
    """Hypothesis found it: `%` written as it is, then a replacement "00", read `%00`."""
    text, _ = percent.decode(value)
    for rep in ("00", "41x", "A", "é9", "[EMAIL_1]", " x"):
        out = percent.transform(value, lambda t, rep=rep: [(len(t), len(t), rep)])
        assert reference(out) == text + rep and out.startswith(value)
        assert rep != "[EMAIL_1]" or out.endswith(rep)  # (a `[` makes no escape: as it is)


@pytest.mark.parametrize("value, coded", [
    ("https://x.example/a.png?who=Acme%20Corp", True), ("https://x.example/?q=Acme+Corp", True),
    ("s3://bucket/Acme%2FCorp", True), ("see https://x/a%20b now", True), ("mailto:bob%40corp.example.com", True),
    ("svn+ssh://h/a", False), ("https://x/100%", False), ("https://x/%zz", False), ("Acme%2fCorp", False),
    ("%41", False), ('url = "https://x/" + path', False), ("printf('%3d', n)", False), ("C++ rocks", False),
    ("https:// %41", True), ("https://x/a b?q=Acme%20Corp", True), ("see https:// %41", False), ("", False),
])  # fmt: skip
def test_what_is_read_decoded(value: str, coded: bool) -> None:
    assert percent.coded(value) is coded
    assert fields.plain(value, fields.VALUES) is not coded
    assert fields.read(value, fields.VALUES).how is (fields.As.PERCENT if coded else fields.As.TEXT)


# -- the masker and the leak guard ---------------------------------------------------------------

CFG = None


def cfg():  # noqa: ANN201 - the shipped defaults and two literals, built once
    global CFG
    if CFG is None:
        import tempfile
        from pathlib import Path

        d = Path(tempfile.mkdtemp())
        (d / "m.yaml").write_text(
            "literals:\n  Acme Corp: Zenith Labs\n  Müller & Söhne: Heron Works\n  AcmeCorp: Zenith Works\n"
        )
        CFG = build_config([str(d)], True, [])
    return CFG


ORIGINALS = ("Acme Corp", "Müller & Söhne", "bob@corp.example.com")
H = [("content-type", "application/json")]


def _url_bodies(url: str) -> list[tuple[str, bytes]]:
    """The URL where each API takes one from the client: an image's and a document's
    source (Anthropic), an image_url (Chat), a file_url (Responses)."""
    return [
        ("/v1/messages", json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": url}},
            {"type": "document", "source": {"type": "url", "url": url}}]}]}).encode()),
        ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]}).encode()),
        ("/v1/responses", json.dumps({"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_url": url}]}]}).encode()),
    ]  # fmt: skip


def _strings(doc: object) -> list[str]:
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in _strings(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return [doc] if isinstance(doc, str) else []


_safe = st.sampled_from(["", "&", "@", "&@", "ü"])  # (a space left as it is makes no URL)
_around = st.text(st.sampled_from(list("abcXYZ019-._~/?=&")), max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ORIGINALS), _safe, st.booleans(), _around, _around)
@example("Acme Corp", "", True, "", "")
@example("Acme Corp", "", False, "", "")
def test_a_percent_encoded_original_in_a_url_is_masked_and_the_rest_kept(original, safe, plus, before, after) -> None:
    """Encoded however a client encodes it (some characters left as they are, a form's
    `+` for a space), the original is gone from the URL read decoded, and the URL's
    characters before it are the client's, byte for byte."""
    coded = quote(original, safe=safe)
    if plus:
        coded = coded.replace("%20", "+")
    url = f"https://img.example/p/{before}?who={coded}&k={after}"
    for path, body in _url_bodies(url):
        v = pipeline.mask_request(recognise("POST", path), body, cfg(), path, H)
        assert isinstance(v, Masked), v
        urls = [s for s in _strings(json.loads(v.body)) if s.startswith("https://img.example/")]
        assert urls
        restorer = cfg().rules.restorer(v.session.placeholders)
        for u in urls:
            decoded = unquote_plus(u)
            assert not any(o in decoded for o in ORIGINALS), u
            assert u.startswith(f"https://img.example/p/{before}?who=")
            # the answer's copy of it, and one a model wrote with a form's `+`, come back
            # to the client reading as the client's URL did
            for echoed in (u, u.replace("%20", "+")):
                assert unquote_plus(restorer.text(f"see {echoed} now")) == unquote_plus(f"see {url} now")
                assert unquote_plus(json.loads(restorer.json_text(json.dumps({"u": echoed})))["u"]) == unquote_plus(url)


def test_the_guard_reads_a_url_decoded() -> None:
    """What the masker would have missed, the guard refuses: each encoding of an original
    in a body's URL is a hit, where it is said to be read decoded."""
    rules = cfg().rules
    for url in ("https://img.example/a.png?who=Acme%20Corp", "https://img.example/?q=Acme+Corp",
                "https://img.example/M%C3%BCller%20%26%20S%C3%B6hne", "https://img.example/?to=bob%40corp.example.com"):  # fmt: skip
        for path, body in _url_bodies(url):
            hit = leakguard.scan_body(body, rules, recognise("POST", path), "application/json")
            assert hit is not None and hit.where.endswith(" (percent-decoded)"), (url, path, hit)


def test_a_url_with_nothing_to_mask_goes_out_as_it_came() -> None:
    url = "https://img.example/a%20b.png?x=1+2&y=%E2%82%AC"
    for path, body in _url_bodies(url):
        v = pipeline.mask_request(recognise("POST", path), body, cfg(), path, H)
        assert isinstance(v, Masked) and v.body == body


def test_a_text_body_nothing_describes_is_read_with_its_urls_decoded() -> None:
    """An endpoint disguise does not transform (the unknown-endpoint scan): a text body's
    URL with the original encoded is a hit too."""
    rules = cfg().rules
    for ctype in ("text/plain", "text/markdown", ""):
        hit = leakguard.scan_body(b"see https://x.example/?q=Acme+Corp now", rules, None, ctype)
        assert hit is not None and hit.where.endswith(" (percent-decoded)"), (ctype, hit)
    assert leakguard.scan_body(b"see https://x.example/?q=1+2 now", rules, None, "text/plain") is None


def test_a_replacement_in_a_url_keeps_it_one_url() -> None:
    """`AcmeCorp` written as it is becomes `Zenith Works`: as it was put, its space ended
    the URL, and the `Acme%20Corp` after it was no longer read decoded, by the masker or
    the guard."""
    url = "https://img.example/a.png?a=AcmeCorp&b=Acme%20Corp"
    for path, body in _url_bodies(url):
        v = pipeline.mask_request(recognise("POST", path), body, cfg(), path, H)
        assert isinstance(v, Masked), v
        for u in [s for s in _strings(json.loads(v.body)) if s.startswith("https://img.example/")]:
            assert " " not in u and "Acme" not in unquote_plus(u), u
            assert u == "https://img.example/a.png?a=Zenith%20Works&b=Zenith%20Labs"
    assert percent.coded("see https://x/?a=AcmeCorp&b=Acme%20Corp now")


def test_a_placeholder_in_a_url_reads_as_it_did() -> None:
    """Its brackets as they are, whichever reading found the original: the answer's copy
    of the URL is restored (the detection corpus' SAS URLs: `sig=%5BAZURE_..%5D` was
    not)."""
    for url in (
        "https://img.example/?to=bob@corp.example.com&n=1",
        "https://img.example/?to=bob%40corp.example.com&n=1",
    ):
        for path, body in _url_bodies(url):
            v = pipeline.mask_request(recognise("POST", path), body, cfg(), path, H)
            assert isinstance(v, Masked)
            urls = [s for s in _strings(json.loads(v.body)) if s.startswith("https://img.example/")]
            assert urls and all(u == "https://img.example/?to=[EMAIL_1]&n=1" for u in urls), urls


def test_every_original_of_a_string_is_masked_in_and_out_of_its_urls() -> None:
    """An original written as it is outside a URL, then one encoded in it, then one at the
    very start of a URL, in a field that holds a URL with a space left in it: each is
    masked, each replacement in a URL escaped so that the URL stays one (the mutation run:
    put's look at a URL that begins the string, and its edits after one outside a URL)."""
    cases = {
        "Acme Corp, see https://x.example/?q=Acme%20Corp&a=AcmeCorp now": (
            "Zenith Labs, see https://x.example/?q=Zenith%20Labs&a=Zenith%20Works now"
        ),
        "https://AcmeCorp.example/a b?q=Acme%20Corp": "https://Zenith%20Works.example/a b?q=Zenith%20Labs",
    }
    for text, want in cases.items():
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
        v = pipeline.mask_request(recognise("POST", "/v1/messages"), body, cfg(), "/v1/messages", H)
        assert isinstance(v, Masked), v
        assert json.loads(v.body)["messages"][0]["content"] == want


# -- what the restorer turns back in a URL -----------------------------------------------------


def test_in_urls_writes_each_disguise_and_its_original_the_same_way() -> None:
    reverse = {"Zenith Labs": "Acme Corp", "redwing": "bluebird", "Kraft/Ol": "Müller & Söhne", "[X]": "y z"}
    assert percent.in_urls(reverse, {}) == {
        "Zenith%20Labs": "Acme%20Corp", "Zenith+Labs": "Acme+Corp",  # encode, then a form's `+`
        "Kraft%2FOl": "M%C3%BCller%20%26%20S%C3%B6hne",  # (no space: one writing)
    }  # fmt: skip  # a one-word disguise, a placeholder-shaped one: as a URL holds them already


def test_in_urls_leaves_the_mappings_own_words_alone() -> None:
    """A writing that is a disguise of its own, or an original, is the mapping's word: the
    restorer keeps reading it as the mapping says."""
    reverse = {"Zenith Labs": "Acme Corp", "Zenith%20Labs": "Other", "a b": "c d"}
    assert percent.in_urls(reverse, {"a+b": "q"}) == {
        "Zenith+Labs": "Acme+Corp", "a%20b": "c%20d",
        "Zenith%2520Labs": "Other",  # (the mapping's own `Zenith%20Labs`, as a URL holds it)
    }  # fmt: skip
    # an original no URL holds: none for it, the others as before
    assert percent.in_urls({"a b": "\ud800 x", "c d": "e f"}, {}) == {"c%20d": "e%20f", "c+d": "e+f"}


def test_the_rule_sets_restore_table_holds_the_url_writings() -> None:
    """What the restorer, the stream's triggers and hold-back and the compiled per-read
    pass all read (Rules.lit_reverse) holds them, and masking's table does not."""
    rules = cfg().rules
    assert rules.lit_reverse["Zenith%20Labs"] == "Acme%20Corp" and rules.lit_reverse["Zenith+Labs"] == "Acme+Corp"
    assert rules.lit_reverse["Heron%20Works"] == "M%C3%BCller%20%26%20S%C3%B6hne"
    assert "Zenith%20Labs" not in rules.lit_forward.values()


def test_a_fake_in_a_url_comes_back_as_the_url_held_the_original() -> None:
    """With disguise_fakes the masker writes an address's fake in a URL encoded
    (`carol%40mail.example`, percent.encode); the answer's copy came back with the fake
    in it. The flow's restorer reads each fake as a URL holds it too."""
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp())
    (d / "m.yaml").write_text("literals:\n  Acme Corp: Zenith Labs\n")
    conf = build_config([str(d)], True, [], b"k" * 32)
    url = "https://img.example/a.png?to=bob%40corp.example.com&who=Acme%20Corp"
    for path, body in _url_bodies(url):
        v = pipeline.mask_request(recognise("POST", path), body, conf, path, H)
        assert isinstance(v, Masked), v
        fakes = [f for f in v.session.placeholders if not f.startswith("[")]
        assert fakes, v.session.placeholders
        (u,) = {s for s in _strings(json.loads(v.body)) if s.startswith("https://img.example/")}
        assert "bob" not in unquote_plus(u) and "%40" in u, u
        restorer = conf.rules.restorer(v.session.placeholders)
        assert restorer.text(f"see {u}") == f"see {url}"
        assert json.loads(restorer.json_text(json.dumps({"u": u})))["u"] == url
