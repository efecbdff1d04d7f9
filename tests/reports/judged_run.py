"""Constants of the judged runs that tests/reports/conftest.py builds."""

POLICIES = ["noop", "tool-prune", "self-gc"]
UNSCORED = 3  # tool-prune verdicts the ``edited`` judge makes unscored
DROPPED = 2  # tool-prune verdicts the ``edited`` judge leaves out (not judged)

#: markup a trace may hold (the ``xss_run``); none of it may become markup in a report:
#: ``window.__pwned`` stays undefined in a browser
XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
#: the name of a session of the ``xss_run``: it would close an attribute and open a script,
#: were ids not escaped
XSS_SESSION = 'evil"><script>window.__pwned=3</script>'
