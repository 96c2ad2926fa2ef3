"""wire/loose.py: JSON text that does not parse, read literal by literal as JSON text is."""

from __future__ import annotations

from disguiselib.wire import jsonspan, loose


def up(s: str) -> str:
    return loose.transform_loose(s, str.upper)


def test_literals_and_the_text_between_them_are_each_transformed() -> None:
    assert up('{"a": "b", 1') == '{"A": "B", 1'
    assert jsonspan.transform_loose is loose.transform_loose  # (read through jsonspan)


def test_an_escaped_literal_is_read_decoded_and_written_in_its_own_style() -> None:
    assert up('["M\\u00fcller"') == '["M\\u00dcLLER"'
    assert up('["Müller"') == '["MÜLLER"'


def test_an_unterminated_literal_is_read_up_to_its_end_and_a_cut_escape_kept() -> None:
    assert up('{"k": "abc') == '{"K": "ABC'
    assert up('{"k": "abc\\u00') == '{"K": "ABC\\u00'


def test_an_unchanged_literal_stays_as_written() -> None:
    s = '{"k": "\\u0061", '
    assert loose.transform_loose(s, lambda t: t) == s
