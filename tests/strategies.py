"""Shared rule set and hypothesis strategies for the streaming properties."""

from __future__ import annotations

import os
import re

from hypothesis import strategies as st

from disguiselib.rules import mappings, rules
from disguiselib.wire import percent

EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
STRIP = r"\[\[\s*reply_to(?:_current|:[^\]\n]*)?\s*\]\]"

LITERALS = {
    "Acme Corp": "Zenith Labs",
    "session_id": "thread_id",
    "nova-internal": "nova",  # a disguise that a longer one extends
    "nova-internal.cloud": "nova.cloud",
    'C:\\Users\\a "b"': "WINPATH",  # an original that needs JSON escaping
    "Ünïcødé GmbH": "Unicode Ltd",
    "acme_lookup": "crm_lookup",
}


# DISGUISE_TEST_FAKES=1 (tests/base/test_fakes_streams.py runs the stream property
# tests so): the rule set has a fakes key and the flow issued fakes beside placeholders,
# and the texts are made of them too.
FAKES = os.environ.get("DISGUISE_TEST_FAKES") == "1"
FAKE_DISGUISES = {"bob7q@mail.example": "carol@corp.example.com", "ghp_Q2Z7XK4MPL9RT3WBx7Gq1ZpLw9KcVbN3mR": 'k"ey\\x'} if FAKES else {}


def make_rules(**extra) -> rules.Rules:
    doc = {
        "literals": dict(LITERALS),
        # with fakes on, masking still numbers placeholders (tests name them); the flow's
        # fakes are the ones PLACEHOLDERS adds
        "patterns": [{"name": "EMAIL", "regex": EMAIL, **({"fake": False} if FAKES else {})}],
        "strip": [{"regex": STRIP}],
    }
    doc.update(extra)
    return rules.Rules(mappings.from_dict(doc), b"strategies-fakes-key" if FAKES else None)


RULES = make_rules()
PLACEHOLDERS = {"[EMAIL_1]": "bob@corp.example.com", "[EMAIL_2]": 'q"uote\\d@x.io', **FAKE_DISGUISES}
_R = RULES.restorer(PLACEHOLDERS)


def restore_value(v):
    """The reference reversal of parsed JSON: every key and string value, whole."""
    if isinstance(v, str):
        return _R.value(v)
    if isinstance(v, list):
        return [restore_value(x) for x in v]
    if isinstance(v, dict):
        return {_R.value(k): restore_value(x) for k, x in v.items()}
    return v
# every disguise the restorer turns back (each literal's and each fake's as it is, and as a
# URL holds it: `Zenith%20Labs`, `Zenith+Labs`), the flow's placeholders, and one never issued
DISGUISES = [*RULES.lit_reverse, *PLACEHOLDERS, *percent.in_urls(FAKE_DISGUISES, {})] + ["[EMAIL_9]"]  # _9: never issued
STRIPS = ["[[reply_to_current]]", "[[ reply_to:123 ]]", "[[reply_to:<", "[[", "["]

# Text made of prose, disguises, their prefixes, strip tags, and characters that need
# escaping in JSON (quotes, backslashes, newlines, non-ASCII, astral, lone surrogates).
_piece = st.one_of(
    st.sampled_from(DISGUISES),
    st.sampled_from(DISGUISES).map(lambda d: d[: max(1, len(d) // 2)]),
    st.sampled_from(STRIPS),
    st.sampled_from([" ", "the ", "n", "\n", '"', "\\", "\\n", "é", "😀", "\ud83d", "]", "[", ".", "cloud"]),
    st.text(alphabet="abcnova .[]_EMAIL1" + ("@ghpQ27" if FAKES else ""), max_size=6),
)
texts = st.lists(_piece, max_size=14).map("".join)


@st.composite
def splits(draw, s: str, max_cuts: int = 8) -> list[str]:
    """s cut into pieces at random points (empty pieces allowed)."""
    if not s:
        return [s]
    cuts = sorted(draw(st.lists(st.integers(0, len(s)), max_size=max_cuts)))
    out, prev = [], 0
    for c in cuts:
        out.append(s[prev:c])
        prev = c
    out.append(s[prev:])
    return out


@st.composite
def byte_splits(draw, b: bytes, max_cuts: int = 20) -> list[bytes]:
    if not b:
        return [b]
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(b) - 1)), max_size=max_cuts))))
    out, prev = [], 0
    for c in cuts:
        out.append(b[prev:c])
        prev = c
    out.append(b[prev:])
    return [p for p in out if p]


# JSON escapes of one character (`\u` is not one), and what the letter of one may begin
SHORT_ESCAPES = ["\\n", "\\t", '\\"', "\\\\", "\\/", "\\b", "\\f", "\\r"]
_ESC_LETTERS = 'nbfrt"/\\'


def _backslashes_before(k: int, word: str) -> str:
    """A run of k backslashes right before word, where the run's last one and the word's
    first letter make an escape when k is odd (`\\nova` is `\\n` and `ova`,
    `\\\\nova` a backslash and `nova`): one more where that would not be JSON."""
    if k % 2 and word[:1] not in _ESC_LETTERS:
        k += 1
    return "\\" * k + word


@st.composite
def short_escaped_json(draw, words: list[str]) -> str:
    """JSON text (a tool's arguments) whose keys and strings are made of words (disguises,
    their beginnings), plain text, short escapes and runs of 1-4 backslashes right before
    a word; now and then a `\\u` escape (of a character no disguise holds: one of a
    letter makes Chat's Python path parse the event, which counts no held event)."""
    piece = st.one_of(
        st.sampled_from(words),
        st.sampled_from(words).map(lambda w: w[: max(1, len(w) // 2)]),
        st.sampled_from([w.replace("/", "\\/") for w in words if "/" in w] or words),  # PHP writes `/` as `\\/`
        st.sampled_from(SHORT_ESCAPES),
        st.tuples(st.integers(1, 4), st.sampled_from(words)).map(lambda kw: _backslashes_before(*kw)),
        st.sampled_from([" ", "x", ".", "é", "n", "xn", " t", "\\u00e9"]),
    )
    body = st.lists(piece, max_size=8).map("".join)
    key, a, b = draw(body), draw(body), draw(body)
    return '{"' + key + '": "' + a + '", "q": ["' + b + '", 1.5], "k": "WINPATH"}'


def integral_spellings(n: int) -> st.SearchStrategy[str]:
    """JSON spellings of the integer n that every JSON reader reads as n (JSON has one
    number type: `0`, `0.0`, `0E0` are one number to JSON.parse and to the SDKs)."""
    forms = [str(n), f"{n}.0", f"{n}.000", f"{n}E0", f"{n}e+0", f"{n}.0E-0"]
    forms += ["-0", "-0.0", "0e5"] if n == 0 else [f"{n}0e-1", f"{n}00E-2"]
    return st.sampled_from(forms)


@st.composite
def respelled(draw, text: str, members: tuple[str, ...] = ("index",)) -> str:
    """JSON text with each integer value of the named members respelled at random
    (integral_spellings): a channel index the way any JSON writer may send it."""
    pattern = re.compile(r'("(?:' + "|".join(members) + r')"\s*:\s*)(\d+)(?![.eE\d])')
    return pattern.sub(lambda m: m.group(1) + draw(integral_spellings(int(m.group(2)))), text)


# -- answers asked for as JSON (structured outputs) with originals JSON cannot hold as they are

# literals' disguises (a disguise is printable ASCII: the same raw and JSON-escaped)
JSON_DISGUISES = ("ZQXA1", "ZQXB2", "ZQXC3")
# their originals: backslashes, quotes, control characters (each breaks a JSON answer restored as text)
json_originals = st.lists(st.text(st.sampled_from(list('ab /\\"\n\t\x01\x1fé')), min_size=1, max_size=5),
                          min_size=3, max_size=3, unique=True)  # fmt: skip


def literal_restorer(originals: list[str], output: int = 0) -> rules.Restorer:
    """A restorer of the literals originals -> JSON_DISGUISES (output: Restorer.output)."""
    doc = {"literals": dict(zip(originals, JSON_DISGUISES, strict=True))}
    return rules.Rules(mappings.from_dict(doc), None).restorer({}, output=output)


def json_answer(values: list[str] | tuple[str, ...]) -> dict:
    """A structured answer holding three values (disguises in what the model wrote,
    originals in what the client must parse)."""
    return {"owner": values[0], "path": f"at {values[1]} now", "tags": [values[2], "x"], "n": 1}
