"""The installed version, recorded in every manifest so a run says what made it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ctxreplay")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"
