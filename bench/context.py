"""The run's shared inputs: rule sets, material, requests, sessions and streams, each
built the first time a section asks for it (a section run alone builds only its own)."""

from __future__ import annotations

import argparse
import random
import time
from functools import cached_property

import bodies
import streams
import yaml
from common import MAPPINGS
from material import Material, make_literals, ordinary_literals

from disguiselib.apis.anthropic import messages as anthropic
from disguiselib.apis.openai import chat as openai_chat
from disguiselib.apis.openai import responses as openai_responses
from disguiselib.base import masking
from disguiselib.rules import mappings, rules

# per API: its request rule, its stream builder and class, the text size that makes its
# stream about 1 MB (OpenAI deltas are single tokens), disguised occurrences in the text
APIS = {
    "anthropic": (anthropic.MESSAGES_REQUEST, streams.build_stream, anthropic.AnthropicStream, 158_000, 24),
    "chat": (openai_chat.CHAT_REQUEST, streams.build_chat_stream, openai_chat.ChatStream, 12_000, 12),
    "responses": (openai_responses.RESPONSES_REQUEST, streams.build_responses_stream, openai_responses.ResponsesStream, 15_500, 12),
}
PATHS = {"anthropic": "/v1/messages", "chat": "/v1/chat/completions", "responses": "/v1/responses"}


class Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick: bool = args.quick
        self.seed: int = args.seed
        self.t_rules = 0.0

    def rng(self, salt: int) -> random.Random:
        return random.Random(self.seed * 1000 + salt)

    # -- rule sets ---------------------------------------------------------------------

    @cached_property
    def literals(self) -> dict[str, str]:
        """1,000 realistic literals (company, host, person, identifier, project names)."""
        return make_literals(random.Random(self.seed), 1000)

    @cached_property
    def ms_default(self) -> mappings.MappingSet:
        return mappings.load(MAPPINGS)

    @cached_property
    def R_default(self) -> rules.Rules:  # noqa: N802
        t0 = time.perf_counter()
        r = rules.Rules(self.ms_default)
        self.t_rules += time.perf_counter() - t0
        return r

    def with_literals(self, lits: dict[str, str], what: str) -> mappings.MappingSet:
        """The default mappings plus lits."""
        doc = yaml.safe_load((MAPPINGS / "default.yaml").read_text())
        doc["literals"] = lits
        return mappings.from_dict(doc, f"bench: {what} + default.yaml")

    @cached_property
    def ms_lit(self) -> mappings.MappingSet:
        return self.with_literals(self.literals, "1000 literals")

    @cached_property
    def R_lit(self) -> rules.Rules:  # noqa: N802
        t0 = time.perf_counter()
        r = rules.Rules(self.ms_lit)
        self.t_rules += time.perf_counter() - t0
        return r

    @cached_property
    def ordinary(self) -> dict[str, str]:
        """100 literals whose disguises are ordinary words (section (b))."""
        return ordinary_literals(self.rng(2), 100)

    @cached_property
    def ms_ordinary(self) -> mappings.MappingSet:
        return self.with_literals(self.ordinary, "100 ordinary-word literals")

    @cached_property
    def R_ordinary(self) -> rules.Rules:  # noqa: N802
        return rules.Rules(self.ms_ordinary)

    def rules_for(self, which: str) -> rules.Rules:
        return {"default": self.R_default, "lit": self.R_lit, "ordinary": self.R_ordinary}[which]

    # -- material, requests, sessions, the three ~1 MB streams ---------------------------

    @cached_property
    def mat(self) -> Material:
        # drawn after the literals from the same generator, as before the split
        rng = random.Random(self.seed)
        make_literals(rng, 1000)
        return Material(rng, self.literals)

    @cached_property
    def requests(self) -> dict[str, bytes]:
        return bodies.small_requests(self.mat)

    @cached_property
    def sess(self) -> dict[str, dict[str, rules.Session]]:
        """sess[api][rules] -> the Session of masking that API's small request."""
        out: dict[str, dict[str, rules.Session]] = {}
        for api, (rule, *_rest) in APIS.items():
            out[api] = {which: masking.mask_body(self.requests[api], rule, self.rules_for(which))[1]
                        for which in ("default", "lit")}  # fmt: skip
        return out

    @cached_property
    def streams(self) -> dict[str, dict[str, dict]]:
        """streams[api][rules] -> a ~1 MB stream restoring that API's session."""
        some_lits = [(d, o) for o, d in list(self.literals.items())[:40]]
        out: dict[str, dict[str, dict]] = {}
        for api, (_rule, build, _cls, nchars, ndisg) in APIS.items():
            disg_default = list(self.sess[api]["default"].placeholders.items())
            disg_lit = list(self.sess[api]["lit"].placeholders.items()) + some_lits
            out[api] = {
                "default": build(self.seed, nchars, disg_default, ndisg),
                "lit": build(self.seed, nchars, disg_lit, ndisg),
            }
        return out

    def new_stream(self, api: str, which: str, placeholders: dict[str, str] | None = None):
        """A fresh stream object for api with the rules `which` ("default" | "lit" |
        "ordinary"), restoring placeholders (by default: that API's session's)."""
        R = self.rules_for(which)  # noqa: N806
        if placeholders is None:
            placeholders = self.sess[api][which].placeholders
        return APIS[api][2](R.restorer(placeholders))
