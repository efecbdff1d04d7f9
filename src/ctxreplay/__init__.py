"""ctxreplay: replay recorded agent traces through context-management policies, offline."""

from .version import __version__

__all__ = ["__version__"]
