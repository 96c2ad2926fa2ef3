"""disguise_fakes: each generator makes a valid value of its kind; fakes are keyed and
deterministic; a request's session never gives two originals one fake nor issues text
the client sent; the restorer and its windows read fakes back exactly however the text
is cut; the leak guard knows a request's fakes are no originals."""

from __future__ import annotations

import ipaddress
import json
import os
import stat

import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disguiselib import leakguard
from disguiselib.apis.registry import recognise
from disguiselib.base import masking
from disguiselib.base.holdback import Window
from disguiselib.base.masking import mask_body
from disguiselib.config import build_config
from disguiselib.errors import MaskError
from disguiselib.rules import fakes, validators
from disguiselib.rules.knowing import of_session
from disguiselib.rules.rules import Session
from strategies import splits

KEY = b"0123456789abcdef0123456789abcdef"
CFG = build_config([], True, [], KEY)
RULES = CFG.rules
PLAIN = build_config([], True, []).rules

AWS = "AKIAIOSFODNN7EXAMPL2"  # not AWS's documented example: the rule keeps that one
EMAIL = "alice.smith@acme-corp.io"


def fake(rule: str, original: str, key: bytes = KEY) -> str:
    r = RULES if key == KEY else build_config([], True, [], key).rules
    s = Session()
    out = r.mask(original, s)
    assert s.fakes == 1, (rule, out)
    assert s.counts == {rule: 1}
    return out


def test_email_at_a_reserved_domain() -> None:
    f = fake("EMAIL", EMAIL)
    assert f != EMAIL and f.endswith(".example") and "@" in f
    assert not validators.email(f, 0, len(f))  # no e-mail rule takes it for an address


@pytest.mark.parametrize("number", ["+1 415 555 2671", "(415) 555-2671", "+44 20 7946 0018", "+49 30 901820"])
def test_phone_same_region_same_layout(number: str) -> None:
    text = f"call me at {number}"
    f = fake("PHONE" if number.startswith("+") else "PHONE_NATIONAL", text)[len("call me at ") :]
    assert [c.isdigit() for c in f] == [c.isdigit() for c in number]  # the same layout
    region = None if number.startswith("+") else "US"
    a, b = phonenumbers.parse(number, region), phonenumbers.parse(f, region)
    assert a.country_code == b.country_code
    assert phonenumbers.region_code_for_number(a) == phonenumbers.region_code_for_number(b)
    if a.country_code == 1:  # NANP: 555-0100..0199, fictional
        assert phonenumbers.national_significant_number(b)[3:8] == "55501"


@pytest.mark.parametrize("card", ["4539 1488 0343 6467", "5425233430109903", "371449635398431", "6011 0009 9013 9424"])
def test_card_brand_length_luhn(card: str) -> None:
    f = fake("CARD_NUMBER", card)
    ds, fs = card.replace(" ", ""), f.replace(" ", "")
    assert len(fs) == len(ds) and fs != ds and validators.luhn_ok(fs)
    assert fs[:1] == ds[:1] and validators.card(f, 0, len(f))  # still a card of its brand
    assert [c == " " for c in f] == [c == " " for c in card]


@pytest.mark.parametrize("iban", ["DE89370400440532013000", "GB82 WEST 1234 5698 7654 32", "FR1420041010050500013M02606"])
def test_iban_country_length_mod97(iban: str) -> None:
    f = fake("IBAN", iban)
    assert f[:2] == iban[:2] and len(f) == len(iban) and f != iban
    assert validators.iban(f, 0, len(f))
    assert [c.isdigit() for c in f[4:]] == [c.isdigit() for c in iban[4:]]


@pytest.mark.parametrize("ip", ["10.1.2.3", "172.20.0.9", "192.168.1.40"])
def test_ipv4_private_stays_private(ip: str) -> None:
    f = fake("PRIVATE_IP", f"host {ip} up")[5:-3]
    a = ipaddress.IPv4Address(f)
    assert a.is_private and f != ip and f.split(".")[0] == ip.split(".")[0]


def test_ipv4_public_goes_to_test_nets() -> None:
    r = fakes.Faker(KEY, {"IP": "ipv4"}, {}, lambda f: True)
    f = r.make("IP", "8.8.8.8")
    assert f is not None and any(ipaddress.IPv4Address(f) in ipaddress.IPv4Network(n) for n in
                                 ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))  # fmt: skip


def test_ipv6_ranges() -> None:
    f = fake("PRIVATE_IPV6", "addr fd12:3456:789a:1::1 ok")[5:-3]
    assert ipaddress.IPv6Address(f) in ipaddress.IPv6Network("fd00::/8")
    r = fakes.Faker(KEY, {"IP": "ipv6"}, {}, lambda f: True)
    pub = r.make("IP", "2a00:1450:4001::200e")
    assert pub is not None and ipaddress.IPv6Address(pub) in ipaddress.IPv6Network("2001:db8::/32")


@pytest.mark.parametrize(
    ("rule", "token"),
    [
        ("AWS_ACCESS_KEY", AWS),
        ("ANTHROPIC_KEY", "sk-ant-api03-" + "Xy9_" * 20 + "AA"),
        ("OPENAI_KEY", "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5" * 2),
        ("SLACK_TOKEN", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ],
)
def test_token_prefix_length_alphabet(rule: str, token: str) -> None:
    f = fake(rule, token)
    k = fakes._prefix(token, "")
    assert len(f) == len(token) and f != token
    assert f[:4] == token[:4]
    assert [c.isalnum() for c in f] == [c.isalnum() for c in token]  # separators in place
    assert set(f[k:]) - set("-_") <= set(fakes._ALNUM)
    del k


def test_github_token_checksum() -> None:
    body = "x7Gq1ZpLw9KcVbN3mR5tY8uI2oP4aS"
    import binascii

    tok = "ghp_" + body + validators._base62(binascii.crc32(body.encode()), 6)
    assert validators.github_crc32(tok, 0, len(tok))
    f = fake("GITHUB_PAT", tok)
    assert f.startswith("ghp_") and len(f) == len(tok) and f != tok
    assert validators.github_crc32(f, 0, len(f))


def test_jwt_shape() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZUBhY21lLmlvIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    f = fake("JWT", jwt)
    h, p, sig = f.split(".")
    import base64

    claims = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    assert "alice" not in json.dumps(claims) and len(sig) == len(jwt.split(".")[2])
    assert json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4)))["typ"] == "JWT"


def test_keyed_and_deterministic() -> None:
    assert fake("EMAIL", EMAIL) == fake("EMAIL", EMAIL)  # another session, same fake
    other = fake("EMAIL", EMAIL, b"another key, another set of fakes")
    assert other != fake("EMAIL", EMAIL)
    assert fake("AWS_ACCESS_KEY", AWS) != fake("AWS_ACCESS_KEY", AWS, b"another key, another set of fakes")


def test_key_file_created_once_0600(tmp_path) -> None:
    p = tmp_path / "conf" / fakes.KEY_FILE
    k = fakes.load_key(p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600 and len(k) == 2 * fakes.KEY_BYTES
    assert fakes.load_key(p) == k  # kept, not made again
    p.write_text("short")
    with pytest.raises(fakes.MappingError):
        fakes.load_key(p)


def test_a_key_file_is_never_seen_before_its_key_is_in_it(tmp_path, monkeypatch) -> None:
    """Instances started together on a fresh confdir (deploy/balance.py) each create the
    key file: created in place, one that lost the race read it empty, before the winner
    had written its key, and refused it ("a key needs at least 16 bytes": that instance
    did not start; probe Q, 19 of 200 fresh files with 4 processes). It is written under
    another name and linked in whole; a process that loses the race uses the winner's."""
    p = tmp_path / "conf" / fakes.KEY_FILE
    real = fakes.secrets.token_hex
    seen: list[bool] = []

    def making(n: int) -> str:
        seen.append(p.exists())  # what another process would find while the key is made
        return real(n)

    monkeypatch.setattr(fakes.secrets, "token_hex", making)
    k = fakes.load_key(p)
    assert seen == [False] and len(k) == 2 * fakes.KEY_BYTES
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600 and list(p.parent.iterdir()) == [p]

    q = tmp_path / "conf" / "raced.key"

    def other_wins(n: int) -> str:
        q.write_text("the other instance's key, 0123456789\n")  # made meanwhile by another process
        return real(n)

    monkeypatch.setattr(fakes.secrets, "token_hex", other_wins)
    assert fakes.load_key(q) == b"the other instance's key, 0123456789"
    assert sorted(x.name for x in p.parent.iterdir()) == [fakes.KEY_FILE, "raced.key"]


def test_a_key_file_that_is_not_a_small_regular_file_is_refused_unread(tmp_path) -> None:
    # (the file too big first: read whole, /dev/zero grew the process past 9 GB, and a
    # FIFO waited for a writer)
    big = tmp_path / "big.key"
    big.write_bytes(b"k" * (fakes.KEY_MAX + 1))
    with pytest.raises(fakes.MappingError, match="more than a key file holds"):
        fakes.load_key(big)
    big.write_bytes(b"k" * fakes.KEY_MAX)
    assert fakes.load_key(big) == b"k" * fakes.KEY_MAX
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", "/dev/null", fifo):
        with pytest.raises(fakes.MappingError, match="not a regular file"):
            fakes.load_key(path)


def test_a_key_file_others_can_read_is_used_and_warned_of(tmp_path, caplog) -> None:
    p = tmp_path / fakes.KEY_FILE
    p.write_text("0123456789abcdef0123456789abcdef\n")
    os.chmod(p, 0o644)
    with caplog.at_level("WARNING", logger="disguise"):
        assert fakes.load_key(p) == b"0123456789abcdef0123456789abcdef"
    assert "can be read by other users (mode 644)" in caplog.text
    caplog.clear()
    os.chmod(p, 0o600)
    with caplog.at_level("WARNING", logger="disguise"):
        fakes.load_key(p)
    assert not caplog.text


def test_fake_false_and_placeholders_without_the_option() -> None:
    cfg = build_config([], True, [], KEY)
    assert cfg.rules.faker is not None and cfg.rules.faker.kind_of("PRIVATE_KEY") is None
    s = Session()
    assert PLAIN.mask(f"mail {EMAIL}", s) == "mail [EMAIL_1]" and s.fakes == 0
    from disguiselib.rules import mappings
    from disguiselib.rules.rules import Rules

    r = Rules(mappings.from_dict({"patterns": [{"name": "ID", "regex": "id-[0-9]{8}", "fake": False},
                                               {"name": "NUM", "regex": "no-[0-9]{8}", "fake": "digits"}]}), KEY)  # fmt: skip
    s = Session()
    out = r.mask("id-12345678 no-12345678", s)
    assert out.startswith("[ID_1] no-") and out[-8:].isdigit() and out[-8:] != "12345678"
    with pytest.raises(mappings.MappingError, match="fake must be"):
        mappings.from_dict({"patterns": [{"name": "X", "regex": "x[0-9]+", "fake": "nonsense"}]})


def test_client_text_equal_to_a_fake_is_reserved() -> None:
    f = fake("EMAIL", f"mail {EMAIL}")[5:]
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"{f} and {EMAIL}"}]})
    out, s = mask_body(body.encode(), recognise("POST", "/v1/messages").request_rule, RULES)
    text = json.loads(out)["messages"][0]["content"]
    mine, theirs = text.split(" and ")
    assert mine == f  # the client's own text went as it was
    assert theirs != f and s.placeholders[theirs] == EMAIL and f not in s.placeholders
    assert RULES.restorer(s.placeholders).text(text) == f"{f} and {EMAIL}"
    # as the pipeline asks it (the scan's memo and the document for the guard): the
    # second round scans into a memo of its own, copied into scanned
    scanned: dict = {}
    parsed: list = []
    again, _ = mask_body(body.encode(), recognise("POST", "/v1/messages").request_rule, RULES, scanned, parsed)
    assert again == out and scanned and parsed


def test_leak_guard_knows_a_fake_is_no_original() -> None:
    card = "4539 1488 0343 6467"
    s = Session()
    masked = RULES.mask(f"card {card}", s)
    assert leakguard.first(RULES, masked) == "CARD_NUMBER"  # a fake card looks like one
    assert leakguard.first(of_session(RULES, s), masked) is None
    assert leakguard.first(of_session(RULES, s), f"card {card}") == "CARD_NUMBER"


# -- restoring, however the text is cut ----------------------------------------------------

_ORIGS = [EMAIL, AWS, "4539 1488 0343 6467", "+1 415 555 2671", "10.1.2.3", 'q"uote\\d@x.io']


def _session() -> tuple[Session, dict[str, str]]:
    s = Session()
    for o in _ORIGS[:-1]:
        RULES.mask(f"x {o} y", s)
    s.placeholders["zz9-q.v"] = _ORIGS[-1]  # an original that needs JSON escaping
    s.placeholders["zz9-q.v.long"] = "longer"  # a fake another one extends
    return s, s.placeholders


SESSION, ISSUED = _session()
_FAKES = list(ISSUED)
_piece = st.one_of(
    st.sampled_from(_FAKES),
    st.sampled_from(_FAKES).map(lambda f: f[: max(1, len(f) // 2)]),
    st.sampled_from(_FAKES).map(lambda f: f[len(f) // 2 :]),
    st.sampled_from([" ", "\n", '"', "\\", "é", "😀", "@", ".", "[EMAIL_1]", "Zenith"]),
    st.text(alphabet="ab19.@-zq", max_size=5),
)
_texts = st.lists(_piece, max_size=12).map("".join)


def _reference(text: str) -> str:
    """Leftmost-longest replacement of every fake, by hand."""
    out, i = [], 0
    while i < len(text):
        best = max((f for f in _FAKES if text.startswith(f, i)), key=len, default=None)
        if best is None:
            out.append(text[i])
            i += 1
        else:
            out.append(ISSUED[best])
            i += len(best)
    return "".join(out)


def test_fakes_in_issued_and_shape() -> None:
    assert SESSION.fakes == len(_ORIGS) - 1
    assert all(not f.startswith("[") for f in _FAKES)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_windows_restore_fakes_split_anywhere(data) -> None:
    text = data.draw(_texts)
    r = RULES.restorer(ISSUED)
    whole = r.value(text)
    assert whole == _reference(text).replace("[EMAIL_1]", "[EMAIL_1]")
    for mode in (Window.TEXT, Window.VALUE):
        w = Window(RULES.restorer(ISSUED), mode)
        pieces = data.draw(splits(text))
        assert "".join(w.feed(p) for p in pieces) + w.flush() == RULES.restorer(ISSUED).run(text, mode, True, 0)[0]
    # JSON text (tool arguments): the same text as a JSON value, restored JSON-escaped
    j = json.dumps({"v": text})
    w = Window(RULES.restorer(ISSUED), Window.JSON)
    out = "".join(w.feed(p) for p in data.draw(splits(j))) + w.flush()
    assert json.loads(out) == {"v": _reference(text)}


def test_every_split_point_short() -> None:
    f = _FAKES[0]
    text = f"a{f}b"
    for i in range(len(text) + 1):
        for k in range(i, len(text) + 1):
            w = Window(RULES.restorer(ISSUED), Window.TEXT)
            got = w.feed(text[:i]) + w.feed(text[i:k]) + w.feed(text[k:]) + w.flush()
            assert got == f"a{ISSUED[f]}b"


def test_growing_session_restores_new_fakes() -> None:
    s = Session()
    r = RULES.restorer(s.placeholders, growing=True)
    assert r.text("nothing") == "nothing"
    m = RULES.mask(f"mail {EMAIL}", s)
    assert r.text(m) == f"mail {EMAIL}"


def test_client_text_equal_to_a_fake_is_reserved_also_written_with_escapes() -> None:
    """A client may spell its text with \\u escapes (`\\u0040` for `@`): the fake it
    typed is still its own text, never issued for an original of the request."""
    f = fake("EMAIL", f"mail {EMAIL}")[5:]
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"{f} and {EMAIL}"}]})
    body = body.replace(f, f.replace("@", "\\u0040"), 1)
    out, s = mask_body(body.encode(), recognise("POST", "/v1/messages").request_rule, RULES)
    mine, theirs = json.loads(out)["messages"][0]["content"].split(" and ")
    assert mine == f and theirs != f and s.placeholders[theirs] == EMAIL and f not in s.placeholders


def test_a_client_that_types_every_fake_tried_is_refused() -> None:
    """Each fake the client's text already holds is reserved and the body masked again
    with the next candidate, a bounded number of times: a text holding all of them is
    refused with the reason, never masked with a fake the client typed."""
    api = recognise("POST", "/v1/messages").request_rule
    typed: list[str] = []
    for _ in range(masking._FAKE_ROUNDS):
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": " ".join([*typed, EMAIL])}]})
        out, s = mask_body(body.encode(), api, RULES)
        (issued,) = [f for f, o in s.placeholders.items() if o == EMAIL]
        assert issued not in typed
        typed.append(issued)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": " ".join([*typed, EMAIL])}]})
    with pytest.raises(MaskError) as e:
        mask_body(body.encode(), api, RULES)
    assert str(e.value) == "the request holds the fakes of its own originals as text, again and again"
