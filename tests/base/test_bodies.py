"""Bodies read the way their receiver reads them (base/bodies.py), cross-checked
against the standard library's own multipart parser."""

from __future__ import annotations

import email.parser
import email.policy
import json

from hypothesis import given
from hypothesis import strategies as st

from disguiselib.base.bodies import boundary, readings, split_multipart


def form(parts: list[tuple[str, bytes, str]], bound: str = "XyZ") -> bytes:
    out = b""
    for name, data, ctype in parts:
        out += f"--{bound}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n".encode()
        if ctype:
            out += f"Content-Type: {ctype}\r\n".encode()
        out += b"\r\n" + data + b"\r\n"
    return out + f"--{bound}--\r\n".encode()


@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.binary(max_size=60)), min_size=1,
                max_size=5))  # fmt: skip
def test_split_multipart_agrees_with_the_email_parser(parts: list[tuple[str, bytes]]) -> None:
    bound = "BoUnDaRy0123456789"
    parts = [(n, d) for n, d in parts if bound.encode() not in d]
    if not parts:
        return
    body = form([(n, d, "application/octet-stream") for n, d in parts], bound)
    got = split_multipart(body, bound.encode())
    assert got is not None
    assert [(p.name, body[p.body_start : p.body_end]) for p in got] == parts
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: multipart/form-data; boundary=" + bound.encode() + b"\r\n\r\n" + body
    )
    assert [p.get_payload(decode=True) for p in msg.iter_parts()] == [d for _, d in parts]


def test_readings() -> None:
    assert boundary("multipart/form-data; boundary=\"a b\"") == b"a b"
    body = form([("purpose", b"fine-tune", ""), ("file", "\ufeffhi".encode("utf-16-le"), "text/plain; charset=utf-16"),
                 ("meta", b'{"k": "M\\u00fcller"}', "application/json")])  # fmt: skip
    rs = list(readings(body, "multipart/form-data; boundary=XyZ"))
    texts = {r.where: (r.text, r.doc) for r in rs}
    assert texts["body part 'file'"][0] == "hi"
    assert texts["body part 'meta'"][1] == {"k": "Müller"}
    assert "body (as sent)" in texts  # the whole body, headers and all, as well
    rs = list(readings(b"a=1&b=M%C3%BCller+GmbH", "application/x-www-form-urlencoded"))
    assert ("body form field 2", "Müller GmbH") in [(r.where, r.text) for r in rs]
    rs = list(readings(b'{"a": 1}\n{"b": "x\\u00e9"}\n', "application/jsonl"))
    assert [r.doc for r in rs if r.doc is not None] == [{"a": "1"}, {"b": "xé"}]


def _one_part(disposition: str) -> bytes:
    return b"--XyZ\r\nContent-Disposition: " + disposition.encode() + b"\r\n\r\nhello\r\n--XyZ--\r\n"


def test_a_part_headers_parameters_are_read_as_their_receiver_decodes_them() -> None:
    """`filename*` (RFC 2231: charset, language, percent-escapes; continued in pieces), an
    encoded word (RFC 2047) and percent-escapes: the name Python's email package gives a
    receiver. Only the body as sent held the header, written so: `Acme%20Corp` passed."""
    for disposition in ("form-data; name=\"file\"; filename*=UTF-8''Acme%20Corp.txt",
                        "form-data; name=\"file\"; filename*=iso-8859-1'en'Acme%20Corp.txt",
                        "form-data; name=\"file\"; filename*0*=UTF-8''Acme%20; filename*1*=Corp.txt",
                        'form-data; name="file"; filename="=?UTF-8?B?QWNtZSBDb3JwLnR4dA==?="',
                        'form-data; name="file"; filename="Acme%20Corp.txt"',
                        'form-data; filename="Acme%20Corp.txt"; name="file"'):  # the first parameter too  # fmt: skip
        got = [(r.where, r.text) for r in readings(_one_part(disposition), "multipart/form-data; boundary=XyZ")]
        assert ("body part 'file' header 'content-disposition' parameter 'filename'", "Acme Corp.txt") in got, got
    got = [r.text for r in readings(_one_part("form-data; name=\"f\"; filename*=bogus''%ZZ"), "multipart/form-data; boundary=XyZ")]
    assert "%ZZ" in got  # a charset no codec knows: as it is, never an exception


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40),
       st.sampled_from(["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]))  # fmt: skip
def test_a_wide_json_body_without_a_byte_order_mark_is_read_as_json_loads_reads_it(note: str, codec: str) -> None:
    """JSON in UTF-16/32 with neither a BOM nor a charset: Python's json.loads(bytes) reads
    it (json.detect_encoding), so the readings hold that document too, whatever its text."""
    doc = {"note": note}
    body = json.dumps(doc, ensure_ascii=False).encode(codec)
    assert json.loads(body) == doc  # a receiver reads it so
    got = [r for r in readings(body, "application/json") if r.doc is not None]
    assert [(r.where, r.doc) for r in got] == [(f"body (read as {codec})", doc)]


def test_a_wide_reading_is_added_only_where_nothing_else_says_how_to_read() -> None:
    text = "notes: Acme Corp"
    # a byte-order mark or a charset already says how: one reading of the text, not two
    for body, ctype in ((text.encode("utf-16"), "text/plain"), (text.encode("utf-16-le"), "text/plain; charset=utf-16-le"),
                        (text.encode("utf-32"), "")):  # fmt: skip
        assert [r.text for r in readings(body, ctype)].count(text) == 1, (body, ctype)
        assert not any("read as" in r.where for r in readings(body, ctype))
    assert any(r.text == text and r.where == "body (read as utf-16-le)" for r in readings(text.encode("utf-16-le")))
    # bytes that are not text in such a codec add nothing (a binary upload's first bytes)
    for body in (b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)), b"\x1f\x8b\x08\x00rest", b"plain"):
        assert not any("read as" in r.where for r in readings(body, "application/octet-stream"))


def _ld(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def _frame(msg: bytes, flag: int = 0) -> bytes:
    return bytes([flag]) + len(msg).to_bytes(4, "big") + msg


def test_a_grpc_body_is_read_message_by_message_each_string_field_on_its_own() -> None:
    """A Vertex AI GenerateContentRequest (model = 5, contents = 2: parts = 2: text = 1),
    framed, compressed, in base64: each string field is read on its own line, as its
    server reads it, beside the body as sent; one that holds JSON text as a document too."""
    import base64
    import gzip

    msg = _ld(5, b"projects/p/models/m") + _ld(2, _ld(1, b"user") + _ld(2, _ld(1, b"hi Acme Corp")))
    for body, ctype in ((_frame(msg), "application/grpc"), (_frame(gzip.compress(msg), 1), "application/grpc+proto"),
                        (base64.b64encode(_frame(b"")) + base64.b64encode(_frame(msg)), "application/grpc-web-text"),
                        (msg, "application/x-protobuf")):  # fmt: skip
        got = {r.where: r.text for r in readings(body, ctype)}
        n = 2 if ctype.endswith("-text") else 1
        at = f"body message {n}" if "grpc" in ctype else "body"
        fields = got[f"{at} (string fields)"].split("\n")  # (one text, a field a line: cheaper than a reading each)
        assert "hi Acme Corp" in fields and "projects/p/models/m" in fields and "user" in fields, got
        assert "body (as sent)" in got
    json_msg = b'{"contents": [{"parts": [{"text": "hi"}]}]}'  # application/grpc+json: JSON messages
    docs = [r.doc for r in readings(_frame(json_msg), "application/grpc+json") if r.doc is not None]
    assert docs == [{"contents": [{"parts": [{"text": "hi"}]}]}]
    docs = [(r.where, r.doc) for r in readings(_frame(_ld(3, b'{"a": "b"}')), "application/grpc") if r.doc is not None]
    assert docs == [("body message 1 field 3", {"a": "b"})]


def test_what_a_grpc_server_reads_and_this_cannot_is_a_reading_that_says_so() -> None:
    for body, why in ((_frame(b"\xff\x06\x00\x00sNaPpY", 1), "coding disguise does not decode"),
                      (_frame(b"abc")[:-1], "ends inside a gRPC message")):  # fmt: skip
        got = list(readings(body, "application/grpc"))
        assert [r.where for r in got if r.unread] == ["body"] and why in next(r.unread for r in got if r.unread)
    assert not any(r.unread for r in readings(b"not framed at all", "application/json"))


def test_a_body_with_several_content_types_is_read_as_each() -> None:
    """Content-Type twice (joined, as mitmproxy's Headers.get joins them), or one that
    lists several: grpc-go takes the one that says application/grpc wherever it is. The
    whole is read as well (an unquoted comma in a boundary)."""
    import gzip

    zipped = gzip.compress(_ld(1, b"hi Acme Corp"))
    body = _frame(zipped, 1)
    got = [r.text for r in readings(body, "text/plain, application/grpc")]
    assert any("hi Acme Corp" in t for t in got)
    part = b"--a,b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\nQWNtZSBDb3Jw\r\n--a,b--\r\n"
    assert "Acme Corp" in [r.text for r in readings(part, "multipart/mixed; boundary=a,b")]
    assert "Acme Corp" in [r.text for r in readings(part, 'multipart/mixed; boundary="a,b"')]


def test_a_json_body_that_reads_otherwise_in_its_declared_charset() -> None:
    """Probe R: aiohttp's request.json() decodes by the Content-Type's charset; under
    `charset=utf-7` the ASCII JSON `"+AEE-cme Corp"` is "Acme Corp", which the masker (UTF-8)
    never saw."""
    from disguiselib.base.bodies import reads_otherwise

    body = b'{"content": "Tell +AEE-cme Corp"}'
    assert body.decode("utf-7") == '{"content": "Tell Acme Corp"}'
    assert "charset=utf-7, in which its body reads otherwise" in (reads_otherwise(body, "application/json; charset=UTF-7") or "")
    for ctype in ("application/json", "application/json; charset=utf-8", 'application/json; charset="UTF8"',
                  "application/json; charset=iso-8859-1", "application/json; charset=us-ascii"):  # fmt: skip
        assert reads_otherwise(body, ctype) is None, ctype  # (ASCII reads the same in these)
    assert reads_otherwise("Renée".encode(), "application/json; charset=ascii") is None  # (refused by such a receiver)
    assert reads_otherwise("Renée".encode(), "application/json; charset=latin-1") is not None  # "RenÃ©e"
    for ctype in ("application/json; charset=rot13", "application/json; charset=acme-corp"):
        assert "does not know as a text encoding" in (reads_otherwise(body, ctype) or ""), ctype


def test_a_body_read_as_utf8_whatever_it_holds_is_not_compared() -> None:
    """utf8_read: no charset, or UTF-8's by any name: the masker reads the body as its
    receiver does, and pipeline makes no copy of a received body to compare it."""
    from disguiselib.base.bodies import utf8_read

    for ctype in ("application/json", "application/json; charset=utf-8", "application/json; charset=UTF8",
                  'application/json; charset="utf_8"'):  # fmt: skip
        assert utf8_read(ctype), ctype
    for ctype in ("application/json; charset=utf-7", "application/json; charset=latin-1",
                  "application/json; charset=no-such-thing"):  # fmt: skip
        assert not utf8_read(ctype), ctype
