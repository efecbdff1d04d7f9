"""The case browser (``ctxreplay view``): a grid of a run's (case, policy) pairs, each case's
prefix beside its view, policy A/B, the frontier and a labelling mode, served on 127.0.0.1 or
written as a static site. A thin layer over ``runs`` and ``reports``: it reads a run the way
every command does."""

#: the most case pages a bundle writes unless told (each is one (case, policy) of the run)
MAX_PAGES = 5000
