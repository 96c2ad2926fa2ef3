"""The top-level domains the e-mail validator accepts (rules/tlds.py)."""

from __future__ import annotations

from disguiselib.rules import validators
from disguiselib.rules.tlds import TLDS


def test_the_list_is_lower_case_single_labels_with_the_usual_and_idn_domains() -> None:
    assert {"com", "org", "net", "io", "de", "uk", "dev", "app", "email", "рф", "中国"} <= TLDS
    assert all(t == t.lower() and t and "." not in t and " " not in t for t in TLDS)
    assert len(TLDS) > 1000


def test_an_address_is_masked_only_under_a_real_domain() -> None:
    def ok(s: str) -> bool:
        return validators.email(s, 0, len(s))

    assert ok("bob@corp.example.com") and ok("ana@mail.example.de") and ok("x@例子.中国")
    assert not ok("logo@assets.png") and not ok("this@MainActivity.startActivity")
    assert ok("a@b.xn--p1ai")  # an IDN label: taken as a domain
