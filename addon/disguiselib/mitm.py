"""The mitmproxy adapter: options, hooks and the stream callable. Thin on purpose:
everything that turns bytes into bytes lives in the sans-IO core."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mitmproxy import ctx, exceptions, http

from . import mappings
from .capture import Inspector
from .decoding import Decoder, decoder_for
from .engine import Api, recognise
from .errors import DisguiseError, MappingError, MaskError, StreamError
from .providers.base import SSEStream, mask_body, restore_body
from .rules import Restorer, Rules

log = logging.getLogger("disguise")

DEFAULT_MAPPINGS = str(Path(__file__).resolve().parents[2] / "mappings")


@dataclass
class _FlowState:
    api: Api
    restorer: Restorer
    stream: SSEStream | None = None
    encoding: str = ""


def _log_internal(what: str, e: Exception) -> None:
    """A bug's exception text can hold an original (a KeyError's key): at the default
    level only its type is logged; the traceback goes to debug."""
    log.error("disguise: %s: internal error (%s)", what, type(e).__name__)
    log.debug("disguise: %s", what, exc_info=True)


class StreamCall:
    """mitmproxy's stream callable for one SSE response.

    Never raises (an exception here would drop a chunk or hang the client), never
    returns b"" mid-stream (on HTTP/1.1 chunked that is the end-of-body marker): on a
    failure the client gets an explicit error event and nothing more.
    """

    def __init__(self, stream: SSEStream, decoder: Decoder | None) -> None:
        self.stream = stream
        self.decoder = decoder
        self.dead = False

    def __call__(self, data: bytes) -> bytes | list[bytes]:
        if self.dead:
            return []
        try:
            if data:
                if self.decoder is not None:
                    data = self.decoder.decompress(data)
                out = self.stream.feed(data)
            else:
                if self.stream.finished:
                    return []  # the final call can come twice (mitmproxy 11, HTTP/2)
                tail = self.decoder.flush() if self.decoder is not None else b""
                out = (self.stream.feed(tail) if tail else b"") + self.stream.flush()
        except Exception as e:  # noqa: BLE001 - every failure must reach the client
            self.dead = True
            reason = str(e) if isinstance(e, DisguiseError) else type(e).__name__
            log.error("disguise: stream could not be reversed: %s", reason)
            return [self.stream.error_event(f"disguise: stream could not be reversed: {reason}")]
        return [out] if out else []


class _Refused:
    """A stream that cannot be decoded: the client gets one error event, nothing else."""

    dead = True  # inspect: failed closed (read by capture.Tee)

    def __init__(self, err: bytes) -> None:
        self.err: bytes | None = err

    def __call__(self, data: bytes) -> list[bytes]:
        err, self.err = self.err, None
        return [err] if err else []


class Disguise:
    def __init__(self) -> None:
        self.rules: Rules | None = None
        self._flows: dict[str, _FlowState] = {}
        self.inspect = Inspector(self)  # inspect: both sides, summaries, replay (an addon too)

    def load(self, loader) -> None:
        loader.add_option(
            "disguise_mappings", str, DEFAULT_MAPPINGS,
            "Mapping file (YAML) or folder of *.yaml/*.yml files.",
        )  # fmt: skip
        loader.add_option(
            "disguise_hosts", Sequence[str], [],
            "Only mask requests to these hosts (empty: every host).",
        )  # fmt: skip
        loader.add_option(
            "disguise_fail_open", bool, False,
            "Forward a request that cannot be masked unchanged instead of refusing it.",
        )  # fmt: skip

    def configure(self, updated: set[str]) -> None:
        if "disguise_mappings" in updated or self.rules is None:
            path = ctx.options.disguise_mappings
            try:
                self.rules = Rules(mappings.load(path))
            except MappingError as e:
                raise exceptions.OptionsError(f"disguise_mappings: {e}") from e
            except Exception as e:  # a rule set that compiles alone but not combined
                raise exceptions.OptionsError(f"disguise_mappings: {path}: {e}") from e
            ms = self.rules.mappings
            log.info(
                "disguise: %d literals, %d patterns, %d strip rules from %s",
                len(ms.literals), len(ms.patterns), len(ms.strips), path,
            )  # fmt: skip

    # -- requests ------------------------------------------------------------------------

    def _api(self, flow: http.HTTPFlow) -> Api | None:
        req = flow.request
        hosts = ctx.options.disguise_hosts
        if hosts and req.pretty_host not in hosts and req.host not in hosts:
            return None
        return recognise(req.method, req.path)

    def request(self, flow: http.HTTPFlow) -> None:
        # inspect: client replay puts the client's body back; offline runs are handled there
        if self.inspect.before_request(flow, self.rules, self._api(flow)):
            return
        if flow.response is not None or self.rules is None:
            return
        api = self._api(flow)
        if api is None:
            return
        try:
            try:
                raw = flow.request.get_content(strict=True)
            except ValueError as e:  # its text quotes the body's first bytes: not used
                enc = flow.request.headers.get("content-encoding", "")
                raise MaskError(f"cannot decode the request body (content-encoding {enc!r})") from e
            if raw is None:
                raise MaskError("request has no body")
            masked, session = mask_body(raw, api.request_rule, self.rules)
        except MaskError as e:
            self._refuse(flow, api, e)
            return
        except Exception as e:  # noqa: BLE001 - a bug must not let an original through
            _log_internal("masking failed", e)
            self._refuse(flow, api, MaskError(f"internal error ({type(e).__name__})"))
            return
        if masked is not raw:
            flow.request.content = masked
        # Ask for an uncompressed answer: the stream callable sees bytes before
        # content decoding (decoders below handle an upstream that ignores this).
        flow.request.anticomp()
        self._flows[flow.id] = _FlowState(api, self.rules.restorer(session.placeholders))
        flow.metadata["disguise"] = {
            "api": api.name,
            "masked": session.masked,
            "placeholders": len(session.placeholders),
        }
        flow.comment = f"disguise: {api.name}: {session.masked} masked"
        self.inspect.masked(flow, api, raw, session)  # inspect: keep the client's side, per-rule counts

    def _refuse(self, flow: http.HTTPFlow, api: Api, e: Exception) -> None:
        msg = f"disguise: request not masked: {e}"
        if ctx.options.disguise_fail_open:
            log.warning("%s (forwarded unchanged: disguise_fail_open)", msg)
            self.inspect.refused(flow, api, str(e), forwarded=True)  # inspect
            return
        log.warning("%s (refused)", msg)
        flow.response = http.Response.make(
            400, api.error_body(msg), {"content-type": "application/json", "x-disguise": "refused"}
        )
        flow.comment = msg
        self.inspect.refused(flow, api, str(e))  # inspect

    # -- responses -----------------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        st = self._flows.get(flow.id)
        resp = flow.response
        if st is None or resp is None:
            return
        self.inspect.upstream_headers(flow)  # inspect: before any header changes
        if flow.is_replay == "response":
            # server replay: the body is whole already and mitmproxy never calls a stream
            # callable for a response set in the request hook; the response hook restores it
            return
        if "text/event-stream" not in resp.headers.get("content-type", "").lower():
            return
        stream = st.api.stream(st.restorer)
        st.stream = stream
        st.encoding = resp.headers.get("content-encoding", "")
        self._fix_headers(resp)
        try:
            decoder = decoder_for(st.encoding)
        except StreamError as e:
            resp.stream = self.inspect.tee(flow, _Refused(stream.error_event(f"disguise: {e}")))  # inspect
            return
        resp.stream = self.inspect.tee(flow, StreamCall(stream, decoder))  # inspect: keeps both sides

    @staticmethod
    def _fix_headers(resp: http.Response) -> None:
        resp.headers.pop("content-encoding", None)
        resp.headers.pop("content-length", None)
        if resp.http_version.startswith("HTTP/1"):
            resp.headers["transfer-encoding"] = "chunked"

    def response(self, flow: http.HTTPFlow) -> None:
        # inspect: keep the upstream side first, write the summary last
        st = self._flows.get(flow.id)
        if st is not None and flow.response is not None:
            self.inspect.before_restore(flow)
        self._restore(flow)
        if st is not None:
            self.inspect.finish(flow, st.api, st.restorer, st.stream)

    def _restore(self, flow: http.HTTPFlow) -> None:
        st = self._flows.pop(flow.id, None)
        resp = flow.response
        if st is None or resp is None:
            return
        if st.stream is not None and resp.stream:
            self._note(flow, st)
            return
        try:
            body = resp.get_content(strict=True) or b""
        except ValueError:  # its text quotes the body's first bytes: not used
            enc = resp.headers.pop("content-encoding", "")
            resp.status_code = 502
            resp.set_content(
                st.api.error_body(f"disguise: response not reversed: cannot decode content-encoding {enc!r}")
            )
            self.inspect.failed(flow, f"response not reversed: cannot decode content-encoding {enc!r}")  # inspect
            return
        try:
            if "text/event-stream" in resp.headers.get("content-type", "").lower():
                stream = st.api.stream(st.restorer)
                st.stream = stream
                try:
                    new = stream.whole(body)
                except StreamError as e:
                    new = stream.error_event(f"disguise: {e}")
                    self.inspect.failed(flow, f"stream could not be reversed: {e}")  # inspect
            else:
                new = restore_body(body, st.api.response_rule, st.restorer)
        except Exception as e:  # noqa: BLE001 - never hand the client an unreversed body
            _log_internal("response reversal failed", e)
            resp.status_code = 502
            resp.headers["content-type"] = "application/json"
            resp.content = st.api.error_body(
                f"disguise: response not reversed: internal error ({type(e).__name__})"
            )
            self.inspect.failed(flow, f"response not reversed: internal error ({type(e).__name__})")  # inspect
            return
        if new is not body:
            resp.content = new
        self._note(flow, st)

    def _note(self, flow: http.HTTPFlow, st: _FlowState) -> None:
        meta = flow.metadata.setdefault("disguise", {})
        meta["restored"] = st.restorer.restored
        meta["stripped"] = st.restorer.stripped
        if st.stream is not None:
            meta["events"] = st.stream.events_in
            meta["events_changed"] = st.stream.events_changed
        flow.comment = f"{flow.comment}, {st.restorer.restored} restored"

    def error(self, flow: http.HTTPFlow) -> None:
        st = self._flows.pop(flow.id, None)
        if st is not None:  # inspect: the summary, whatever ended the flow
            self.inspect.finish(flow, st.api, st.restorer, st.stream, error=True)
