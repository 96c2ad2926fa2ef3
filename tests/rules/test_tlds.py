"""The top-level domains the e-mail validator accepts (rules/tlds.py)."""

from __future__ import annotations

import sys

from disguiselib.rules import tlds, validators


def test_the_list_is_lower_case_single_labels_with_the_usual_and_idn_domains() -> None:
    every = tlds.names()
    assert {"com", "org", "net", "io", "de", "uk", "dev", "app", "email", "рф", "中国"} <= set(every)
    assert all(t == t.lower() and t and "." not in t and not any(c.isspace() for c in t) for t in every)
    assert len(every) > 1000 and len(set(every)) == len(every)


def test_known_is_membership_of_one_whole_name() -> None:
    every = tlds.names()
    assert all(tlds.known(t) for t in every)
    # never a part of a name, two names, an empty one, or a name with a space beside it
    assert not any(map(tlds.known, ("", " ", "comm", "xcom", "com org", "com ", " com", "aaa aarp", "xyz\n", "c\x00m")))
    assert not tlds.known("example") and not tlds.known("png")


def test_the_names_are_held_as_one_small_string() -> None:
    # (a frozenset of them held ~210 KiB in every process)
    held = sum(sys.getsizeof(v) for k, v in vars(tlds).items() if not k.startswith("__"))
    assert held < 40_000


def test_an_address_is_masked_only_under_a_real_domain() -> None:
    def ok(s: str) -> bool:
        return validators.email(s, 0, len(s))

    assert ok("bob@corp.example.com") and ok("ana@mail.example.de") and ok("x@例子.中国")
    assert not ok("logo@assets.png") and not ok("this@MainActivity.startActivity")
    assert ok("a@b.xn--p1ai")  # an IDN label: taken as a domain
