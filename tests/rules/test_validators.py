"""The validators (rules/validators.py): each check a pattern's candidate must pass, on the
span and the few characters around it."""

from __future__ import annotations

import binascii
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from disguiselib.rules import validators


def _crc_token(prefix: str, body: str) -> str:
    return prefix + body + validators._base62(binascii.crc32(body.encode()), 6)


def _v(name: str, s: str, before: str = "", after: str = "") -> bool:
    text = before + s + after
    return validators.check(name, text, len(before), len(before) + len(s))


def test_luhn_and_issuer() -> None:
    assert _v("card", "4539148803436467") and _v("card", "3714-496353-98431") and _v("card", "5555 5555 5555 4444") is False
    assert not _v("card", "4539148803436468")  # Luhn fails
    assert not _v("card", "1715677964123459")  # Luhn holds, no issuer starts with 17
    assert not _v("card", "4539 1488-0343 6467")  # mixed separators


def test_iban_mod97_and_length() -> None:
    assert _v("iban", "DE89 3704 0044 0532 0130 00") and _v("iban", "GB29NWBK60161331926819")
    assert not _v("iban", "DE89 3704 0044 0532 0130 01")
    assert not _v("iban", "DE89370400440532013")  # too short for DE
    assert not _v("iban", "QQ89370400440532013000")


def test_github_crc32_suffix() -> None:
    rnd = random.Random(1)
    for prefix in ("ghp_", "npm_"):
        body = "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(30))
        tok = _crc_token(prefix, body)
        assert _v("github_crc32", tok)
        assert not _v("github_crc32", tok[:-1] + ("A" if tok[-1] != "A" else "B"))
    assert not _v("github_crc32", "ghp_16C7e42F292c6912E7710c838347Ae178B4a")  # GitHub's docs example


def test_phone() -> None:
    assert _v("phone", "+44 20 7946 0958") and _v("phone", "+49 151 23456789")
    assert not _v("phone", "+1 555 0100") and not _v("phone", "+12")
    assert _v("phone", "(415) 555-2671")  # national, valid in US


def test_phonenumbers_is_loaded_at_the_first_candidate_not_with_the_addon() -> None:
    """Its ~1.3 MiB (burst RSS, issue 29) is paid by the first phone-shaped candidate."""
    code = (
        "import sys; import disguise; from disguiselib.rules import validators as v\n"
        "assert 'phonenumbers' not in sys.modules, 'loaded with the addon'\n"
        "assert v.NAMES['phone']('+44 20 7946 0958', 0, 16) and 'phonenumbers' in sys.modules"
    )
    addon = str(Path(validators.__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": addon}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_phone_refuses_when_phonenumbers_cannot_be_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lazy load that fails raises (the request is refused), never reads as "not a phone"."""
    monkeypatch.setitem(sys.modules, "phonenumbers", None)
    with pytest.raises(ImportError):
        _v("phone", "+44 20 7946 0958")


@pytest.mark.parametrize(
    "s, before, after, ok",
    [
        ("bob@example.com", "", "", True),
        ("josé.garcía@exemple.fr", "", "", True),
        ("logo@2x.png", "", "", False),
        ("icon@1.5x.webp", "", "", False),
        ("git@github.com", "", ":acme/x.git", False),
        ("deploy@staging.acme.io", "scp a ", ":/opt/app", False),
        ("this@MainActivity.startActivity", "", "(i)", False),
        ("x@self.weight", "", "", False),
        ("ana@acme.io", "", ": she wrote", True),
        ("ana@acme.io", "", ":", True),
    ],
)
def test_email(s: str, before: str, after: str, ok: bool) -> None:
    assert _v("email", s, before, after) is ok


@pytest.mark.parametrize(
    "s, before, ok",
    [
        ("hunter2!", "password: ", True),
        ("sunshine", "password: ", True),
        ("sunshine", "password=", False),  # a variable in code
        ("Summer2024!", "password=", True),
        ("${DB_PASSWORD}", "password: ", False),
        ("$ecret99", "password: ", True),
        ("os.environ[", "password = ", False),
        ("settings.SECRET_KEY", "secret = ", False),
        ("PvqC9I4p8_1TdLVjxYMn.yp.cExqwGUYb2C5XYzV", "token: ", True),
        ("SecretStr", "api_key: ", False),
        ("DB_PASSWORD", "password: ", False),
        ("<your-password>", "password: ", False),
        ("********", "password: ", False),
        ("null", "password: ", False),
    ],
)
def test_secret_value(s: str, before: str, ok: bool) -> None:
    assert _v("secret_value", s, before) is ok


def test_token_value_wants_a_letter_and_a_digit_or_length() -> None:
    assert _v("token_value", "a1b2c3d4e5")
    assert not _v("token_value", "4096") and not _v("token_value", "bearer") and not _v("token_value", "1234567890123")
    assert _v("token_value", "my-super-secret-jwt-key")


@pytest.mark.parametrize(
    "s, ok",
    [
        ("536-22-8190", True), ("001-01-0001", True), ("899-99-9999", True),
        ("666-12-3456", False), ("000-12-3456", False), ("900-12-3456", False),
        ("123-00-4567", False), ("123-45-0000", False), ("078-05-1120", False), ("111-11-1111", False),
    ],
)
def test_ssn(s: str, ok: bool) -> None:
    assert _v("ssn", s) is ok


@pytest.mark.parametrize(
    "s, ok",
    [
        ("fd12:3456:789a::1", True), ("fc00::1", True), ("fe80::1%eth0", True), ("febf::1", True),
        ("fec0::1", False), ("2001:db8::1", False), ("fd12:3456", False), ("fe80:::1", False),
    ],
)
def test_ipv6_private(s: str, ok: bool) -> None:
    assert _v("ipv6_private", s) is ok


def test_random_token_tells_identifiers_from_tokens() -> None:
    assert not _v("random_token", "hf_requiredCharacteristicTypesForDisplayMetadata")
    assert not _v("random_token", "hf_HTTPServerConfigurationForTests")
    rnd = random.Random(3)
    for _ in range(200):
        body = "".join(rnd.choice(string.ascii_letters) for _ in range(34))
        assert _v("random_token", "hf_" + body), body


def test_credential_pair() -> None:
    assert _v("credential_pair", "elastic:P@ssw0rd$1") and _v("credential_pair", ":d2LkV78zLx!t")
    assert _v("credential_pair", "d2LkV78zLx!t:")
    assert not _v("credential_pair", "user:password") and not _v("credential_pair", "$1:$2")
    assert not _v("credential_pair", "<user:password>") and not _v("credential_pair", "neo4j:[PASSWORD]")


def test_jwt_base64_and_base64_secret() -> None:
    import base64

    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"
    assert _v("jwt_base64", base64.b64encode(jwt.encode()).decode())
    assert not _v("jwt_base64", base64.b64encode(b"eyJhbGciOiJIUzI1NiJ9 and no payload").decode())
    assert _v("base64_secret", base64.b64encode(b"Tr0ub4dor&3").decode())
    assert _v("base64_secret", base64.b64encode(bytes(range(128, 168))).decode())
    assert not _v("base64_secret", "postgres") and not _v("base64_secret", "YmFyCg==")


def test_token_value_numeric_and_urls() -> None:
    assert _v("token_value", "2922001207474157") and not _v("token_value", "1715677964123")
    assert not _v("token_value", "https://auth.acme.example/oauth/token")
    assert not _v("token_value", "workload-identity-auth")


def test_check_dispatches_by_name_and_refuses_an_unknown_one() -> None:
    assert set(validators.NAMES) >= {"card", "iban", "github_crc32", "phone", "email", "secret_value",
                                     "token_value", "mixed"}  # fmt: skip
    assert validators.check("mixed", "key Ab3xYz9Q end", 4, 12)
    assert not validators.check("mixed", "deadbeef00", 0, 10)  # a hex digest: no upper case
    with pytest.raises(KeyError):
        validators.check("no_such_validator", "x", 0, 1)


def test_luhn_ok_is_mod_10() -> None:
    assert validators.luhn_ok("79927398713") and not validators.luhn_ok("79927398710")
    assert validators.luhn_ok("0") and validators.luhn_ok("18")
