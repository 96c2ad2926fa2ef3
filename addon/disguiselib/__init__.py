"""disguise: mask what LLM providers must not see, restore it on the way back."""

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (tool.setuptools.dynamic)

# The engine, chosen once, before any of its modules is imported (engine.py).
from . import engine as _engine  # noqa: E402

_engine.select()
