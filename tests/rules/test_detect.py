"""Shipped detection: the labelled corpus and the per-rule options (the validators' own
tests are in test_validators.py).

The corpus test is the regression guard for mappings/default.yaml: it fails on any
partial mask, any masked negative that would break work, and recall below what the
shipped rules reach. bench/detect.py prints the same measurement in full.
"""

from __future__ import annotations

import binascii
import importlib.util
import re

import pytest
import regex

from conftest import REPO
from disguiselib.errors import MappingError
from disguiselib.rules import mappings, validators
from disguiselib.rules.rules import Rules, Session

_spec = importlib.util.spec_from_file_location("detect", REPO / "bench" / "detect.py")
assert _spec is not None and _spec.loader is not None
detect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(detect)

# What the shipped rules reach on the corpus (bench/detect.py): issue 17's target.
RECALL_FLOOR = 0.99


@pytest.fixture(scope="module")
def default_rules() -> Rules:
    return Rules(mappings.load(REPO / "mappings"))


def test_corpus_recall_no_partials_no_breaking_false_positives(default_rules: Rules) -> None:
    pos, neg = detect.load_corpus()
    res = detect.measure(default_rules, pos, neg)
    s = detect.summary(res, pos, neg)
    assert res["partials"] == [], "partial masks leak the rest of a secret"
    breaking = [f for f in res["fps"] if f["breaks"]]
    assert breaking == [], "masked in negatives that would break work"
    assert res["not_intact"] == [], "mask_body changed bytes outside the record"
    assert res["disagree"] == [], "mask_body and Rules.find disagree"
    assert s["recall"] >= RECALL_FLOOR, f"recall {s['recall']:.3f}; missed: {res['misses']}"
    assert s["kinds"] >= 200 and s["negatives"] >= 500


def test_corpus_labels_are_consistent() -> None:
    pos, neg = detect.load_corpus()
    assert len({r["id"] for r in pos + neg}) == len(pos) + len(neg)
    for r in pos:
        for a, b in r["spans"]:
            assert 0 <= a < b <= len(r["text"])
    for r in neg:
        for x in r.get("allowed", ()):
            assert x in r["text"]


def test_every_shipped_pattern_compiles_with_re2_and_regex() -> None:
    re2 = pytest.importorskip("re2")
    ms = mappings.load(REPO / "mappings")
    for p in ms.patterns:
        # `\x{hhhh}` is RE2's spelling of a code point; the regex module's is `\Uhhhhhhhh`
        regex.compile(re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m.group(1), 16):08x}", p.regex))
        rx = re2.compile(p.regex)
        for g in p.group:
            assert g == 0 or (g in rx.groupindex if isinstance(g, str) else g <= rx.groups), p.name
    for s in ms.strips:
        re2.compile(s.regex)


# -- the issue's cases, one by one ---------------------------------------------------------


def _crc_token(prefix: str, body: str) -> str:
    return prefix + body + validators._base62(binascii.crc32(body.encode()), 6)


@pytest.mark.parametrize(
    "text, secret, rule",
    [
        ('{"out": "a\\nsk-proj-' + "A" * 30 + 'xyz"}', "sk-proj-" + "A" * 30 + "xyz", "OPENAI_KEY"),
        ("x\\tsk-ant-api03-" + "b" * 40, "sk-ant-api03-" + "b" * 40, "ANTHROPIC_KEY"),
        ("token_" + _crc_token("ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5"), _crc_token("ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5"), "GITHUB_PAT"),
        ("write to josé.garcía@exemple.fr today", "josé.garcía@exemple.fr", "EMAIL"),
        ("mail o'malley@dublin-tech.ie", "o'malley@dublin-tech.ie", "EMAIL"),
        ("DATABASE_URL=postgres://app:s3cr*t#x@localhost:5432/db", "app:s3cr*t#x", "URL_PASSWORD"),
        ("amqp://worker:Zq8#mLp*2@rabbitmq:5672/", "worker:Zq8#mLp*2", "URL_PASSWORD"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx9fJ2bq0m1ZcYtQ6r8sL3vH5nK2pW7dE4gF1aB0cX9yZ8uT6\nq", None, "PRIVATE_KEY"),
        ("Authorization: Basic c3ZjOnA0c3N3MHJkITIz", "c3ZjOnA0c3N3MHJkITIz", "BASIC_AUTH"),
        ("aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY1", "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY1", "AWS_SECRET_KEY"),
        ("AccountKey=" + "Ab1+" * 22 + "==;EndpointSuffix", "Ab1+" * 22 + "==", "AZURE_STORAGE_KEY"),
        ("password: 'p4ss word!'", "p4ss word!", "PASSWORD"),
        # issue 17: the assignment forms the keyword rules missed
        ('var sentryToken string = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('SENTRY_TOKEN ?= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('SENTRY_TOKEN ::= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('SENTRY_TOKEN :::= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('$sentryToken .= "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('System.setProperty("SENTRY_TOKEN", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8")', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ("<sentryToken>\n    Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8\n</sentryToken>", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8", "SECRET"),
        ('<add key="ClearTextPassword" value="Tr0ub4dor&3x" />', "Tr0ub4dor&3x", "PASSWORD"),
        ("curl --cacert ca.crt -u elastic:P@ssw0rd$1 https://localhost:9200", "elastic:P@ssw0rd$1", "BASIC_AUTH"),
        ("https://cafebabe:deadbeef@gems.contribsys.com/", "cafebabe:deadbeef", "URL_PASSWORD"),
        # formats with a prefix or structure, on their own
        ("token sntryu_" + "ab12" * 16 + " ok", "sntryu_" + "ab12" * 16, "SENTRY_TOKEN"),
        ("use HRKU-AA" + "x9_Y" * 14 + "zz now", "HRKU-AA" + "x9_Y" * 14 + "zz", "HEROKU_KEY"),
        ("PMAK-" + "a1" * 12 + "-" + "b2" * 17, "PMAK-" + "a1" * 12 + "-" + "b2" * 17, "POSTMAN_KEY"),
        ("SSN 536-22-8190 on file", "536-22-8190", "US_SSN"),
        ("inet6 fd12:3456:789a::1/64 scope global", "fd12:3456:789a::1", "PRIVATE_IPV6"),
        ("ping6 fe80::1c2b:3aff:fe4d:5e6f%eth0", "fe80::1c2b:3aff:fe4d:5e6f%eth0", "PRIVATE_IPV6"),
        ("Cookie: theme=dark; PHPSESSID=9f8e7d6c5b4a39281706f5e4d3c2b1a0; lang=en", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "SESSION_COOKIE"),
        ("Kontakt: अजय@डाटामेल.भारत", "अजय@डाटामेल.भारत", "EMAIL"),
        ("Phone: (415) 555-2671", "(415) 555-2671", "PHONE_NATIONAL"),
    ],
)
def test_masks_exactly_the_secret(default_rules: Rules, text: str, secret: str | None, rule: str) -> None:
    found = default_rules.find(text)
    assert [f[0] for f in found] == [rule]
    _, a, b = found[0]
    if secret is None:  # a PEM cut off without its END line: everything from BEGIN on
        assert (a, b) == (0, len(text))
    else:
        assert text[a:b] == secret


@pytest.mark.parametrize(
    "text",
    [
        '<img src="logo@2x.png" srcset="icon@3x.webp 3x">',
        "git clone git@github.com:acme/payments-service.git",
        "val i = Intent(this@MainActivity, X::class.java); this@MainActivity.startActivity(i)",
        "h = x@self.weight.T + self.bias",
        "root@web-01:~# ls; ssh ec2-user@ec2-3-92-14-101.compute-1.amazonaws.com",
        '<span class="sk-toggleable__label-arrow"></span>',
        "https://example.com/technology/sk-hynix-shares-hit-record-high-ai-chip-demand-2024-05-14/",
        'if line == "-----BEGIN RSA PRIVATE KEY-----":\n    body = rest.split("-----END RSA PRIVATE KEY-----")[0]',
        'password = os.environ["DB_PASSWORD"]\ntoken = request.headers.get("Authorization")',
        '{"usage": {"input_tokens": 10240, "output_tokens": 4096}, "max_tokens": 8192}',
        # issue 17's false positives
        "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
        'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
        "tokenizer = AutoTokenizer.from_pretrained('gpt2-tokenizer-v2')",
        "invalid: 666-12-3456 and 900-45-6789; part 123-00-4567",
        "2001:db8::1 and ::1 are not private",
        "Set-Cookie: PHPSESSID=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT",
        'curl -u <user:password> https://test.com/endpoint; curl -sL --user "$1:$2" "$3"',
        'var apiToken string = os.Getenv("API_TOKEN")',
    ],
)
def test_issue_false_positives_are_kept(default_rules: Rules, text: str) -> None:
    assert default_rules.find(text) == []



# Every character Python's str.isspace() takes but the line breaks (which the rules
# handle as such): what the validators read as whitespace. RE2's `\s` is only
# `[\t\n\f\r ]`, so a key-value rule that spelled its separators `[ \t]` and its value
# `[^\s...]` took `"deploy_token":\x0bvalue`'s vertical tab into the value, the validator
# then rejected the match (a value with a space is no token) and nothing was masked.
_SPACES = [chr(i) for i in range(0x110000) if chr(i).isspace() and chr(i) not in "\r\n"]
_V = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"
_AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"
_KEY_VALUE = [
    ('"deploy_token":{c}{v}', _V, "SECRET"),
    ('"deploy_token":{c}"{v}"', _V, "SECRET"),
    ("deploy_token={c}{v}", _V, "SECRET"),
    ("DEPLOY_TOKEN:{c}{v}", _V, "SECRET"),
    ("DEPLOY_TOKEN={v}{c}next", _V, "SECRET"),
    ("password:{c}{v}", _V, "PASSWORD"),
    ('"password":{c}"{v}"', _V, "PASSWORD"),
    ("password={c}{v}", _V, "PASSWORD"),
    ("aws_secret_access_key ={c}{v}", _AWS, "AWS_SECRET_KEY"),
    ("PHPSESSID={v}{c}x", _V, "SESSION_COOKIE"),
    ("Authorization:{c}Bearer{c}{v}", _V, "AUTH_HEADER"),
    ("x-api-key:{c}{v}", _V, "AUTH_HEADER"),
    ("AccountKey={c}{v}", _V, "AZURE_STORAGE_KEY"),
    ("BUNDLE_GEMS__CONTRIBSYS__COM:{c}{v}", "cafebabe:deadbeef", "BUNDLER_CREDENTIALS"),
    ("curl{c}-u{c}{v} https://localhost:9200", "elastic:P@ssw0rd$1", "BASIC_AUTH"),
]


@pytest.mark.parametrize("form, value, rule", _KEY_VALUE)
def test_key_value_rules_take_any_whitespace_as_a_separator_never_into_the_value(
    default_rules: Rules, form: str, value: str, rule: str
) -> None:
    missed = []
    for c in _SPACES:
        text = form.format(c=c, v=value)
        got = [(name, text[a:b]) for name, a, b in default_rules.find(text)]
        if (rule, value) not in got:
            missed.append((c, got))
    assert not missed, f"{rule} leaves the value unmasked (or masks a space with it) after: {missed}"

# -- per-rule options: parsing -------------------------------------------------------------


@pytest.mark.parametrize(
    "item, reason",
    [
        ({"name": "X", "regex": "a(b)", "group": 2}, "not a group"),
        ({"name": "X", "regex": "a(?P<v>b)", "group": "w"}, "not a group"),
        ({"name": "X", "regex": "ab", "group": [True]}, "group must be"),
        ({"name": "X", "regex": "ab", "validator": "crc64"}, "validator must be one of"),
        ({"name": "X", "regex": "ab", "keywords": []}, "keywords must be"),
        ({"name": "X", "regex": "ab", "keywords": ["k"], "window": 0}, "window must be"),
        ({"name": "X", "regex": "ab", "keywords": ["k"], "window": 5000}, "window must be"),
        ({"name": "X", "regex": "ab", "window": 10}, "only applies with keywords"),
        ({"name": "X", "regex": "ab", "flags": "i"}, "an unknown key"),
    ],
)
def test_option_refusals_name_the_rule(item: dict, reason: str) -> None:
    with pytest.raises(MappingError) as e:
        mappings.from_dict({"patterns": [item]}, "user.yaml")
    assert reason in str(e.value) and "user.yaml: pattern #1" in str(e.value)


def _rules(*items: dict) -> Rules:
    return Rules(mappings.from_dict({"patterns": list(items)}))


def test_group_masks_only_its_span_and_the_rest_of_the_match_stays() -> None:
    r = _rules({"name": "PIN", "regex": r"pin[:=] ?(?P<v>[0-9]{4,})", "group": "v"})
    s = Session()
    assert r.mask("pin: 83921 and pin=4471", s) == "pin: [PIN_1] and pin=[PIN_2]"
    assert s.placeholders == {"[PIN_1]": "83921", "[PIN_2]": "4471"}


def test_group_list_takes_the_first_that_took_part() -> None:
    r = _rules({"name": "V", "regex": r'v="(?P<q>[^"]+)"|v=(?P<u>\S+)', "group": ["q", "u"]})
    assert [(a, b) for _, a, b in r.find('v="a b" v=cd')] == [(3, 6), (10, 12)]


def test_a_rejected_candidate_is_searched_again_from_its_start_plus_one() -> None:
    # the first candidate "9999 1234" fails the validator; the overlapping "1234 5678"
    # that starts inside it must still be found
    r = _rules({"name": "N", "regex": r"[0-9]{4} [0-9]{4}", "validator": "secret_value"})
    assert r.find("9999 1234 5678") == [("N", 0, 9)]
    card = "4539 1488 0343 6467"
    assert validators.card(card, 0, len(card))
    r = _rules({"name": "C", "regex": r"[0-9]{4}(?: [0-9]{4}){3}", "validator": "card"})
    text = "1111 " + card
    assert [text[a:b] for _, a, b in r.find(text)] == [card]


def test_leftmost_is_decided_by_the_masked_span_and_ties_by_rule_order() -> None:
    ctx = {"name": "CTX", "regex": r"key=(?P<v>[a-z0-9]+)", "group": "v"}
    tok = {"name": "TOK", "regex": r"tok[0-9]+"}
    assert [n for n, _, _ in _rules(tok, ctx).find("key=tok42")] == ["TOK"]
    assert [n for n, _, _ in _rules(ctx, tok).find("key=tok42")] == ["CTX"]
    # CTX's match starts at "key" but its span at 12; TOK at 4 is leftmost
    assert [n for n, _, _ in _rules(ctx, tok).find("see tok7 or key=abc")] == ["TOK", "CTX"]


def test_keywords_must_occur_within_the_window_case_insensitively() -> None:
    item = {"name": "K", "regex": r"[A-Za-z0-9]{12}", "keywords": ["Mistral"], "window": 10}
    r = _rules(item)
    assert r.find("MISTRAL=abcdef123456") != []
    assert r.find("mistral" + " " * 20 + "abcdef123456") == []
    assert r.find("abcdef123456 mistral") != []


def test_user_rules_get_the_same_validators(tmp_path) -> None:
    f = tmp_path / "local.yaml"
    f.write_text(
        "patterns:\n  - name: ACCOUNT\n    regex: '(?:^|[^A-Z0-9])(?P<i>[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30})'\n"
        "    group: i\n    validator: iban\n"
    )
    r = Rules(mappings.load(f))
    assert [n for n, _, _ in r.find("to DE89370400440532013000 not DE89370400440532013001")] == ["ACCOUNT"]


def test_docs_table_matches_the_script(default_rules: Rules) -> None:
    """docs/detection.md (linked from the README's list) is the script's output: the same
    headline and exactly the per-kind table `bench/detect.py --markdown` prints."""
    doc = (REPO / "docs" / "detection.md").read_text(encoding="utf-8")
    pos, neg = detect.load_corpus()
    res = detect.measure(default_rules, pos, neg)
    s = detect.summary(res, pos, neg)
    assert detect._headline(s) in doc
    assert detect.kind_table(res) in doc


def test_every_kind_has_two_true_and_two_false_examples() -> None:
    """Issue 17: each kind it adds has at least two labelled true examples and two false
    ones (`false_<kind>` negatives); every older kind at least two true ones."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "corpus"))
    import formats

    pos, neg = detect.load_corpus()
    true_n: dict[str, int] = {}
    for r in pos:
        true_n[r["kind"]] = true_n.get(r["kind"], 0) + len(r["spans"])
    false_n: dict[str, int] = {}
    for r in neg:
        if r["category"].startswith("false_"):
            false_n[r["category"][6:]] = false_n.get(r["category"][6:], 0) + 1
    assert all(n >= 2 for n in true_n.values()), {k: n for k, n in true_n.items() if n < 2}
    for kind in [*formats.FORMATS, *formats.KEYED]:
        assert true_n.get(kind, 0) >= 2 and false_n.get(kind, 0) >= 2, kind
    assert len(false_n) >= 140




# -- issue 28: the misses it lists, masked whole; the code it lists, kept -------------------

_AZ = "Zm9vYmFy" * 10 + "dGVzdGluZzEyMw8="[:6] + "=="  # 86 base64 characters and `==`
_R32 = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHzn8"


@pytest.mark.parametrize(
    "text, secret, rule",
    [
        *[(f"{n}={_R32}", _R32, "SECRET") for n in ("STRIPE_KEY", "SENDGRID_KEY", "ALGOLIA_KEY", "MAPS_KEY", "DEPLOY_KEY",
                                                    "SERVICE_KEY", "STORAGE_KEY", "ACCOUNT_KEY", "SDK_KEY", "PRIMARY_KEY",
                                                    "COSMOS_KEY", "KEY")],
        (f"maps:\n  mapsKey: {_R32}\n", _R32, "SECRET"),
        (f"DB_PASS={_R32}", _R32, "PASSWORD"),
        (f'[{{"keyName": "key1", "permissions": "FULL", "value": "{_AZ}"}}]', _AZ, "AZURE_STORAGE_KEY"),
        (f"az storage blob list --account-key {_AZ}", _AZ, "AZURE_STORAGE_KEY"),
        (f"AZURE_STORAGE_KEY={_AZ}", _AZ, "SECRET"),
        (f"account_key={_AZ}", _AZ, "SECRET"),
        ("REDIS_URL=redis://default:$Xk9LHQ7AtNJX3OrUbmkLCNP@cache:6379/0", "default:$Xk9LHQ7AtNJX3OrUbmkLCNP", "URL_PASSWORD"),
        ("key sdk-lolc4okd-ihul-4m9c-03wy-enpxawzr0h9x here", "sdk-lolc4okd-ihul-4m9c-03wy-enpxawzr0h9x", "LAUNCHDARKLY_KEY"),
        ("admin key ATCTT3xFfGN0" + "aB3_x" * 40 + " ok", "ATCTT3xFfGN0" + "aB3_x" * 40, "ATLASSIAN_TOKEN"),
        ("eu01xx3e7cefa30c14d732f64cb79abcc4b9NRAL", "eu01xx3e7cefa30c14d732f64cb79abcc4b9NRAL", "NEW_RELIC_KEY"),
        ("key phx_ZOB92xHcLKnVlzegcclm_mcF47EQWwaBEt47N6BuDDgmjPk ok", "phx_ZOB92xHcLKnVlzegcclm_mcF47EQWwaBEt47N6BuDDgmjPk", "POSTHOG_KEY"),
        ("sq EAAAex3y34EjJqhr0kWsRpcE5cw7Wxu8dSbRDE28jhYQ=usDRpUkcmTbKoQfNz6T ok", "EAAAex3y34EjJqhr0kWsRpcE5cw7Wxu8dSbRDE28jhYQ=usDRpUkcmTbKoQfNz6T", "SQUARE_ACCESS_TOKEN"),
        ("secret -Ab8Q~UNx7UKi7uEwAf3Ia7h50vfeSmjE_l8gFg~x ok", "-Ab8Q~UNx7UKi7uEwAf3Ia7h50vfeSmjE_l8gFg~x", "AZURE_CLIENT_SECRET"),
        ("t ghs_" + "aB3x_" * 18 + "Zq ok", "ghs_" + "aB3x_" * 18 + "Zq", "GITHUB_TOKEN"),
        ("my token nfp_pdTmYs4x4geAXuyWXJa5sP8WiKbCj0SPY9bU for netlify", "nfp_pdTmYs4x4geAXuyWXJa5sP8WiKbCj0SPY9bU", "NETLIFY_TOKEN"),
        ("IBAN DE89-3704-0044-0532-0130-00", "DE89-3704-0044-0532-0130-00", "IBAN"),
        ("Please pay to GB82 WEST 1234 5698 7654 32 by Friday.", "GB82 WEST 1234 5698 7654 32", "IBAN"),
        ("TWILIO_ACCOUNT_SID=AC1d83c4a29548fa91200314bd807d4b6a", "AC1d83c4a29548fa91200314bd807d4b6a", "SECRET"),
        (f'env:\n  - name: POSTGRES_PASSWORD\n    value: "{_R32}"\n', _R32, "PASSWORD"),
        (f"mysql -h db -u root -p'{_R32}' app", _R32, "PASSWORD"),
        ("SSN: 536.22.8190", "536.22.8190", "US_SSN_UNFORMATTED"),
        ("SSN 536 22 8190", "536 22 8190", "US_SSN_UNFORMATTED"),
        ("My US number is (415) 555-0132", "(415) 555-0132", "PHONE_NATIONAL"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.ab/cd+ef_Zz9", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.ab/cd+ef_Zz9", "JWT"),
        ("url = 'https://[::ffff:10.1.2.3]:8080/'", "::ffff:10.1.2.3", "PRIVATE_IP"),
    ],
)
def test_issue28_misses_are_masked_whole(default_rules: Rules, text: str, secret: str, rule: str) -> None:
    found = default_rules.find(text)
    assert [(n, text[a:b]) for n, a, b in found] == [(rule, secret)]


@pytest.mark.parametrize(
    "text",
    [
        "golang.org/x/mobile v0.0.0-20190312151609-d3739f865fa6/go.mod h1:z+o9i4GpDbdi3rU15maQ/Ox0txvL9dWGYEHz965HBQE=",
        "golang.org/x/telemetry v0.0.0-20240521205824-bda55230c457 // indirect",
        "[telegram-client] released 2025-03-14",
        "- add callbacks 0.7.0 (2011-10-22)",
        "- CVE-2023-27533: TELNET option IAC injection",
        "call outputs in responses ([4105376](https://github.com/o/r/commit/4105376))",
        "if(!Number.isSafeInteger(t)||t<0||t>4294967295)return null",
        "http://user:pass@httpbin.org/get",
        "hTTp://u:p@Some.Host/path",
        "https://us@r:p@ssword@postman-echo.com",
        "  withCredentials: defaultToConfig2,\n  cancelToken: defaultToConfig2,",
        "credentials: isCredentialsSupported ? withCredentials : undefined,",
        "request.withCredentials = !!_config.withCredentials;",
        '"sources":["../lib/cancel/CancelToken.js","../lib/helpers/HttpStatusCode.js"]',
        '"node_modules/parse-passwd": "^1.0.0",',
        '"names":["auth","username","password","encodeUsername","btoa"]',
        "{'x-amz-security-token': self.credentials.token}",
        "'ec2_credential_refresh_window': _DEFAULT_ADVISORY_REFRESH_TIMEOUT,",
        "        password: bool = False,",
        "\tkey := packageFactKey{act.pass.Pkg, factType(fact)}",
        "var CancelToken = /*#__PURE__*/function () {",
        '_STS_SUBJECT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"',
        '_GKE_CREDENTIAL_BUNDLE_PATH = "/var/run/secrets/workload-spiffe-credentials/x509.credential-bundle.pem"',
        't.Fatalf("failed to run godoc -url=%q: %s", url, err)',
        "ppc64le/third_party/0001-Fix-libdav1d-compilation-on-clang-ppc.patch",
        "mhu = MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
        "[Join the call](https://zoom.us/j/123456789?pwd=0f8fad5b-d9cb-469f-a165-70867728950e)",
        "[![codecov](https://codecov.io/gh/o/r/branch/main/graph/badge.svg?token=ABCD1234XY)](https://codecov.io/gh/o/r)",
        "e.state.keySeq==i&&(e.state.keySeq=null",
    ],
)
def test_issue28_code_and_urls_are_kept(default_rules: Rules, text: str) -> None:
    assert default_rules.find(text) == []
