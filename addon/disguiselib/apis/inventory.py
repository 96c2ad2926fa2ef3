"""The providers' endpoint inventories (`wirespec.Endpoint`): every endpoint each
provider documents, with what disguise does with it. The registry reads them to tell
an LLM-shaped path and to refuse what is never forwarded."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from ..base.wirespec import HOSTED, REFUSED, Endpoint
from .anthropic import messages as anthropic
from .bedrock import runtime as bedrock
from .google import gemini as google
from .openai import providers as openai

# Each provider's documented endpoints, with what disguise does with each; OpenAI's paths
# are relative to `/v1` (Azure: `/openai`, `/openai/v1`). A new provider's inventory is
# registered here.
INVENTORIES: tuple[tuple[str, tuple[Endpoint, ...]], ...] = (
    ("/(?:v1|openai)", openai.ENDPOINTS),
    ("", anthropic.ENDPOINTS),
    ("", bedrock.ENDPOINTS),
)


def _tail(e: Endpoint, skip: int = 0) -> str:
    """The end of a path that is e's path past its first skip characters (`/**`: the path
    and everything below, without a `.*`: a search stays linear)."""
    below = e.path.endswith("/**")
    rx = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(e.path[skip:].removesuffix("/**")))
    return rx + (r"(?:/|\Z)" if below else r"\Z")


def _documented(prefix: str, es: tuple[Endpoint, ...]) -> str:
    """One provider's documented paths as one alternation behind their common literal
    start: a search tries the alternatives only where that start is (a path's other
    characters cost one comparison each, however many endpoints there are)."""
    paths = [e.path for e in es if e.what != HOSTED]
    common = os.path.commonprefix(paths).split("{", 1)[0]
    common = common[: common.rfind("/") + 1]
    return prefix + re.escape(common) + "(?:" + "|".join(_tail(e, len(common)) for e in es if e.what != HOSTED) + ")"


# Documented endpoints that may carry model input: LLM-shaped wherever they are sent.
# (One literal `/` first: a search skips to each `/` before it tries anything.)
_GROUPS = [_documented(p, es) for p, es in INVENTORIES]
assert all(g.startswith("/") for g in _GROUPS)
DOCUMENTED = re.compile("/(?:" + "|".join(g[1:] for g in _GROUPS) + ")")
_REFUSED: tuple[tuple[frozenset[str], re.Pattern[str], str], ...] = tuple(
    (frozenset(e.methods.split()), re.compile(p + _tail(e)), e.why) for p, es in INVENTORIES for e in es
    if e.what == REFUSED
)  # fmt: skip


# What is refused: OpenAI's Uploads API parts and a chunk of Google's resumable uploads
# (each could only be scanned alone: an original cut by a part boundary would pass as two
# clean halves), WebRTC calls and Bedrock's bidirectional streams (their traffic never
# passes here as a body): openai.ENDPOINTS, bedrock.ENDPOINTS, google.upload_refused say
# why, and what to do instead.
def refused(method: str, path: str, headers: Iterable[tuple[str, str]] = ()) -> str | None:
    """Why a request is never forwarded (its endpoint's inventory says REFUSED, or its
    headers make it a chunk of an upload), or None. headers: (name, value) pairs."""
    m, p = method.upper(), _path(path)
    why = next((why for methods, rx, why in _REFUSED if m in methods and rx.search(p)), None)
    return why if why is not None else google.upload_refused(headers)


def _path(path: str) -> str:
    return path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
