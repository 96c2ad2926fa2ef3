"""The field model's exemptions (base/fields.py): what passes untouched, and for which
shape of value only. An exemption holds for the value it was made for — a string id, a
signature, base64 text, a number, a boolean, one of the API's own words — and never for
a container in its place, which is content nobody described: keys and values masked
(jsonspan.Rule.tree, read by the masker, the leak guard, the audit and the views alike).
A word of the API is masked like a setting's (it changes only where it holds an
original); only the model name, ids, signatures and media pass as strings untouched
(sans I/O)."""

from __future__ import annotations

from ..wire.jsonspan import VALUES, Deep, Rule, Skip, Word
from .document import Num

KINDS: dict[str, str] = {
    "text": "model-visible text: masked",
    "json-text": "JSON text in a string: masked as JSON",
    "user-json": "JSON the user wrote: keys and values masked",
    "unknown": "unknown to the table: keys and values masked",
    "media-text": "text media (base64 or a data: URL): decoded, masked, encoded again",
    "identifier": "an identifier: passes untouched",
    "opaque": "provider data that must pass byte-identical (signed or encrypted)",
    "media": "binary media: passes untouched",
    "credential": "the client's credential in its own place",
    "metadata": "the API's own words and numbers: numbers pass, words masked (changed only where one is an original)",
    "model": "the model name: passes untouched",
    "setting": "a setting of the request: numbers pass, words and keys masked (changed only where one is an original)",
    "name": "a key sent as written (a name the API matches): never masked, refused when it holds an original",
}

# Each exemption holds for the one value it was made for (a string id, a signature, base64
# text, a number or a boolean): an object or array in its place is unknown content, keys
# and values masked (jsonspan.Rule.tree), never passed whole. SIGNED alone covers a whole
# block: one the provider signed or encrypted, which must go back byte-identical.
ID = Skip("identifier")
OPAQUE = Skip("opaque")
SIGNED = Skip("opaque", whole=True)
COUNTERS = Skip("metadata", whole=True)  # an answer's usage: the API's counts, as they came
MEDIA = Skip("media")
MODEL = Skip("model")
WORD: Rule = Deep(False, "WORD", "metadata")
META = Word("metadata", WORD)
"""The API's own words and numbers (a role, a `type`, an enum, a count): numbers and
booleans pass; a word is masked like a value (it changes only where it holds an original,
and the leak guard checks it; in a response it passes as it came: restore.restore_fn); a
container is unknown."""


NUMBER = Skip("number")  # the rule walk() reports a number with (see Num)


class _Setting(Deep):
    def resolve(self, value: object) -> Rule:
        return META if type(value) is Num else self


SETTING: Rule = _Setting(True, "SETTING", "setting")
"""A setting of the request (`temperature`, `thinking`, `stream_options`, `reasoning`):
its numbers and booleans pass (a seed, a budget: neither masked nor checked), every word
and key in it is masked like a value, which changes only one that holds an original.
Skipped, it was a channel for one (`"note": "Acme Corp"` inside `thinking` went out)."""

KEY_META = Skip("metadata")  # a key that is one of the API's own field names


class _Name(Rule):
    kind = "name"

    def __repr__(self) -> str:
        return "NAME"


NAME: Rule = _Name()
"""A key of an object whose keys the masker leaves as written (fields.walk): a map of
names the API matches against something of its own (a stored prompt's variables, the
headers an MCP server reads), or a member the table does not know of an object whose
other members are the API's. Masking such a name would break the match, so it goes out
as written; the leak guard reads it all the same, and a request where one holds an
original is refused (fail closed), the message naming the rule and the place."""


class Vocabulary(Rule):
    """A string that is either one of the API's own words ("auto", "none", ...), left
    as it is, or anything else, masked (a tool name where the API expects an object)."""

    string = True
    kind = "text"

    def __init__(self, words: tuple[str, ...], other: Rule = VALUES) -> None:
        self._words = frozenset(words)
        self._other = other

    def resolve(self, value: object) -> Rule:
        return META if value in self._words else self._other.resolve(value)
