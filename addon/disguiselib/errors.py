"""The few exceptions the core raises. Each message names the file, rule, field or offset."""


class DisguiseError(Exception):
    """Base class."""


class MappingError(DisguiseError):
    """A mapping set was refused at load (contract §2). Nothing of it is used."""


class MaskError(DisguiseError):
    """A request could not be masked completely; it must not be forwarded."""


class NeverForward(MaskError):
    """A request that cannot be masked by its nature (a body signed by the client, as
    AWS Bedrock's SigV4): refused even where `disguise_fail_open` forwards what could
    not be masked, since forwarding it would send it unmasked."""


class StreamError(DisguiseError):
    """A response stream cannot be reversed further (over a limit, broken framing)."""


class ScopeError(DisguiseError):
    """A `disguise_hosts` entry that names no host (a URL, a path, a bad port)."""


class LeakError(DisguiseError):
    """An original was found in bytes about to leave (leak guard, unknown endpoints).
    The message names the rule and where, never the value."""

