"""Constants of the small judged run that tests/reports/conftest.py builds."""

POLICIES = ["noop", "tool-prune", "self-gc"]
UNSCORED = 3  # tool-prune verdicts the ``edited`` judge makes unscored
DROPPED = 2  # tool-prune verdicts the ``edited`` judge leaves out (not judged)
