"""A rule's candidates skipped where its validator cannot accept them (accept.skip_regex,
validators.SHAPES, Rules._next): a second way of finding a rule's spans, held to the
first. The validators to their shapes, the shapes' classes to str.isspace/str.isdigit
over all of Unicode, and find() with the skip to find() without it on texts built from
the rule's own matches and near-misses."""

from __future__ import annotations

import dataclasses
import functools
import sys

from hypothesis import example, given, settings
from hypothesis import strategies as st

from disguiselib.rules import accept, linear, mappings, validators
from disguiselib.rules.rules import Rules
from tests.conftest import REPO


@functools.lru_cache(maxsize=1)
def _default() -> mappings.MappingSet:
    return mappings.load(REPO / "mappings")


def _only(*names: str) -> mappings.MappingSet:
    return mappings.MappingSet(patterns=tuple(p for p in _default().patterns if p.name in names))


def _without_skip(r: Rules) -> Rules:
    """r answering as before the skip: every candidate searched and accept()ed whole."""
    plain = Rules(r.mappings, streams=False)
    pats = []
    for p in plain._patterns:
        opts = p.opts
        if opts is not None:
            opts = accept.Options(opts.groups, opts.validator, opts.keywords, opts.window)
            opts.min_bytes = 1
        pats.append(dataclasses.replace(p, skip=None, opts=opts))
    plain._patterns = tuple(pats)
    return plain


# -- the shapes ------------------------------------------------------------------------------


def test_the_shape_classes_are_isspace_and_cover_isdigit_over_all_of_unicode() -> None:
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    b = every.encode("utf-8")
    spaces = linear.Regex("[" + validators.SHAPES["token_value"].never + "]", capture=False)
    got, pos = set(), 0
    while (m := spaces.search(b, pos)) is not None:
        got.add(b[m[0] : m[1]].decode())
        pos = m[1]
    assert got == {c for c in every if c.isspace()}
    digits = "".join(c for c in every if c.isdigit())
    assert linear.Regex(r"\p{N}+").fullmatch(digits.encode())


_TOKENISH = st.text(
    alphabet=st.sampled_from("aZk9_-./:$=\" '\t\u00a0\u0663\u00b2xyzQ1"), min_size=0, max_size=24
)


@settings(deadline=None)
@given(before=st.text(max_size=6), span=_TOKENISH, after=st.text(max_size=6))
@example(before="token=", span="abc12345", after="")
@example(before="key: ", span="\u0663bcdefgh", after="")
def test_every_validator_passes_only_spans_of_its_shape(before: str, span: str, after: str) -> None:
    text = before + span + after
    a, e = len(before), len(before) + len(span)
    for name, shape in validators.SHAPES.items():
        if validators.check(name, text, a, e):
            assert len(span) >= shape.min_chars, name
            if shape.never:
                assert not any(c.isspace() for c in span), name
            if len(span) < shape.digit_below:
                assert any(c.isdigit() for c in span), name


# -- the skip regex's form --------------------------------------------------------------------


def test_a_skip_regex_only_where_one_path_masks_one_class_run() -> None:
    ix = {"a": 1, "b": 2}
    one_of = accept.skip_regex("x(?:(?P<a>[^ab]+)|(?P<b>[0-9]+))", ("a", "b"), ix, "keyword_value")
    assert one_of == "x(?:(?P<a>[^ab]{4,})|(?P<b>[0-9]{4,}))"
    token = accept.skip_regex("k=(?P<a>[^;]+)", ("a",), {"a": 1}, "token_value")
    assert token is not None and token.startswith("k=(?P<a>(?:[^;\\t") and "]{20,}|" in token and "\\p{N}" in token
    # both groups on one path; a group repeated; a group that is not a class run; no shape
    assert accept.skip_regex("(?P<a>[a-z]+)=(?P<b>[0-9]+)", ("a", "b"), ix, "token_value") is None
    assert accept.skip_regex("x(?:(?P<a>[a-z]+)|(?P<b>[0-9]+))+", ("a", "b"), ix, "token_value") is None
    assert accept.skip_regex("x(?:(?P<a>[a-z]+)|(?P<b>[0-9]+)){1,3}", ("a", "b"), ix, "token_value") is None
    assert accept.skip_regex("x(?P<a>[a-z][0-9]*)", ("a",), {"a": 1}, "token_value") is None
    assert accept.skip_regex("x(?P<a>[a-z]+)", ("a",), {"a": 1}, "email") is None
    assert accept.skip_regex("x(?P<a>[a-z]+)", (), {"a": 1}, "token_value") is None
    r = Rules(_only("SECRET"))
    assert r._patterns[0].skip is not None  # the shipped rule it was made for


# -- find() with the skip is find() without it ------------------------------------------------

_KEYS = ["token", "API_KEY", "secret", "key", "mySecretKey", "client_secret", "auth", "Token", "xkey", "monkey"]
_ASSIGN = ["=", ": ", '": "', "': '", " := ", "=>", ': "', "\n  value: ", ">", "\\\": \\\"", "', '", " = `", ":\t"]
_VALUES = st.one_of(
    st.sampled_from(["abc", "bytes", "AuthTypes", "sk-live-0123456789abcdef", "hunter2hunter2", "12345678901234567",
                     "my secret value", "a1b2c3d4", "\u0663\u0663\u0663\u0663abcd", "https://x.y/z", "x" * 25,
                     "self.api_key", "$TOKEN", "</x>", "abcdefg\u00a0hij"]),
    _TOKENISH,
)  # fmt: skip
_PIECES = st.one_of(st.sampled_from(_KEYS), st.sampled_from(_ASSIGN), _VALUES, st.sampled_from(['"', "'", "`", " ", "\n", ",", "<"]))


@functools.cache
def _pair(names: tuple[str, ...]) -> tuple[Rules, Rules]:
    r = Rules(_only(*names), streams=False)
    return r, _without_skip(r)


@settings(deadline=None)
@given(st.lists(_PIECES, max_size=24))
@example(["token", ": ", "abc", " ", "token", "=", "sk-live-0123456789abcdef"])
@example(["key", '": "', "bytes", '"', ", ", "API_KEY", "=", "a1b2c3d4"])
@example(["API_KEY=x1 "] * 40 + ["token", "=", "sk-live-0123456789abcdef", " key: abc1 ", "API_KEY=a1b2c3d4"])  # past _SKIP_WASTE
def test_find_with_the_skip_is_find_without_it(pieces: list[str]) -> None:
    text = "".join(pieces)
    for names in (("SECRET",), ("SECRET", "PASSWORD", "EMAIL", "AWS_ACCESS_KEY")):
        fast, slow = _pair(names)
        assert fast.find(text) == slow.find(text), text
