"""``python -m ctxreplay.cli``."""

from . import main

main()
