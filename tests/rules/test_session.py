"""A request's session: placeholders numbered by first appearance around the client's
own, and fakes that never give two originals one disguise."""

from __future__ import annotations

from disguiselib.config import build_config
from disguiselib.rules.session import Session

KEY = b"0123456789abcdef0123456789abcdef"
RULES = build_config([], True, [], KEY).rules


def test_placeholders_number_around_reserved_ones() -> None:
    s = Session(frozenset({"[EMAIL_1]"}))
    assert s.placeholder("EMAIL", "a@b.io") == "[EMAIL_2]"
    assert s.placeholder("EMAIL", "c@d.io") == "[EMAIL_3]"
    assert s.placeholder("EMAIL", "a@b.io") == "[EMAIL_2]" and s.fakes == 0


def test_two_originals_never_share_a_fake() -> None:
    class Clash:  # every original's first candidate is the same string
        key = KEY

        def __init__(self) -> None:
            self.real = RULES.faker

        def make(self, rule, original, attempt=0):
            return "zz-shared-fake-00" if attempt == 0 else self.real.make(rule, original, attempt)

        def clean(self, f):
            return True

    s = Session()
    a = s.placeholder("AWS_ACCESS_KEY", "AKIAAAAAAAAAAAAAAAAA", Clash())  # type: ignore[arg-type]
    b = s.placeholder("AWS_ACCESS_KEY", "AKIABBBBBBBBBBBBBBBB", Clash())  # type: ignore[arg-type]
    assert a == "zz-shared-fake-00" and b != a and s.placeholders[b] == "AKIABBBBBBBBBBBBBBBB"


def test_a_fake_a_rule_takes_part_of_is_never_issued() -> None:
    """Rules._fake_clean: a candidate in which a rule finds an original (here: a real
    AWS key id inside it) is refused, and the original keeps its placeholder."""

    class Bad:
        key = KEY

        def make(self, rule, original, attempt=0):
            return "x-AKIAZ3MPLQW8RT5YUX2B-x"

        clean = staticmethod(RULES._fake_clean)

    assert not RULES._fake_clean("x-AKIAZ3MPLQW8RT5YUX2B-x")
    assert RULES._fake_clean("bob7q@mail.example")
    s = Session()
    assert s.placeholder("EMAIL", "a@b.io", Bad()) == "[EMAIL_1]" and s.fakes == 0  # type: ignore[arg-type]


def test_literals_counted_at_once_count_as_one_by_one() -> None:
    """Rules.mask_spans counts a text's literals at once (Session.count_literals): the
    same counts, total and originals (the replay report lists them) as count() each."""
    from disguiselib.rules.session import LITERALS, Session

    one, many = Session(), Session()
    originals = ["Acme Corp", "Jane Roe", "Acme Corp"]
    for o in originals:
        one.count(LITERALS, o)
    one.count("EMAIL", "a@b.example")
    many.count_literals(originals)
    many.count("EMAIL", "a@b.example")
    assert (one.masked, one.counts, one.literals) == (many.masked, many.counts, many.literals) == (
        4, {LITERALS: 3, "EMAIL": 1}, {"Acme Corp", "Jane Roe"})


def test_a_keyed_session_numbers_by_the_key_in_nine_digits() -> None:
    """A request continuing stored state (base/prompt.numbers_key): each original's
    number is a keyed function of it, nine digits (no request numbered from 1 reaches
    them); the same key gives the same number, another key another."""
    from disguiselib.rules.session import KEYED_FIRST, keyed_number

    a, b = Session(keyed=b"k" * 32), Session(keyed=b"k" * 32)
    ph = a.placeholder("EMAIL", "a@b.io")
    assert ph == b.placeholder("EMAIL", "a@b.io") == f"[EMAIL_{keyed_number(b'k' * 32, 'EMAIL', 'a@b.io')}]"
    assert len(ph) == len("[EMAIL_]") + 9 and int(ph[7:-1]) >= KEYED_FIRST
    assert Session(keyed=b"j" * 32).placeholder("EMAIL", "a@b.io") != ph
    assert a.placeholder("EMAIL", "c@d.io") != ph and a.placeholder("EMAIL", "a@b.io") == ph
    assert a.after().keyed == b"k" * 32 and Session().after(keyed=b"j" * 32).keyed == b"j" * 32


def test_a_keyed_number_taken_goes_to_the_next() -> None:
    """Two originals of one number, or a number the client's text holds: the next, and
    after the last nine-digit number the first."""
    from disguiselib.rules import session as sm

    key = b"k" * 32
    n = sm.keyed_number(key, "EMAIL", "a@b.io")
    s = Session(frozenset({f"[EMAIL_{n}]"}), keyed=key)
    assert s.placeholder("EMAIL", "a@b.io") == f"[EMAIL_{n + 1 if n + 1 < 10**9 else sm.KEYED_FIRST}]"
    last = f"[EMAIL_{10**9 - 1}]"
    t = Session(keyed=key)
    t.placeholders[last] = "x@y.io"  # as if another original had taken the last number

    def at_last(k: bytes, name: str, original: str) -> int:
        return 10**9 - 1

    real, sm.keyed_number = sm.keyed_number, at_last
    try:
        assert t.placeholder("EMAIL", "a@b.io") == f"[EMAIL_{sm.KEYED_FIRST}]"
    finally:
        sm.keyed_number = real


def test_a_keyed_number_is_fixed_by_the_key_the_rule_and_the_original() -> None:
    """Known answers: the same key gives an original the same number in every version
    and instance (an original with a lone surrogate too)."""
    from disguiselib.rules.session import keyed_number

    assert keyed_number(b"k" * 32, "EMAIL", "a@b.io") == 914705056
    assert keyed_number(b"k" * 32, "EMAIL", "x\ud800") == 369146904
    assert keyed_number(b"k" * 32, "PHONE", "a@b.io") != 914705056


def test_a_copy_is_the_session_as_it_stands_and_apart_from_it() -> None:
    s = Session(frozenset({"[EMAIL_7]"}), b"k" * 32, 1)
    s.placeholder("EMAIL", "bob@corp.example.com")
    s.count("EMAIL", "bob@corp.example.com")
    s.count_literals(["Acme Corp"])
    s.json_out, s.cited, s.documents = True, [(3, "edits")], {0: "doc"}
    c = s.copy()
    fields = ("placeholders", "_by_key", "_count", "masked", "counts", "literals", "fakes", "reserved", "keyed",
              "copied", "json_out", "cited", "documents")  # fmt: skip
    assert all(getattr(c, f) == getattr(s, f) for f in fields)
    c.placeholder("EMAIL", "x@y.io")
    c.count_literals(["Acme Corp"])
    c.cited.append((9, "more"))
    assert len(s.placeholders) == 1 and s.masked == 2 and s.cited == [(3, "edits")]



def test_back_to_sets_every_field_to_the_earlier_copy_in_place() -> None:
    """back_to: the session as its earlier copy stood, every field, the copied-th masking
    again, its placeholders the very dict a realtime connection's restorer reads."""
    s = Session(frozenset({"[EMAIL_7]"}), b"k" * 32)
    s.placeholder("EMAIL", "bob@corp.example.com")
    s.count("EMAIL", "bob@corp.example.com")
    earlier, held = s.copy(), s.placeholders
    s.placeholder("EMAIL", "x@y.io")
    s.count_literals(["Acme Corp"])
    s.reserved, s.keyed, s.json_out, s.cited, s.documents = frozenset(), None, True, [(1, "e")], {0: "d"}
    assert s.back_to(earlier, 2) is s and s.placeholders is held and s.copied == 2
    fields = ("placeholders", "_by_key", "_count", "masked", "counts", "literals", "fakes", "reserved", "keyed",
              "json_out", "cited", "documents")  # fmt: skip
    assert all(getattr(s, f) == getattr(earlier, f) for f in fields)
    assert list(s.placeholders.items()) == list(earlier.placeholders.items())
    s.placeholder("EMAIL", "z@y.io")  # (going on from there: the next number, earlier untouched)
    assert s.placeholders is held and len(held) == 2 and len(earlier.placeholders) == 1
