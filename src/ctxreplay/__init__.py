"""ctxreplay: replay recorded agent traces through context-management policies, offline."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ctxreplay")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
