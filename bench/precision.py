"""Precision of a rule set on real text: what it masks in tests/corpus/real/ (lockfiles,
go.sum, source, minified JS, a source map, notebooks, Markdown, changelogs, CI configs,
logs taken from registry packages; SOURCES.md there), per file type.

Every mask is one of:

- *labelled* in tests/corpus/real/LABELS.json: real personal data or key material
  (`personal`, `secret`: masking it is right), or documentation example data with the
  exact form of the real thing (`example`: an example e-mail or password in a docstring,
  a private IP in a changelog; no rule can tell it from a real one);
- a *false positive*, and *breaking* when its context says it is part of something code
  or a tool needs whole (`breaking_class`): inside a URL's host or path, a version, a
  hash/digest/UUID, an identifier (cut inside a word, or a name), a property access, a
  file path.

`python bench/detect.py` prints the table; tests/rules/test_detect_real.py holds the
targets (breaking ≤ 1 per MB, all false positives ≤ 5 per MB).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "tests" / "corpus" / "real"

# Targets (issue 28), per MB of real text.
BREAKING_PER_MB = 1.0
FP_PER_MB = 5.0


def load_real(root: Path = REAL) -> list[tuple[str, str, str]]:
    """(file type, path relative to root, text) of every file in root's sub-folders."""
    out = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.parent != root:
            out.append((f.relative_to(root).parts[0], str(f.relative_to(root)), f.read_text(encoding="utf-8")))
    return out


def load_labels(root: Path = REAL) -> dict[str, dict[str, str]]:
    """path -> {masked text: label}."""
    raw = json.loads((root / "LABELS.json").read_text(encoding="utf-8"))
    return {path: {t: e["label"] for e in entries for t in e["texts"]} for path, entries in raw["files"].items()}


# -- what a mask is inside -------------------------------------------------------------------

_TOKEN_STOP = set(" \t\r\n\"'`<>(){};|")
_IDENT = re.compile(r"[A-Za-z0-9_$]")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_VERSION = re.compile(r"(?:^|[^A-Za-z0-9])v?[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:[-+][0-9A-Za-z.-]+)?")
_PSEUDO = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+-(?:0\.)?[0-9]{14}-[0-9a-f]{12}")
_NUMERIC = re.compile(r"[~^=<>(]*v?[0-9][0-9A-Za-z.+()-]*")
_NAME = re.compile(r"[!&*]*[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)*[})]?|[A-Z]+(?:-[0-9]+)+")
_TICKET = re.compile(r"[A-Z]+(?:-[0-9]+)+")
_PATH = re.compile(r"(?:\.{0,2}/|~/)?(?:[A-Za-z0-9_.@-]+/)+[A-Za-z0-9_.@-]+")
_IPV4 = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_HEX = re.compile(r"[0-9a-fA-F]{16,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGEST = re.compile(r"(?i)(?:sha(?:1|256|384|512)[-:=]|h1:|md5[-:=]|integrity)")


def _token(text: str, a: int, b: int) -> tuple[int, int]:
    """The run of non-space, non-quote, non-bracket characters around text[a:b]."""
    lo, hi = a, b
    while lo > 0 and text[lo - 1] not in _TOKEN_STOP:
        lo -= 1
    while hi < len(text) and text[hi] not in _TOKEN_STOP:
        hi += 1
    return lo, hi


def _wordy(s: str) -> bool:
    """s is made of words (`defaultToConfig2`, `self.credentials.token`), not random: no
    one-letter run, three letters a run on average (`Zf3D0LXCM3…` has `f`, `D`)."""
    runs = _RUNS.findall(s)
    return bool(runs) and all(len(r) >= 2 for r in runs) and sum(map(len, runs)) >= 3 * len(runs)


def breaking_class(text: str, a: int, b: int) -> str | None:
    """Why masking text[a:b] breaks what it is in or what it is (a URL's host or path, a
    version, a hash, a property access, an identifier: cut inside a word, or a name in
    code — dotted, snake_case, camelCase, `name2`, `CVE-2025-1`; a path), or None."""
    lo, hi = _token(text, a, b)
    tok, s = text[lo:hi], text[a:b]
    u = _URL.search(tok)
    if u is not None and u.end() <= a - lo:
        auth_end = min([i for i in (tok.find(c, u.end()) for c in "/?#") if i >= 0], default=len(tok))
        userinfo_end = tok.rfind("@", u.end(), auth_end)
        if not (userinfo_end >= 0 and b - lo <= userinfo_end):  # not only the user-info
            return "url"
    in_version = any(m.start() <= b - lo and m.end() >= a - lo for m in _VERSION.finditer(tok))
    if _PSEUDO.search(tok) or (in_version and _NUMERIC.fullmatch(s) and not _IPV4.fullmatch(s)):
        return "version"
    if _UUID.search(s) or _HEX.fullmatch(s) or _DIGEST.search(text[max(0, lo - 16) : a]):
        return "hash"
    before, after = text[a - 1 : a], text[b : b + 1]
    if before == "." and a >= 2 and _IDENT.match(text[a - 2]) or after in ("(", "[") or (
        after == "." and _IDENT.match(text[b + 1 : b + 2] or " ")
    ):
        return "property"
    glued = (before == "-" and _IDENT.match(text[a - 2 : a - 1] or " ")) or (after == "-" and _IDENT.match(text[b + 1 : b + 2] or " "))
    if glued or (before and _IDENT.match(before)) or (after and _IDENT.match(after)) or _NAME.fullmatch(s) and (
        (re.search(r"[._$]|[a-z][A-Z]|[A-Za-z][0-9]+$", s) and _wordy(s)) or _TICKET.fullmatch(s)
    ):
        return "identifier"
    if _PATH.fullmatch(s):
        return "path"
    return None


def measure(rules, files: list[tuple[str, str, str]], labels: dict[str, dict[str, str]]) -> dict:
    """Per file type: bytes, masks, labelled masks by label, false positives, breaking
    ones by class; and every false positive with its context."""
    types: dict[str, dict] = defaultdict(lambda: {"bytes": 0, "files": 0, "masks": 0, "fp": 0, "breaking": 0,
                                                  "labelled": defaultdict(int), "classes": defaultdict(int)})
    fps: list[dict] = []
    for kind, path, text in files:
        t = types[kind]
        t["bytes"] += len(text.encode())
        t["files"] += 1
        known = labels.get(path, {})
        for rule, a, b in rules.find(text):
            t["masks"] += 1
            lab = known.get(text[a:b])
            if lab is not None:
                t["labelled"][lab] += 1
                continue
            cls = breaking_class(text, a, b)
            t["fp"] += 1
            if cls:
                t["breaking"] += 1
                t["classes"][cls] += 1
            fps.append({"path": path, "rule": rule, "class": cls, "masked": text[a:b],
                        "context": text[max(0, a - 40) : a] + "⟦" + text[a:b] + "⟧" + text[b : b + 30]})
    return {"types": dict(types), "fps": fps}


def totals(res: dict) -> dict:
    ts = res["types"].values()
    mb = sum(t["bytes"] for t in ts) / 1e6
    lab: dict[str, int] = defaultdict(int)
    for t in ts:
        for k, n in t["labelled"].items():
            lab[k] += n
    return {"mb": mb, "masks": sum(t["masks"] for t in ts), "fp": sum(t["fp"] for t in ts),
            "breaking": sum(t["breaking"] for t in ts), "labelled": dict(lab)}


def table(res: dict) -> str:
    rows = [f"{'file type':16} {'files':>5} {'MB':>6} {'masks/MB':>9} {'labelled':>9} {'FP/MB':>7} {'breaking/MB':>12}  classes"]
    for kind in sorted(res["types"]):
        t = res["types"][kind]
        mb = t["bytes"] / 1e6
        lab = sum(t["labelled"].values())
        cls = ", ".join(f"{k} {n}" for k, n in sorted(t["classes"].items()))
        rows.append(f"{kind:16} {t['files']:5} {mb:6.2f} {t['masks'] / mb:9.1f} {lab:9} {t['fp'] / mb:7.1f} "
                    f"{t['breaking'] / mb:12.1f}  {cls}")
    s = totals(res)
    lab = ", ".join(f"{k} {n}" for k, n in sorted(s["labelled"].items()))
    rows.append(f"{'all':16} {sum(t['files'] for t in res['types'].values()):5} {s['mb']:6.2f} "
                f"{s['masks'] / s['mb']:9.1f} {sum(s['labelled'].values()):9} {s['fp'] / s['mb']:7.1f} "
                f"{s['breaking'] / s['mb']:12.1f}  labelled: {lab}")
    return "\n".join(rows)


def headline(res: dict) -> str:
    s = totals(res)
    ex = s["labelled"].get("example", 0)
    return (f"real text: {s['mb']:.2f} MB, {s['masks'] / s['mb']:.1f} masks/MB; false positives "
            f"{s['fp'] / s['mb']:.1f}/MB (target ≤ {FP_PER_MB:g}), breaking {s['breaking'] / s['mb']:.1f}/MB "
            f"(target ≤ {BREAKING_PER_MB:g}); documentation examples with the exact form of real data "
            f"{ex / s['mb']:.1f}/MB")
