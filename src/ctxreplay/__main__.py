"""``python -m ctxreplay``."""

from .cli import main

main()
