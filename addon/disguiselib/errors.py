"""The few exceptions the core raises. Each message names the file, rule, field or offset."""

import logging
import re
from collections.abc import Callable


class DisguiseError(Exception):
    """Base class."""


class MappingError(DisguiseError):
    """A mapping set was refused at load (contract §2). Nothing of it is used."""


class MaskError(DisguiseError):
    """A request could not be masked completely; it must not be forwarded."""


class QuotingMaskError(MaskError):
    """A request that cannot be masked, whose message names a piece of the request's own
    text (`quoted`, found in `within`: a model's family in its id, from the path). Its
    str() never shows it; `naming(clean)` shows it only where `clean` (the leak guard's
    reading with the rules in force) finds no original in it or in `within`."""

    NOT_SHOWN = "<not shown>"
    WITHHELD = "<original>"

    def __init__(self, template: str, quoted: str, within: str) -> None:
        super().__init__(template, quoted, within)  # args: what pickling (the worker) rebuilds it from
        self.template, self.quoted, self.within = template, quoted, within

    def __str__(self) -> str:
        return self.template.format(self.NOT_SHOWN)

    def naming(self, clean: Callable[[str], bool]) -> str:
        """The message, naming the quoted text when clean says it and its source are clean."""
        ok = clean(self.within) and clean(self.quoted)
        return self.template.format(repr(self.quoted) if ok else self.WITHHELD)


class PlacedMaskError(MaskError):
    """A request that cannot be masked, whose message names a place in its JSON
    document (`path`: a linked (parent, segment) path, fields.path_text) through `at`,
    given the one way a message names such a place (leakguard.json_place with the rules
    in force: a key holding an original withheld). Its str() names no place."""

    NOT_SHOWN = "$ (the path not shown)"

    def __init__(self, template: str, path: object) -> None:
        super().__init__(template, path)  # args: what pickling (the worker) rebuilds it from
        self.template, self.path = template, path

    def __str__(self) -> str:
        return self.template.format(self.NOT_SHOWN)

    def at(self, place: Callable[[object], str]) -> str:
        """The message with the place as place(path) names it."""
        return self.template.format(place(self.path))


class NeverForward(MaskError):
    """A request that cannot be masked by its nature (a body signed by the client, as
    AWS Bedrock's SigV4): refused even where `disguise_fail_open` forwards what could
    not be masked, since forwarding it would send it unmasked."""


class NotTransformed(DisguiseError):
    """A request on a route the addon transforms whose body it turns out not to: an
    OpenAI file upload for another purpose than a batch. It is handled as a request to
    an endpoint disguise does not transform (scanned; refused if it holds an original)."""


class StreamError(DisguiseError):
    """A response stream cannot be reversed further (over a limit, broken framing)."""


class ScopeError(DisguiseError):
    """A `disguise_hosts` entry that names no host (a URL, a path, a bad port)."""


class StateError(DisguiseError):
    """A flow or a stream asked to make a transition its state machine does not allow:
    a bug, reported as one (state.py, base/stream.py)."""


class LeakError(DisguiseError):
    """An original was found in bytes about to leave (leak guard, unknown endpoints).
    The message names the rule and where, never the value."""



# A quoted piece of a third party's message (PyYAML's, Python re's), "'x'" or '"x"',
# read left to right: in "',' or ']'" the pieces are the two single characters.
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def unquoted(text: str) -> str:
    """A third party's message about a mapping file (a YAML or regex parser's) with every
    piece it quotes of two characters or more withheld: it quotes the file's text, which
    may be an original. One quoted character (an escape, a bad character) is kept."""
    return _QUOTED.sub(lambda m: m.group() if len(m.group()) <= 3 else "<not shown>", text)


def reason(e: Exception) -> str:
    """What may be shown of an exception: our own messages never quote an original; any
    other exception's text might (a KeyError's key), so only its type is shown."""
    return str(e) if isinstance(e, DisguiseError) else f"internal error ({type(e).__name__})"


def log_internal(log: logging.Logger, what: str, e: Exception) -> None:
    """Log a bug's exception: at the default level only its type (its text could hold an
    original); the traceback goes to debug."""
    log.error("disguise: %s: internal error (%s)", what, type(e).__name__)
    log.debug("disguise: %s", what, exc_info=True)
