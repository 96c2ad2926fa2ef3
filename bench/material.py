"""Text material: prose, literals with disguises, originals to sprinkle, delta cuts.

Everything is drawn from a random.Random the caller seeds, so a run is reproducible."""

from __future__ import annotations

import random
import re

WORDS = (
    "the a an of to in and or for with on by from that this these it is are was be can "
    "will should would could may might must not no yes all each every some any more most "
    "function method class module file files test tests config value values request "
    "response stream server client handler error errors cache database query index table "
    "field fields parser token tokens buffer output input string bytes list dict key keys "
    "update change changes fix fixes build run runs check checks call calls return returns "
    "first next last then when while after before because so but also only just still "
    "here there now new old same different simple small large fast slow safe correct "
    "path paths line lines loop case cases option options setting default event events "
    "user users data model models code logic state flow flows step steps result results "
    "look looks see seems read write reads writes add adds remove removes keep keeps "
    "handle handles parse parses load loads save saves use uses need needs make makes "
    "I I'll let's we you they their our its which what where how why"
).split()
NON_ASCII = ["—", "é", "→", "…", "naïve", "café", "✓"]
CODE_WORDS = "get_user parse_config load_rules stream_id retry_count max_tokens flush() feed() __init__ self.cache".split()

SYL_A = "kor vex tal mur bri dan sol quen fal dor mir ven lux tor nal pra gor sil bex kal rin har ost uml".split()
SYL_B = "ze ni tha lo ra pe qu wi ja yu fo ke".split()
NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil trent victor walter".split()
DOMAINS = "example.com example.org mail.example.net gmail.com outlook.com".split()
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rstr(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def make_literals(rng: random.Random, n: int) -> dict[str, str]:
    """n realistic literals (company, host, person, identifier, project names) with
    disguises in the style of examples/literals.yaml."""
    out: dict[str, str] = {}
    used_d: set[str] = set()

    def a(k: int) -> str:
        return "".join(rng.choice(SYL_A) for _ in range(k))

    def b(k: int) -> str:
        return "".join(rng.choice(SYL_B) for _ in range(k))

    i = 0
    while len(out) < n:
        i += 1
        kind = i % 5
        if kind == 0:
            o = f"{a(2).capitalize()} {rng.choice(['Systems', 'Analytics', 'Holdings', 'Health', 'Capital', 'Corp'])}"
            d = f"{b(3).capitalize()} Labs"
        elif kind == 1:
            o = f"{a(2)}-{rng.choice(['db', 'api', 'build', 'cache', 'auth'])}{rng.randint(1, 9)}.{a(2)}.internal"
            d = f"host-{i}.{b(2)}.example"
        elif kind == 2:
            o = f"{a(2).capitalize()} {a(2).capitalize()}"
            d = f"{b(2).capitalize()} {b(3).capitalize()}"
        elif kind == 3:
            o = f"{a(2)}_{rng.choice(['client', 'billing', 'sync', 'lookup', 'ledger', 'export'])}"
            d = f"{b(2)}_{rng.choice(['svc', 'tool', 'api'])}{i}"
        else:
            o = f"Project {a(2).capitalize()}"
            d = f"Project {b(3).capitalize()}"
        if o in out or d in used_d:
            continue
        out[o] = d
        used_d.add(d)
    return out


class Material:
    """Originals to sprinkle into requests and streams."""

    def __init__(self, rng: random.Random, literals: dict[str, str]) -> None:
        self.literals = literals
        self.lit_list = list(literals)
        self.emails = [
            f"{rng.choice(NAMES)}.{rng.choice(NAMES)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"
            for _ in range(40)
        ]
        self.aws = ["AKIA" + rstr(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) for _ in range(3)]
        self.ghp = "ghp_" + rstr(rng, ALNUM, 36)
        self.ant = "sk-ant-api03-" + rstr(rng, ALNUM + "_-", 60)
        self.jwt = "eyJhbGciOiJIUzI1NiJ9.eyJ" + rstr(rng, ALNUM, 40) + "." + rstr(rng, ALNUM + "_-", 43)
        body = "\n".join(rstr(rng, B64, 64) for _ in range(25))
        self.pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def prose(rng: random.Random, nchars: int, brackets: bool = False, nonascii: bool = True) -> str:
    """Assistant-style markdown prose. No '[' unless brackets=True."""
    out: list[str] = []
    size = 0
    while size < nchars:
        r = rng.random()
        if r < 0.08:
            s = "\n\n## " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))).capitalize() + "\n\n"
        elif r < 0.2:
            s = "\n- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        else:
            ws = [rng.choice(WORDS) for _ in range(rng.randint(6, 20))]
            if rng.random() < 0.3:
                ws[rng.randrange(len(ws))] = f"`{rng.choice(CODE_WORDS)}`"
            if rng.random() < 0.15:
                ws[rng.randrange(len(ws))] = str(rng.randint(2, 4096))
            if nonascii and rng.random() < 0.05:
                ws[rng.randrange(len(ws))] = rng.choice(NON_ASCII)
            if brackets and rng.random() < 0.25:
                ws[rng.randrange(len(ws))] = rng.choice(
                    ["[the docs](https://docs.example.com/x)", "`[1, 2, 3]`", "[see below]", "`items[0]`"]
                )
            if rng.random() < 0.2:
                ws.insert(rng.randint(1, len(ws) - 1), "**" + rng.choice(WORDS) + "**")
            s = " ".join(ws).capitalize() + rng.choice([".", ".", ".", ":", "!", "?"])
            s = (" " if out and not out[-1].endswith("\n") else "") + s
            if rng.random() < 0.15:
                s += "\n\n"
        out.append(s)
        size += len(s)
    return "".join(out)


def cut_points(rng: random.Random, text: str, lo: int = 5, hi: int = 40) -> list[int]:
    """Delta boundaries like a tokenizer's: 5-40 chars, mostly at a word start."""
    starts = [m.start() for m in re.finditer(r"(?<=\S)\s", text)]
    cuts = []
    pos = 0
    n = len(text)
    k = 0
    while pos < n:
        target = pos + rng.randint(lo, hi)
        if target >= n:
            break
        cut = target
        if rng.random() < 0.8:  # snap to the next word start within hi
            while k < len(starts) and starts[k] < target:
                k += 1
            if k < len(starts) and starts[k] <= pos + hi:
                cut = starts[k]
        cuts.append(cut)
        pos = cut
    return cuts


def pieces(text: str, cuts: list[int]) -> list[str]:
    cs = sorted(set(c for c in cuts if 0 < c < len(text)))
    out = []
    prev = 0
    for c in cs:
        out.append(text[prev:c])
        prev = c
    out.append(text[prev:])
    return [p for p in out if p]



# Disguises that are ordinary words and identifiers, beginning with the letters prose
# begins words with most (t a s c p f r m d b): the hard case for hold-back, since many
# deltas end in a possible start of one (issue 8: `nova`, `fetch_record`, `acct_ref`).
ORDINARY_HEADS = (
    "nova tango atlas sable cobalt pylon falcon ridge maple birch delta comet drift ember "
    "fable harbor lumen meadow orbit prism quartz raven summit timber velvet willow acorn "
    "beacon cedar dune"
).split()
ORDINARY_IDENTS = (
    "fetch_record acct_ref sync_batch parse_row table_map send_note cache_key file_ref "
    "task_id run_step path_ref core_sum data_tag meta_row batch_ref tally_set row_hash "
    "plan_ref scope_id marker_set"
).split()


def ordinary_literals(rng: random.Random, n: int) -> dict[str, str]:
    """n literals (original -> disguise) whose disguises are ordinary words and snake_case
    identifiers, none of them a word of the prose WORDS (some begin with another: `nova`,
`nova_ref`)."""
    disguises: list[str] = list(dict.fromkeys(ORDINARY_HEADS + ORDINARY_IDENTS))
    while len(disguises) < n:
        d = f"{rng.choice(ORDINARY_HEADS)}_{rng.choice(['ref', 'id', 'log', 'map', 'set', 'row', 'key', 'tag'])}"
        if d not in disguises:
            disguises.append(d)
    disguises = disguises[:n]
    words = set(WORDS)
    assert not words & set(disguises)
    out: dict[str, str] = {}
    for i, d in enumerate(disguises):
        syl = "".join(rng.choice(SYL_A) for _ in range(2))
        out[f"{syl.capitalize()}{rng.choice(['Corp', 'DB', 'Prod', 'Ledger', 'Vault'])}{i}"] = d
    return out


def loadable(literals: dict[str, str]) -> dict[str, str]:
    """literals less those the load would refuse beside the others (rules/overlaps.py: a
    disguise that, joined at a word's edge with the text beside it, spells an original):
    two sets drawn apart (make_literals, ordinary_literals) can meet that way, and a
    bench's mitmdump would then refuse to start. The later literal of each such pair goes."""
    from disguiselib.errors import MappingError
    from disguiselib.rules import overlaps
    from disguiselib.rules.mappings import Literal

    out = dict(literals)
    while True:
        lits = [Literal(o, d, f"#{i}#") for i, (o, d) in enumerate(out.items())]
        try:
            overlaps.joined(lits)
        except MappingError as e:
            a, b = (int(x) for x in re.findall(r"#(\d+)#", str(e))[:2])
            del out[lits[max(a, b)].original]
            continue
        return out
