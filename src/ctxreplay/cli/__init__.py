"""The ``ctxreplay`` command, one module per stage. Commands are thin: parse options, call the
library, print; errors are mapped once, in ``app.Group``."""

from __future__ import annotations

from . import act, corpus, judge, pipeline, replay, report, view  # noqa: F401  (register the commands)
from .app import main
from .local_model import local_model

main.add_command(local_model)

__all__ = ["main"]
