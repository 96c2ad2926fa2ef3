"""received.Received: a body handed over by its only holder, let go once decoded."""

from __future__ import annotations

import pytest

from disguiselib.base.received import Received, as_received


def test_decoding_lets_the_bytes_go_and_they_are_made_again_only_when_asked() -> None:
    buf = bytearray("héllo".encode())
    r = Received(buf)
    assert r.text() == "héllo"
    assert r._raw is None  # let go once decoded
    again = r.bytes()
    assert again == "héllo".encode() and type(again) is bytes
    assert r._text is None and r.bytes() is again  # held, the text no longer


def test_the_gathered_buffer_becomes_bytes_once() -> None:
    r = Received(bytearray(b"{}"))
    b = r.bytes()
    assert type(b) is bytes and b == b"{}" and r.bytes() is b


def test_a_body_that_does_not_decode_keeps_its_bytes() -> None:
    r = Received(b"\xff{}")
    with pytest.raises(UnicodeDecodeError):
        r.text()
    assert r.bytes() == b"\xff{}"


def test_released_is_gone_and_as_received_reads_either() -> None:
    r = Received(b"x")
    r.text()
    r.release()
    assert r.bytes() is None and as_received(r) is None
    assert as_received(b"raw") == b"raw"
