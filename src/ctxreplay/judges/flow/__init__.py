"""The information-flow judge: which facts of the prefix each future message uses, and whether
the view still holds them. Deterministic, free, the default.

Real futures rarely reuse an exact anchor. They act on a status, pick a row from a search result,
work around an error line, copy code into an edit, reason from a printed number, and obey a rule
the user stated earlier. So the unit is a *fact* (``text/facts.py``): a field of structured
output, a row, a line, an error line, a sentence. ``rules`` says which facts each future agent
message uses (one function per kind of use, composed in ``rules.case_uses``), ``index`` keeps
what a session's messages hold for all its cases (a ``SessionIndex``, begun and ended by the
engine), ``judge`` looks each used fact up in the view, and ``reference`` states the same rules
again without any index or memo: the oracle the optimised rules are tested against.
"""

from .judge import RULES_VERSION, FlowJudge, frequency_of
from .messages import message_facts, told
from .rules import Use

__all__ = ["RULES_VERSION", "FlowJudge", "Use", "frequency_of", "message_facts", "told"]
