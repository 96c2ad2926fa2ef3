"""The few exceptions the core raises. Each message names the file, rule, field or offset."""


class DisguiseError(Exception):
    """Base class."""


class MappingError(DisguiseError):
    """A mapping set was refused at load (contract §2). Nothing of it is used."""


class MaskError(DisguiseError):
    """A request could not be masked completely; it must not be forwarded."""


class StreamError(DisguiseError):
    """A response stream cannot be reversed further (over a limit, broken framing)."""
