"""The one base of every error a user can cause and fix.

The CLI maps a ``CtxreplayError`` to one line on stderr and exit status 2 (``cli.main``); any other
exception is a bug and keeps its traceback. Library callers catch the same class.
"""

from __future__ import annotations


class CtxreplayError(Exception):
    """A mistake in the input, the options or the files given: say what and how to fix it."""


class ParameterError(CtxreplayError, ValueError):
    """An option or plugin parameter outside its range or of the wrong type."""
