"""Checks a pattern's candidate must pass before it is masked (mapping option `validator:`).

Sans-IO and stateless. Each check is `check(text, start, end) -> bool`: text is the whole
string being masked and text[start:end] the span that would be masked. A check reads the
span and at most a few characters on either side (O(end - start)), never the rest of the
text, so a rule with a validator still costs linear time.

The set is fixed (NAMES); a mapping naming any other validator is refused at load.
"""

from __future__ import annotations

import binascii
import ipaddress
import re
from collections.abc import Callable
from typing import NamedTuple

from . import tlds

Check = Callable[[str, int, int], bool]

# -- cards: Luhn and the issuer's prefix and length ---------------------------------------

_CARD_SEP = re.compile(r"[ -]")
# (prefix range, lengths) per issuer: Visa, Mastercard (51-55 and the 2-series),
# American Express, Discover, JCB, Diners Club, UnionPay, Maestro. Luhn alone passes one
# random digit string in ten; with the issuer table far fewer (timestamps, order ids).
_ISSUERS: tuple[tuple[int, int, int, tuple[int, ...]], ...] = (
    # (digits of prefix, low, high, lengths)
    (1, 4, 4, (13, 16, 19)),
    (2, 51, 55, (16,)),
    (4, 2221, 2720, (16,)),
    (2, 34, 34, (15,)),
    (2, 37, 37, (15,)),
    (4, 6011, 6011, (16, 17, 18, 19)),
    (2, 65, 65, (16, 17, 18, 19)),
    (3, 644, 649, (16, 17, 18, 19)),
    (4, 3528, 3589, (16, 17, 18, 19)),
    (2, 36, 36, (14, 15, 16, 17, 18, 19)),
    (2, 38, 39, (14, 15, 16, 17, 18, 19)),
    (3, 300, 305, (14, 15, 16, 17, 18, 19)),
    (2, 62, 62, (16, 17, 18, 19)),
    (2, 67, 67, (12, 13, 14, 15, 16, 17, 18, 19)),
)


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check of a string of ASCII digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def card(text: str, start: int, end: int) -> bool:
    """A payment card number: an issuer's prefix and length, and the Luhn check. Spaces
    or dashes between digit groups are allowed, but one kind only."""
    s = text[start:end]
    if " " in s and "-" in s:
        return False
    digits = _CARD_SEP.sub("", s)
    if not digits.isascii() or not digits.isdigit() or len(set(digits)) < 4:
        return False
    n = len(digits)
    if not any(n in lens and lo <= int(digits[:k]) <= hi for k, lo, hi, lens in _ISSUERS):
        return False
    return luhn_ok(digits)


# -- IBAN: the country's length and ISO 7064 mod 97 ---------------------------------------

# Lengths from the SWIFT IBAN registry.
_IBAN_LENGTH = dict(
    (cc, int(n))
    for cc, n in (
        w.split(":")
        for w in """AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BI:27 BR:29 BY:28 CH:21
        CR:22 CY:28 CZ:24 DE:22 DJ:27 DK:18 DO:28 EE:20 EG:29 ES:24 FI:18 FK:18 FO:18 FR:27 GB:22
        GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 HU:28 IE:22 IL:23 IQ:23 IS:26 IT:27 JO:30 KW:30 KZ:20
        LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MN:20 MR:27 MT:31 MU:30
        NI:28 NL:18 NO:15 OM:23 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 RU:33 SA:24 SC:31 SD:18
        SE:24 SI:19 SK:24 SM:27 SO:23 ST:25 SV:28 TL:23 TN:24 TR:26 UA:29 VA:22 VG:24 XK:20
        YE:30""".split()
    )
)


def iban(text: str, start: int, end: int) -> bool:
    """An IBAN: a known country, that country's length, and mod 97 == 1 (spaces or
    dashes between groups allowed, one kind only)."""
    s = text[start:end]
    if " " in s and "-" in s:
        return False
    s = s.replace(" ", "").replace("-", "").upper()
    if _IBAN_LENGTH.get(s[:2]) != len(s) or not s.isascii() or not s.isalnum():
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# -- GitHub (and npm) tokens: CRC32 of the random part, base62, in the last 6 characters --

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _base62(n: int, width: int) -> str:
    out = []
    while n:
        n, r = divmod(n, 62)
        out.append(_B62[r])
    return "".join(reversed(out)).rjust(width, "0")


def github_crc32(text: str, start: int, end: int) -> bool:
    """`ghp_`-style tokens (GitHub since 2021, npm since 2021): prefix, 30 random base62
    characters, then the CRC32 of those 30 characters in 6 base62 digits. Documented in
    GitHub's blog post "Behind GitHub's new authentication token formats"."""
    s = text[start:end]
    us = s.find("_")
    body, crc = s[us + 1 : -6], s[-6:]
    if len(body) != 30:
        return False
    return _base62(binascii.crc32(body.encode("ascii", "replace")), 6) == crc


# -- phone numbers: libphonenumber ---------------------------------------------------------

# Regions tried for a number written without a country code (rules that accept those are
# gated by keywords such as "phone" or "tel"): the most common in the recorded traffic's
# languages. A number valid in none of them is not masked.
PHONE_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "CH", "AT", "IN", "AU", "BR", "JP")


# What a national-form candidate is when it is not a phone number: an ISO date
# (`2025-03-14`), a CVE id, a Go pseudo-version's timestamp (`v0.0.0-20190312151609-…`).
_DATE = re.compile(r"\(?(?:1[89]|2[01])[0-9]{2}[-./](?:0[1-9]|1[0-2])[-./](?:0[1-9]|[12][0-9]|3[01])\)?")
_GLUE = frozenset("-./_")


def phone(text: str, start: int, end: int) -> bool:
    """A phone number libphonenumber calls valid: international form (`+CC ...`) on its
    own, a national form in one of PHONE_REGIONS. A national form is not a date, not
    part of a longer token (glued by `-`, `.`, `/` or `_` to a letter or digit on either
    side: `CVE-2023-27533`, `v0.0.0-20190312151609-d3739f865fa6`), and written with a
    separator or as 10+ digits (`4105376`, an issue number, is not a phone)."""
    s = text[start:end]
    digits = sum(c.isdigit() for c in s)
    if digits < 7 or digits > 15:
        return False
    if not s.startswith("+"):
        if _DATE.fullmatch(s) or (s.isdigit() and digits < 10):
            return False
        before, after = text[max(0, start - 2) : start], text[end : end + 2]
        if (len(before) == 2 and before[1] in _GLUE and before[0].isalnum()) or (
            len(after) == 2 and after[0] in _GLUE and after[1].isalnum()
        ):
            return False
    import phonenumbers  # ~1.3 MiB; loaded at the first candidate (ImportError refuses)

    regions: tuple[str | None, ...] = (None,) if s.startswith("+") else PHONE_REGIONS
    for region in regions:
        try:
            n = phonenumbers.parse(s, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(n):
            return True
    return False


# -- e-mail addresses: a real top-level domain, not a login or code ------------------------

# Local parts that name a system account, not a person: `git@github.com:org/repo.git`,
# `ssh ec2-user@host`, `root@web-01`. Kotlin labels (`this@MainActivity`, `return@forEach`)
# and Python's matrix product (`x@self.weight`) look like addresses too.
_NOT_PEOPLE = frozenset(
    """git root ec2-user ubuntu centos debian fedora admin azureuser opc bitnami vagrant pi core
    hg svn www-data nobody postgres jenkins runner gitlab-runner ssm-user rocky almalinux
    this return break continue super""".split()
) - {"admin"}  # admin@company.com is a mailbox people read
_CODE_DOMAIN_START = ("self.", "this.", "cls.", "super.")
_SCALE = re.compile(r"[0-9]+(?:\.[0-9]+)?x\.")  # logo@2x.png, icon@1.5x.webp


def email(text: str, start: int, end: int) -> bool:
    """An e-mail address worth masking: its top-level domain exists (tlds.known, or an IDN
    `xn--` label), it is not an asset scale suffix (`@2x.`), not a system login (local part
    in _NOT_PEOPLE, or followed by `:path` as in scp/git remotes), not code (`self.`
    after the `@`, a call right after it)."""
    s = text[start:end]
    if _in_url_authority(text, start):
        return False  # `https://user:pass@host`: the password and the host, not an address
    at = s.rfind("@")
    local, domain = s[:at], s[at + 1 :]
    tld = domain.rsplit(".", 1)[-1].lower()
    if not tlds.known(tld) and not tld.startswith("xn--"):
        return False
    if local.lower() in _NOT_PEOPLE or domain.startswith(_CODE_DOMAIN_START) or _SCALE.match(domain):
        return False
    nxt = text[end : end + 2]
    if nxt[:1] == "(" or (nxt[:1] == ":" and nxt[1:2] not in ("", " ", "\n", "\t", "\r")):
        return False  # a method call, or a remote path (git@host:org/repo, user@host:~/x)
    return True


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _in_url_authority(text: str, start: int) -> bool:
    """text[start] is inside a URL's `user:password@host` part: `scheme://` before it in
    the same run of non-space characters, with no `/`, `?` or `#` in between (an address
    in a URL's path or query, `?email=jo@x.com`, is one)."""
    lo = max(0, start - 256)
    run = text[lo:start]
    cut = max(run.rfind(c) for c in " \t\r\n\"'<>(`")
    run = run[cut + 1 :]
    i = run.rfind("://")
    return i >= 0 and _URL_START.search(run[: i + 3]) is not None and not any(c in run[i + 3 :] for c in "/?#")


# -- secret values after a keyword: not a placeholder, a reference or a type ---------------

_STOP_VALUES = frozenset(
    """none null nil true false undefined string str bytes int required optional password
    passwd secret token apikey api_key key value redacted hidden masked empty na n/a todo
    changeit xxx env secretstr passphrase pass pwd pw key api-key bool boolean float object any
    optional[str] self this""".split()
)
# What code puts after `password =`: a call or subscript (`os.getenv(`, `os.environ[`,
# `config.get(`), a dotted name (`settings.SECRET_KEY`, `process.env.API_KEY!`), a type
# name (`SecretStr`), a constant or variable name (`DB_PASSWORD`, `api_key`).
# A name segment in code is a word, digits only at its end (`api_key2`); random tokens
# have digits and case changes anywhere, so a dotted token (`aB3x.Yz9q`) is not taken for
# a name.
_SEG = r"[A-Za-z_$][A-Za-z_$]*[0-9]*"
_CODE_CALL = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)*[(\[]")
_CODE_NAME = re.compile(
    rf"(?:{_SEG}(?:(?:\.|::|->){_SEG})+"
    r"|[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:_[a-z]+)+)[!?]?"
)
# `$VAR`, `${x}`, `$(cmd)`, `%VAR%`, `%(name)s`, `{{ x }}`, `<password>`, `[x]`, `(x)`; a
# password may well begin with `$` or `%` followed by a lower-case letter or a digit.
_REFERENCE_START = re.compile(r"[$%](?:[{(]|[A-Z_][A-Z0-9_]*(?:[^A-Za-z0-9]|$))|[{\[(<]")
# A value that is code, not data: an identifier, a property access, a path, a version.
# Its letter runs are words (`defaultToConfig2`, `self.credentials.token`,
# `../lib/helpers/HttpStatusCode.js`, `CVE-2025-23217`): random tokens have runs of one
# letter (`Zf3D0LXCM3…`: `f`, `D`, `L`) and are not taken for names.
_CODE_SHAPE = re.compile(r"[!&*@^~]*[A-Za-z0-9_$./:-]+[})!?]*")
_VERSION = re.compile(r"[~^=<>v]*[0-9]+(?:\.[0-9A-Za-z]+)+(?:[-+][0-9A-Za-z.-]+)?")
_OPERATOR = re.compile(r"^[=|&>]|&&|\|\|")
_FILE_PATH = re.compile(r"(?:\.{1,2}|~)?(?:/[A-Za-z0-9._@+-]+){2,}/?")
_PATH_PIECES = re.compile(r"[/._@+-]+")


def _file_path(s: str) -> bool:
    """A file path of two or more segments whose pieces are each a word, a number or an
    acronym (`/var/run/secrets/tls.key`); base64 with `/` has mixed-case pieces."""
    return _FILE_PATH.fullmatch(s) is not None and all(
        p.islower() or p.isupper() or p.isdigit() or p.istitle() for p in _PATH_PIECES.split(s) if p
    )
_TICKET = re.compile(r"[A-Z][A-Z0-9]+(?:-[0-9]+)+")  # CVE-2025-23217, JIRA-123
_NAME_RUNS = re.compile(r"[A-Z]+[a-z]*|[a-z]+")
_SEPARATORS = re.compile(r"[./:_$-]+")
_UNSPOKEN = re.compile(r"[b-df-hj-np-tv-xz]{5}|[A-Z]{6}[a-z]")  # no word has 5 consonants in a row


def code_shaped(s: str) -> bool:
    """s reads as code: a version (`^1.0.0`), or an identifier, property access or path
    whose letter runs are all words of two letters or more (`defaultToConfig2`)."""
    if _VERSION.fullmatch(s) or _TICKET.fullmatch(s):
        return True
    if not _CODE_SHAPE.fullmatch(s):
        return False
    words = letters = 0
    for seg in _SEPARATORS.split(s.strip("!&*@^~})?")):
        if seg.isdigit() or not seg:
            continue
        body = seg.rstrip("0123456789")
        if len(seg) - len(body) > 3 or not body:
            return False
        runs = _NAME_RUNS.findall(body)
        if "".join(runs) != body or any(len(r) < 2 or _UNSPOKEN.search(r) for r in runs):
            return False
        words += len(runs)
        letters += len(body)
    return words > 0 and letters >= 4 * words


def _in_markdown_url(text: str, start: int) -> bool:
    """text[start] is inside a Markdown link's URL (`](https://…?pwd=…)`): a meeting
    link's or a badge's query, which the link needs whole."""
    run = text[max(0, start - 256) : start]
    i = run.rfind("](")
    inside = run[i + 2 :]
    return i >= 0 and _URL_START.match(inside) is not None and not any(c.isspace() or c == ")" for c in inside)

_VARIABLE = re.compile(r"[a-z_][a-z_]*")
_PLACEHOLDER_WORDS = ("your", "example", "placeholder", "changeme_", "<", "xxxx", "****", "....", "redacted")


def secret_value(text: str, start: int, end: int) -> bool:
    """The value after `password:`, `token=`, `AccountKey=`...: at least 4 characters, and
    not something that only names or describes a secret — a reference (`$DB_PASS`,
    `${{ secrets.X }}`, `{{ .Values.x }}`, `%(pw)s`, `os.environ[...]`, `process.env.X`,
    `settings.SECRET`), a type (`str`, `SecretStr`, `Optional[str]`), an identifier
    (`DB_PASSWORD`, `api_key`), a stop word (`null`, `required`), a placeholder
    (`your-token-here`, `<password>`, `****`, `xxxx`) or a repeated character."""
    s = text[start:end]
    if len(s) < SHAPES["secret_value"].min_chars or _REFERENCE_START.match(s):
        return False
    low = s.lower()
    if low in _STOP_VALUES or len(set(s)) <= 2:
        return False
    if any(w in low for w in _PLACEHOLDER_WORDS) or low.endswith("_here") or low.endswith("-here"):
        return False
    if _CODE_CALL.match(s) is not None or _CODE_NAME.fullmatch(s) is not None:
        return False
    # `password=passphrase` in code: an unquoted lower-case word after `=` is a variable
    # (YAML's `password: sunshine` is a value and stays masked).
    before = text[max(0, start - 3) : start].rstrip(" \t")
    return not (before.endswith("=") and _VARIABLE.fullmatch(s))


def keyword_value(text: str, start: int, end: int) -> bool:
    """The value after a keyword (`password: …`, `token=…`): a secret_value that is not
    code (code_shaped) and not in a Markdown link's URL (a meeting link's `pwd=`, a
    badge's `token=`)."""
    if not secret_value(text, start, end) or _in_markdown_url(text, start):
        return False
    s = text[start:end]
    quoted = text[start - 1 : start] in ("'", '"', "`")
    if _OPERATOR.search(s) or s.startswith(("/*", "//", "urn:")) or _file_path(s):
        return False  # `keySeq==i&&(…`, a comment, a URN, `/var/run/secrets/x.pem`
    if not quoted and any(c in s for c in "{(["):
        return False  # `key := packageFactKey{act.pass.Pkg, …}`: a composite literal, a call
    listed = text[max(0, start - 8) : start].replace(" ", "").endswith(('","', "','"))
    # unquoted, an identifier-shaped value is code (`withCredentials: defaultToConfig2,`,
    # `credentials: isCredentialsSupported ? …`), and so it is as the next of a list of
    # quoted names (`"password","encodeUsername"`); otherwise quoted, only a version, a
    # path or a property access is (`"^1.0.0"`, `"../lib/x.js"`): a word may be a password
    return not (code_shaped(s) and (not quoted or listed or _VERSION.fullmatch(s) or any(c in s for c in "./$")))


def token_value(text: str, start: int, end: int) -> bool:
    """The value after a generic `*_TOKEN=`, `*_SECRET:`, `*_API_KEY=` key: a secret_value
    of at least 8 characters, without spaces, with a letter, and with a digit unless it is
    20 characters or longer (`max_tokens: 4096`, `token_type: bearer`, `secret: my name`
    are not secrets; random tokens have digits); all digits from 16 on (numeric client
    secrets and ids); not a URL without credentials (`OAUTH_TOKEN_URL=https://…`: a URL
    that holds a password is URL_PASSWORD's)."""
    s = text[start:end]
    if len(s) < SHAPES["token_value"].min_chars or any(c.isspace() for c in s):
        return False
    if s.isdigit():
        return len(s) >= 16 and len(set(s)) > 3
    if not any(c.isalpha() for c in s) or (len(s) < 20 and not any(c.isdigit() for c in s)):
        return False
    if _URL_START.match(s) is not None or _KEBAB.fullmatch(s) is not None:
        return False
    return keyword_value(text, start, end)


# two or three lower-case words joined by `-` or `.` (`workload-identity-auth`,
# `my.app.secret`): a name; longer phrases (`my-super-secret-jwt-key`) are kept as values
_KEBAB = re.compile(r"[a-z]+(?:[-.][a-z]+){1,2}")


def mixed(text: str, start: int, end: int) -> bool:
    """A random-looking key with no fixed prefix (Mistral, Cohere): upper and lower case
    letters and digits all occur. Excludes hex digests, words and identifiers."""
    s = text[start:end]
    if _WORD_CHAIN.search(s):
        return False  # `0001-Fix-libdav1d-compilation-on-clang-ppc`: words, a file name
    return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)


_WORD_CHAIN = re.compile(r"(?:^|-)[A-Za-z]{2,}-[a-z]{2,}-[a-z]{2,}(?:-|$)")


# -- prefixed tokens whose body could be an identifier --------------------------------------

# A code identifier after a token-like prefix: camelCase or PascalCase words
# (`hf_requiredCharacteristicTypesForDisplayMetadata`). The body is cut into runs (upper
# case letters with the lower case ones after them, lower case, digits); an identifier's
# runs are all words (a capital or an acronym and 2+ lower case letters, an acronym alone,
# a short number). A random base62 body of 30+ characters has runs of one or two letters
# and passes that test with a probability far below one in a million.
_RUNS = re.compile(r"[A-Z]+[a-z]*|[a-z]+|[0-9]+")


def _wordy(run: str) -> bool:
    if run.isdigit():
        return len(run) <= 4
    low = len(run) - len(run.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    rest = len(run) - low
    return rest >= 2 or (rest == 0 and low >= 2)


def random_token(text: str, start: int, end: int) -> bool:
    """A prefixed token (`hf_…`) whose body, after the prefix, is not a code identifier
    made of two or more words (camelCase, PascalCase, words with a few digits)."""
    s = text[start:end]
    body = s[s.find("_", 0, 9) + 1 :]
    runs = _RUNS.findall(body)
    return len(runs) < 2 or not all(_wordy(r) for r in runs)


# -- a JWT written in base64 ---------------------------------------------------------------

_JWT_TEXT = re.compile(rb"ey[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.?")


def jwt_base64(text: str, start: int, end: int) -> bool:
    """Base64 whose decoded bytes begin with a JWT's header and payload (`eyJ….eyJ…`)."""
    s = text[start:end]
    s = s[: len(s) - len(s) % 4] if not s.endswith("=") else s
    try:
        raw = binascii.a2b_base64(s)
    except binascii.Error:
        return False
    return _JWT_TEXT.match(raw) is not None


# -- user:password pairs (URLs, curl -u) ---------------------------------------------------


def credential_pair(text: str, start: int, end: int) -> bool:
    """`user:password` as one span: the password (or, when it is empty, the user) passes
    secret_value; not a placeholder (`<user:password>`, `[PASSWORD]`, `{pw}`) or
    references (`$1:$2`, `${USER}:${PASS}`)."""
    s = text[start:end]
    if any(c in s for c in "<>[]{}"):
        return False
    user, _, pw = s.partition(":")
    if pw:
        return secret_value(text, start + len(user) + 1, end)
    return bool(user) and secret_value(text, start, start + len(user))


# -- US social security numbers -------------------------------------------------------------

# Numbers the SSA never issued or that were published as examples (Woolworth's wallet
# card 078-05-1120, the 1962 ad 219-09-9999).
_SSN_EXAMPLES = frozenset({"078051120", "219099999", "123456789"})


def ssn(text: str, start: int, end: int) -> bool:
    """A US social security number that can exist: area 001-899 but not 666, group 01-99,
    serial 0001-9999 (SSA's rules since 2011), not a published example, not one digit
    repeated."""
    d = "".join(c for c in text[start:end] if c.isdigit())
    if len(d) != 9 or d in _SSN_EXAMPLES or len(set(d)) == 1:
        return False
    area, group, serial = int(d[:3]), int(d[3:5]), int(d[5:])
    return 0 < area < 900 and area != 666 and group > 0 and serial > 0


# -- private IPv6 addresses -----------------------------------------------------------------


def ipv6_private(text: str, start: int, end: int) -> bool:
    """An IPv6 address (a zone id `%eth0` allowed) in fc00::/7 (unique local) or fe80::/10
    (link local)."""
    s = text[start:end].split("%", 1)[0]
    try:
        a = ipaddress.IPv6Address(s)
    except ValueError:
        return False
    return a in _ULA or a in _LINK_LOCAL


_ULA = ipaddress.IPv6Network("fc00::/7")
_LINK_LOCAL = ipaddress.IPv6Network("fe80::/10")


# -- base64 values (Kubernetes Secret data) ---------------------------------------------------


def base64_secret(text: str, start: int, end: int) -> bool:
    """Base64 that decodes to something worth hiding: printable text of 5+ bytes (a
    password, a token, a config file) or 16+ bytes of binary (a key, a certificate); not a
    word that happens to be valid base64 (`postgres`, `nginx123`)."""
    s = text[start:end]
    if len(s) % 4:
        return False
    try:
        raw = binascii.a2b_base64(s)
    except binascii.Error:
        return False
    try:
        t = raw.decode("utf-8")
    except UnicodeDecodeError:
        return len(raw) >= 16
    return len(raw) >= 5 and all(c.isprintable() or c in "\n\r\t" for c in t)


NAMES: dict[str, Check] = {
    "card": card,
    "iban": iban,
    "github_crc32": github_crc32,
    "phone": phone,
    "email": email,
    "secret_value": secret_value,
    "keyword_value": keyword_value,
    "token_value": token_value,
    "mixed": mixed,
    "random_token": random_token,
    "jwt_base64": jwt_base64,
    "credential_pair": credential_pair,
    "ssn": ssn,
    "ipv6_private": ipv6_private,
    "base64_secret": base64_secret,
}


class Shape(NamedTuple):
    """What every span a validator passes is like (necessary, never enough): at least
    `min_chars` characters, none of `never` (an RE2 class body), a digit (`\\p{N}`,
    which holds every str.isdigit() character) when shorter than `digit_below`. Read by
    accept.accept (a shorter span is rejected first) and accept.skip_regex; held to the
    validators by tests/rules/test_skip.py."""

    min_chars: int
    never: str = ""
    digit_below: int = 0


# every character str.isspace() takes, as an RE2 class body
_SPACES = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
# Most candidates of the key-anchored rules are short words or identifiers (`"key":
# "value"`, `auth: AuthTypes`): 650 a megabyte of a coding session, 6 accepted.
SHAPES: dict[str, Shape] = {
    "secret_value": Shape(4),
    "keyword_value": Shape(4),
    "token_value": Shape(8, _SPACES, 20),
}


def check(name: str, text: str, start: int, end: int) -> bool:
    """Run validator `name` (one of NAMES) on text[start:end]. Raises KeyError for an
    unknown name (the mapping loader refuses those first)."""
    return NAMES[name](text, start, end)
