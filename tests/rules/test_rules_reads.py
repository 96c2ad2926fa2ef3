"""rules/rules.py: what find() reads of a text besides the engines' passes (issue 29: each
a pass over every text masking reads), and that leaving it out changes no answer."""

from __future__ import annotations

import pytest

from disguiselib.rules import rules as rules_mod
from disguiselib.rules.found import Found
from disguiselib.rules.rules import Rules, Session
from disguiselib.wire.text import utf8


def test_a_text_that_is_not_ascii_is_not_decoded_whole_for_the_options(
    acme_rules: Rules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pattern with options (EMAIL's validator) reads a candidate in the text where its
    offsets are the bytes' (ASCII); in a text that is not, a decode of the whole of it
    was made and dropped. Now none is made, and the spans are the same."""
    text = "Grüße an bob@corp-mail.com und Acme Corp " + "é" * 50
    want = Rules(acme_rules.mappings).find(text)
    decoded: list[bytes] = []
    real = rules_mod.decode
    monkeypatch.setattr(rules_mod, "decode", lambda b: decoded.append(bytes(b)) or real(b))
    acme_rules.found.clear()
    got = acme_rules.find(text)
    assert got == want and [text[a:b] for _, a, b in got] == ["bob@corp-mail.com", "Acme Corp"]
    assert utf8(text) not in decoded


def test_masking_reads_what_it_made_without_a_digest_unless_something_is_found(
    acme_rules: Rules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The masker's second look at what it made (rules/settle.py) does not look that text
    up by its digest: a clean one is remembered as itself (and the leak guard's find()
    is answered so), a digest is taken only to remember spans found in it."""
    digested: list[bytes] = []
    real = Found.digest
    monkeypatch.setattr(Found, "digest", staticmethod(lambda b: digested.append(bytes(b)) or real(b)))
    text = "write to bob@corp-mail.com about Acme Corp, please " * 4
    acme_rules.found.clear()
    session = Session()
    out = acme_rules.mask(text, session)
    assert "bob@corp-mail.com" not in out and "Acme Corp" not in out
    assert utf8(out) not in digested and acme_rules.found.clean(out)
    assert acme_rules.find(out) == []  # (the guard's look: remembered)
    # spans found in a text made just now: remembered by its digest, as before
    made = "api_key = 'q8Zr2LmXk9Vb4NtYw7Hd'  "
    digested.clear()
    spans = acme_rules.find(made, None, new=True)
    assert spans and utf8(made) in digested and acme_rules.found.get(real(utf8(made))) == tuple(spans)
