"""An upstream cut of a restored stream (mitm/cut.py). Through real mitmdump with the
official SDKs: tests/integration/test_anthropic.py (test_stream_cut_by_the_network_...),
test_google.py (test_network_cut_ends_with_the_error_event_...), test_bedrock.py."""

from __future__ import annotations

from mitmproxy.test import taddons, tflow

from disguiselib.mitm import cut


def test_the_final_call_never_gives_an_empty_piece() -> None:
    """An empty piece on HTTP/1.1 chunked is the end-of-body marker: it would dress the
    cut up as a clean end."""
    assert cut.final_pieces(lambda d: b"") == []
    assert cut.final_pieces(lambda d: []) == []
    assert cut.final_pieces(lambda d: [b"", b"event: error\n\n", b""]) == [b"event: error\n\n"]
    assert cut.final_pieces(lambda d: b"held") == [b"held"]
    calls: list[bytes] = []
    cut.final_pieces(lambda d: calls.append(d) or b"")  # type: ignore[func-returns-value]
    assert calls == [b""]  # the final call, as mitmproxy makes it at a clean end


def test_without_a_live_connection_nothing_changes() -> None:
    """A flow with no HTTP stream in mitmproxy's layers (a replay, a unit test): left as
    it is, never an exception into the hook."""
    f = tflow.tflow(resp=True)
    with taddons.context() as tctx:
        try:
            cut.deliver_on_cut(f)
        finally:
            tctx.master.event_loop.close()
