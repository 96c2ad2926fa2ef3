"""Format-preserving fakes (option disguise_fakes): a keyed, deterministic look-alike of
the same kind for a pattern's match, in place of a numbered placeholder.

A fake is a function of (key, rule, original, attempt) only: HMAC-SHA256 under the key
drives every choice, so the same original gets the same fake in every request, after a
restart and on every instance sharing the key file; another key gives other fakes. No
state is kept. `attempt` (0, 1, ...) gives the next candidate when one is refused in a
request (it is another original's fake, or text the client itself sent): `Session`
decides that, in the order of first appearance, so the choice is deterministic too.

A fake is always ASCII, printable, without `"`, `\\`, `[` or whitespace (except the
separators copied from the original): it appears on the wire exactly as it is, and it
can never be taken for a placeholder. What a generator cannot make (a PEM block, a
number in an unknown format) is left to the placeholder (None).

Generators (GENERATORS), chosen per rule by `fake:` in the mapping or by kind():
- email: a local part of the original's length at a reserved domain (`*.example`,
  RFC 2606), which no e-mail rule takes for an address (no such top-level domain);
- phone: the same layout of digits; NANP numbers 555-0100..0199 (fictional), other
  regions libphonenumber's example number for the region and type, last digits varied;
- card: the brand prefix, the length and the layout kept, the Luhn check digit valid;
- iban: country and length kept, letters stay letters, digits digits, mod-97 check valid;
- ipv4: private stays private (same RFC 1918 block), public goes to TEST-NET-1/2/3;
- ipv6: unique-local stays fd00::/8, link-local fe80::/64, public 2001:db8::/32;
- token: the prefix (up to a separator near the start, or literal in the rule's regex),
  the length, every separator and the alphabet kept; GitHub's CRC32 when it has one;
- jwt: a JWT-shaped value: a fake header and payload, a signature of the same length;
- digits: every digit replaced, everything else kept.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import stat
import string
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import MappingError
from . import validators

# A key file holds this many random bytes, hex-encoded.
KEY_BYTES = 32
KEY_FILE = "disguise-fakes.key"
# The most a key file may hold (a key is KEY_BYTES in hex; a passphrase of a few lines): a
# larger file, or one that is not a regular file (/dev/zero, a FIFO), is refused unread.
KEY_MAX = 4096

log = logging.getLogger("disguise")


def _create_key(p: Path) -> None:
    """A new key file at p, unless one is there: written whole under another name, then
    linked to p (an atomic step that never replaces a file). Created in place, a process
    that lost the race to create it (instances of the balancer started together on a fresh
    confdir) read it before the winner had written the key and refused it: that instance
    did not start (probe Q: 19 of 200 fresh files, 4 processes each)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".disguise-key-")  # mode 0600
    except OSError as e:
        raise MappingError(f"disguise_fakes_key {p}: cannot create the key file ({e.strerror})") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(KEY_BYTES) + "\n")
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass  # another process made it first: its key is the one
        except OSError:  # no hard links here (some network or FUSE file systems): create it in place
            try:
                out = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return
            except OSError as e:
                raise MappingError(f"disguise_fakes_key {p}: cannot create the key file ({e.strerror})") from None
            with os.fdopen(out, "w") as f, open(tmp) as src:
                f.write(src.read())
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def load_key(path: str | os.PathLike) -> bytes:
    """The key in path, created once (KEY_BYTES random, mode 0600) if it does not exist.
    Raises MappingError for a key file that cannot be read or holds too short a key:
    without its key no fake can be made and the configuration is refused."""
    p = Path(path).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MappingError(f"disguise_fakes_key {p}: cannot create its folder ({e.strerror})") from None
    if not os.path.lexists(p):
        _create_key(p)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # (a FIFO: not waited on, refused below)
    except OSError as e:
        raise MappingError(f"disguise_fakes_key {p}: cannot read the key file ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise MappingError(f"disguise_fakes_key {p}: not a regular file")
        if st.st_size > KEY_MAX:
            raise MappingError(f"disguise_fakes_key {p}: {st.st_size} bytes, more than a key file holds ({KEY_MAX})")
        try:
            raw = f.read(KEY_MAX + 1).strip()
        except OSError as e:
            raise MappingError(f"disguise_fakes_key {p}: cannot read the key file ({e.strerror})") from None
    if len(raw) > KEY_MAX:
        raise MappingError(f"disguise_fakes_key {p}: more than a key file holds ({KEY_MAX} bytes)")
    if st.st_mode & 0o077:
        # whoever reads the key can tell which original a fake stands for, by trying guesses
        log.warning("disguise: disguise_fakes_key %s can be read by other users (mode %03o): chmod 600 it", p,
                    st.st_mode & 0o777)  # fmt: skip
    if len(raw) < 16:
        raise MappingError(f"disguise_fakes_key {p}: a key needs at least 16 bytes")
    return raw


class _Stream:
    """HMAC-SHA256 output as a stream of choices."""

    __slots__ = ("_key", "_msg", "_buf", "_block")

    def __init__(self, key: bytes, msg: bytes) -> None:
        self._key, self._msg = key, msg
        self._buf = b""
        self._block = 0

    def _bytes(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._buf += hmac.new(self._key, self._block.to_bytes(4, "big") + self._msg, hashlib.sha256).digest()
            self._block += 1
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def below(self, n: int) -> int:
        """A number in [0, n) (n < 2**32; the bias is below 2**-16)."""
        return int.from_bytes(self._bytes(6), "big") % n

    def pick(self, alphabet: Sequence[str]) -> str:
        return alphabet[self.below(len(alphabet))]

    def run(self, alphabet: str, n: int) -> str:
        return "".join(alphabet[self.below(len(alphabet))] for _ in range(n))


_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_DIGITS = string.digits
_ALNUM = _DIGITS + _UPPER + _LOWER

# -- e-mail ------------------------------------------------------------------------------

_RESERVED_SLD = ("mail", "corp", "inbox", "post", "team")


def email(orig: str, rnd: _Stream, regex: str) -> str | None:
    at = orig.rfind("@")
    if at <= 0:
        return None
    n = min(max(at, 4), 24)
    local = rnd.pick(_LOWER) + rnd.run(_LOWER + _DIGITS, n - 1)
    return f"{local}@{rnd.pick(_RESERVED_SLD)}.example"


# -- digits in the original's layout -------------------------------------------------------


def _layout(orig: str, digits: str) -> str:
    """digits put in place of orig's digits, every other character kept."""
    it = iter(digits)
    return "".join(next(it) if c.isdigit() and c.isascii() else c for c in orig)


def _ascii_digits(orig: str) -> str:
    return "".join(c for c in orig if c.isascii() and c.isdigit())


def digits(orig: str, rnd: _Stream, regex: str) -> str | None:
    ds = _ascii_digits(orig)
    if not ds:
        return None
    return _layout(orig, rnd.run(_DIGITS, len(ds)))


# -- phone -------------------------------------------------------------------------------

_NANP_AREAS = ("201", "202", "212", "213", "305", "312", "415", "503", "617", "702", "713", "808")


def phone(orig: str, rnd: _Stream, regex: str) -> str | None:
    import phonenumbers  # the library the phone validator uses; loaded when first needed

    ds = _ascii_digits(orig)
    num = None
    for region in (None, *validators.PHONE_REGIONS) if orig.lstrip().startswith("+") else validators.PHONE_REGIONS:
        try:
            cand = phonenumbers.parse(orig, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_possible_number(cand):
            num = cand
            break
    if num is None:
        return None
    cc = str(num.country_code)
    national = phonenumbers.national_significant_number(num)
    lead = ds[: len(ds) - len(national)]  # a country code, a trunk prefix: kept as written
    if num.country_code == 1:
        if len(national) != 10:
            return None
        fake = rnd.pick(_NANP_AREAS) + "5550" + "1" + rnd.run(_DIGITS, 2)
    else:
        region = phonenumbers.region_code_for_number(num)
        if region is None:
            return None
        kind = phonenumbers.number_type(num)
        ex = phonenumbers.example_number_for_type(region, kind) or phonenumbers.example_number(region)
        if ex is None or str(ex.country_code) != cc:
            return None
        fake = phonenumbers.national_significant_number(ex)
        if len(fake) != len(national):
            return None
        fake = fake[:-2] + rnd.run(_DIGITS, 2)
    return _layout(orig, lead + fake)


# -- card --------------------------------------------------------------------------------


def _luhn_digit(body: str) -> str:
    """The check digit that makes body + it pass Luhn."""
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def card(orig: str, rnd: _Stream, regex: str) -> str | None:
    ds = _ascii_digits(orig)
    if len(ds) < 12:
        return None
    # the brand's prefix: Visa 4, Mastercard 51-55 / 22-27, Amex 34/37, Discover 6011 /
    # 644-649 / 65, JCB 35xx, UnionPay 62, Diners 30/36/38
    keep = 1 if ds[0] == "4" else 4 if ds[0] in "6" or ds[:2] == "35" else 2
    body = ds[:keep] + rnd.run(_DIGITS, len(ds) - keep - 1)
    return _layout(orig, body + _luhn_digit(body))


# -- IBAN --------------------------------------------------------------------------------


def _mod97(s: str) -> int:
    r = 0
    for c in s:
        r = (r * (100 if c.isalpha() else 10) + (ord(c) - 55 if c.isalpha() else int(c))) % 97
    return r


def iban(orig: str, rnd: _Stream, regex: str) -> str | None:
    compact = orig.replace(" ", "")
    if len(compact) < 5 or not compact[:2].isalpha() or not compact.isascii() or not compact.isalnum():
        return None
    country = compact[:2].upper()
    bban = "".join(rnd.pick(_DIGITS) if c.isdigit() else rnd.pick(_UPPER) for c in compact[4:])
    check = 98 - _mod97(bban + country + "00")
    fake = f"{country}{check:02d}{bban}"
    it = iter(fake)
    return "".join(c if c == " " else next(it) for c in orig)


# -- IP addresses ------------------------------------------------------------------------

_TEST_NETS = ("192.0.2", "198.51.100", "203.0.113")


def ipv4(orig: str, rnd: _Stream, regex: str) -> str | None:
    try:
        ip = ipaddress.IPv4Address(orig)
    except ValueError:
        return None
    o = orig.split(".")
    host = str(1 + rnd.below(254))
    if o[0] == "10":
        return f"10.{rnd.below(256)}.{rnd.below(256)}.{host}"
    if o[0] == "172" and 16 <= int(o[1]) <= 31:
        return f"172.{16 + rnd.below(16)}.{rnd.below(256)}.{host}"
    if o[0] == "192" and o[1] == "168":
        return f"192.168.{rnd.below(256)}.{host}"
    del ip
    return f"{rnd.pick(_TEST_NETS)}.{host}"


def ipv6(orig: str, rnd: _Stream, regex: str) -> str | None:
    addr, pct, zone = orig.partition("%")
    try:
        ip = ipaddress.IPv6Address(addr)
    except ValueError:
        return None
    r = int.from_bytes(bytes(rnd.below(256) for _ in range(16)), "big")
    if ip in ipaddress.IPv6Network("fc00::/7"):  # unique local: fd + a random global id
        fake = ipaddress.IPv6Address((0xFD << 120) | (r & ((1 << 120) - 1)))
    elif ip in ipaddress.IPv6Network("fe80::/10"):  # link-local: fe80::/64 + an interface id
        fake = ipaddress.IPv6Address((0xFE80 << 112) | (r & ((1 << 64) - 1)))
    else:  # documentation
        fake = ipaddress.IPv6Address((0x20010DB8 << 96) | (r & ((1 << 96) - 1)))
    s = fake.compressed
    if addr.isupper():
        s = s.upper()
    return s + pct + zone


# -- tokens ------------------------------------------------------------------------------

_SEPARATORS = "-_.$:"
_B32 = _UPPER + "234567"
_ALPHABETS = (
    _DIGITS,
    "0123456789abcdef",
    "0123456789ABCDEF",
    _B32,
    _DIGITS + _LOWER,
    _DIGITS + _UPPER,
    _UPPER + _LOWER,
    _ALNUM,
)


def _prefix(orig: str, regex: str) -> int:
    """How many leading characters of a token are its format's prefix: up to the last
    separator among its first 16 characters (`sk-ant-api03-`, `ghp_`, `xoxb-`), else the
    longest start (up to 8 characters) the rule's regex spells literally (`AKIA`)."""
    head = orig[: min(16, len(orig) // 2)]
    cut = max(head.rfind(c) for c in _SEPARATORS)
    if cut >= 0:
        return cut + 1
    for k in range(min(8, len(orig) // 3), 1, -1):
        if orig[:k] in regex:
            return k
    return 0


def token(orig: str, rnd: _Stream, regex: str) -> str | None:
    if len(orig) < 8 or len(orig) > 4096 or not orig.isascii() or not orig.isprintable() or " " in orig:
        return None
    if any(c in orig for c in '"\\['):
        return None
    k = _prefix(orig, regex)
    body = orig[k:]
    slots = [c for c in body if c.isalnum()]
    if len(slots) < 8:
        return None
    used = set(slots)
    alphabet = next(a for a in _ALPHABETS if used <= set(a))
    it = iter(rnd.run(alphabet, len(slots)))
    return orig[:k] + "".join(next(it) if c.isalnum() else c for c in body)


def github(orig: str, rnd: _Stream, regex: str) -> str | None:
    """`ghp_` + 30 base62 + the CRC32 of those 30 in 6 base62 digits (validators.github_crc32)."""
    us = orig.find("_")
    if us < 0 or len(orig) - us - 1 != 36:
        return token(orig, rnd, regex)
    body = rnd.run(validators._B62, 30)
    return orig[: us + 1] + body + validators._base62(binascii.crc32(body.encode("ascii")), 6)


# -- JWT ---------------------------------------------------------------------------------


def _b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def jwt(orig: str, rnd: _Stream, regex: str) -> str | None:
    parts = orig.split(".")
    if len(parts) != 3:
        return None
    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    claims = {"sub": rnd.run(_DIGITS + "abcdef", 16), "iat": 1700000000 + rnd.below(10**8)}
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    sig = rnd.run(_ALNUM + "-_", len(parts[2]))
    return f"{header}.{payload}.{sig}"


Generator = Callable[[str, _Stream, str], "str | None"]

GENERATORS: dict[str, Generator] = {
    "email": email,
    "phone": phone,
    "card": card,
    "iban": iban,
    "ipv4": ipv4,
    "ipv6": ipv6,
    "token": token,
    "github": github,
    "jwt": jwt,
    "digits": digits,
}

# The generator of a rule with no `fake:` of its own, by its validator, else its name.
_BY_VALIDATOR = {
    "email": "email",
    "phone": "phone",
    "card": "card",
    "iban": "iban",
    "github_crc32": "github",
    "ssn": "digits",
}
_BY_NAME = {"EMAIL": "email", "PRIVATE_IP": "ipv4", "PRIVATE_IPV6": "ipv6", "JWT": "jwt"}
# Rules whose match is no single value a look-alike can stand for: left to placeholders.
_NONE_BY_NAME = ("PRIVATE_KEY",)


def kind(name: str, validator: str | None, fake: str | bool | None) -> str | None:
    """The generator a pattern rule uses: its mapping's `fake:` (False: none), else by its
    validator or name, else `token` (which declines what is not token-shaped)."""
    if fake is False:
        return None
    if isinstance(fake, str):
        return fake
    if name.startswith(_NONE_BY_NAME):
        return None
    if validator in _BY_VALIDATOR:
        return _BY_VALIDATOR[validator]
    return _BY_NAME.get(name, "token")


class Faker:
    """A rule set's fakes under one key: make(rule, original, attempt)."""

    __slots__ = ("key", "_kinds", "_regex", "clean")

    def __init__(
        self, key: bytes, kinds: dict[str, str | None], regexes: dict[str, str], clean: Callable[[str], bool]
    ) -> None:
        self.key = key
        self._kinds = kinds  # rule name -> generator name (None: placeholders)
        self._regex = regexes
        # may a candidate stand for an original (no rule takes a part of it: Rules._fake_clean)
        self.clean = clean

    def kind_of(self, rule: str) -> str | None:
        return self._kinds.get(rule)

    def make(self, rule: str, original: str, attempt: int = 0) -> str | None:
        """The fake for original matched by rule, candidate number attempt; None when the
        rule has no generator or its generator cannot make one of this original."""
        k = self._kinds.get(rule)
        if k is None:
            return None
        msg = f"{k}\x00{rule}\x00{attempt}\x00".encode() + original.encode("utf-8", "surrogatepass")
        fake = GENERATORS[k](original, _Stream(self.key, msg), self._regex.get(rule, ""))
        if fake is None or fake == original or not fake.isascii() or any(c in fake for c in '"\\[<>&'):
            return None
        return fake
