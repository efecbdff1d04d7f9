"""The ``llm`` judge: a model reads the view, the plan, the patches and the real future.

Follows the judge setup of Self-GC (Hao et al. 2026): the judge model is given the retained
prefix (the view), the committed plan, before/after patches of every edited object and the real
future turns. It must first list the facts the future turns need from the earlier context — each
quoted exactly, filed in one of the six failure categories (a status or field a decision rests on,
an id/handle/path/URL used again, a rule still in force, code or text a later edit copies, the
current state acted on, a route back to archived content) and marked ``available`` (verbatim in
the view), ``recoverable`` (behind a visible recovery pointer) or ``missing``. Narrative coherence
alone is not enough.

The verdict is derived from that list, not trusted as a separate yes/no: ``impact`` iff a needed
fact is ``missing`` (each missing fact becomes a :class:`~ctxreplay.judges.base.Loss` of its
category), else ``no_impact``. The model also states its own label; when it disagrees with its
fact list, the fact list wins and the verdict's explanation says so.

Every call goes through :class:`~ctxreplay.llm.client.ModelClient`: strict ``json_schema`` output
(falling back to ``json_object``, then to a last-match parse of plain text), temperature 0 and a
seed where accepted, bounded retries honouring Retry-After, a per-endpoint concurrency limit, an
on-disk cache keyed by the full request and the call's cost from the tariffs. The schema sent and
the check of the answer both come from one pydantic model, :class:`JudgeAnswer`. Anything the
judge cannot read — a failed call, an answer that is not JSON, outside the schema (the reason
names the first problem: ``facts[0].status 'gone' is not one of …``) or refused — becomes
``Verdict.unscored(reason)``, never ``no_impact``.

For large offline runs, :meth:`LLMJudge.request_for` gives each case's Batch API line and
:meth:`LLMJudge.verdict_from_body` reads the answer back (see :mod:`ctxreplay.llm.batch`).

The defaults point at ``ctxreplay local-model serve`` (SmolLM2-135M on 127.0.0.1:8089), whose
8,192-token context the default prompt budget fits; raise ``max_prompt_tokens`` for real models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from ..datasets.tokenizer import get_tokenizer
from ..llm.completion import Completion, ModelCallError
from ..llm.endpoint import OPERATIONAL, EndpointParams, LazyClient
from ..llm.structured import NOT_BLANK, Answer, json_schema, structured_answer
from ..schema import CATEGORIES
from .base import Judge, JudgeInput, JudgeUsage, Loss, Verdict, judge
from .prompt import STATUSES, RenderedPrompt, render_prompt

if TYPE_CHECKING:  # the values are the tuples' (the checker sees plain strings)
    from ..llm.client import ModelClient

    Category = str
    Status = str
else:
    Category = Literal[CATEGORIES]
    Status = Literal[STATUSES]


class Fact(Answer):
    """A fact the future needs from the prefix, and where it stands in the view (``STATUSES``):
    verbatim there, behind a visible recovery pointer, or gone."""

    quote: Annotated[str, NOT_BLANK]
    category: Category
    source_object: str | None
    future_message: int | None
    status: Status
    explanation: str


class JudgeAnswer(Answer):
    """The answer: the needed facts first (so the model enumerates them before it concludes),
    then its own label, which the code checks against the facts and never trusts on its own."""

    facts: list[Fact]
    verdict: Literal["no_impact", "impact"]
    explanation: str

    @property
    def missing(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if f.status == "missing")

    @property
    def recoverable(self) -> int:
        return sum(f.status == "recoverable" for f in self.facts)

    @property
    def label(self) -> Literal["no_impact", "impact"]:
        """``impact`` iff a needed fact is missing from the view: the fact list decides."""
        return "impact" if self.missing else "no_impact"

    def reason(self) -> str:
        """The model's explanation, plus a note when its own label disagreed with its facts."""
        text = self.explanation.strip()
        if self.verdict == self.label:
            return text
        missing = len(self.missing)
        why = (
            f"{missing} of its {len(self.facts)} needed fact(s) missing"
            if missing
            else f"none of its {len(self.facts)} needed fact(s) missing"
        )
        note = (
            f"[the model said {self.verdict}, but its fact list has {why}: "
            f"{self.label} by the fact list]"
        )
        return f"{note} {text}" if text else note


#: the strict ``json_schema`` sent with every request, from :class:`JudgeAnswer`
VERDICT_SCHEMA: dict[str, Any] = json_schema(JudgeAnswer)
SCHEMA_NAME = "ctxreplay_verdict"


@dataclass(frozen=True)
class LLMJudgeParams(EndpointParams):
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 800
    #: counted with o200k; SmolLM2's tokenizer needs ~1.4x as many, so 4000 fits its 8192
    max_prompt_tokens: int = 4000
    #: the strictest structured-output form to ask for (the client steps down when refused)
    response_format: Literal["json_schema", "json_object", "text"] = "json_schema"
    tokenizer: str = "o200k_base"


@dataclass
class Spend:
    """What the requests of one verdict paid. An answer from the cache costs nothing: the
    verdict that first asked it paid, so a request the policies of a case share (a baseline, a
    case's probes) is counted once in a run's sums."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    calls: int = 0
    asked: int = 0
    paid: int = 0  # requests sent (not served from the cache), failed ones included

    def add(self, c: Completion) -> None:
        self.asked += 1
        if c.cache_hit:
            return
        self.paid += 1
        self.prompt_tokens += c.usage.prompt_tokens
        self.completion_tokens += c.usage.completion_tokens
        self.usd += c.usd or 0.0
        self.calls += c.attempts

    def failed(self, attempts: int) -> None:
        """A request that got no answer after ``attempts`` calls (0: none was sent)."""
        self.asked += 1
        self.calls += attempts
        self.paid += attempts > 0

    @property
    def cache_hit(self) -> bool:
        """Every request of the verdict came from the cache (and there was one)."""
        return self.asked > 0 and self.paid == 0

    def usage(self) -> JudgeUsage:
        return JudgeUsage(self.prompt_tokens, self.completion_tokens, self.usd, self.calls)


class ModelJudge(Judge):
    """What every judge that asks a model shares: its client, built on first use from the
    endpoint params and never pickled (it holds sockets and locks: a worker rebuilds it), calls
    in threads, and the params that change no answer (``OPERATIONAL``)."""

    concurrent: ClassVar[bool] = True
    operational: ClassVar[frozenset[str]] = OPERATIONAL

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._client = LazyClient(self.params, caller=self.label)

    def __getstate__(self) -> dict[str, Any]:
        return {"params": self.params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["params"])  # type: ignore[misc]

    @property
    def client(self) -> ModelClient:
        return self._client.get()

    def close(self) -> None:
        self._client.close()


@judge("llm")
class LLMJudge(ModelJudge):
    """Model-based judge (Self-GC's judge setup) over any OpenAI-compatible endpoint."""

    Params = LLMJudgeParams

    # --- prompt and request ---------------------------------------------------------------

    def render(self, item: JudgeInput) -> RenderedPrompt:
        p: LLMJudgeParams = self.params
        return render_prompt(
            item, max_prompt_tokens=p.max_prompt_tokens, count=get_tokenizer(p.tokenizer).count
        )

    def _call_args(self) -> dict[str, Any]:
        p: LLMJudgeParams = self.params
        return {
            "response_format": p.response_format,
            "schema": VERDICT_SCHEMA,
            "schema_name": SCHEMA_NAME,
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }

    def judge(self, item: JudgeInput) -> Verdict:
        rendered = self.render(item)
        try:
            completion = self.client.complete(rendered.messages, **self._call_args())
        except ModelCallError as e:
            return Verdict.unscored(
                f"model call failed: {e.reason}",
                prompt_hash=e.prompt_hash,
                usage=JudgeUsage(calls=e.attempts),
            )
        return self.verdict_from_completion(item, completion)

    # --- Batch API --------------------------------------------------------------------------

    @staticmethod
    def custom_id(item: JudgeInput) -> str:
        return f"{item.case_id}|{item.policy}"

    def request_for(self, item: JudgeInput) -> tuple[str, dict[str, Any]]:
        """``(custom_id, body)`` of this case's ``/v1/chat/completions`` Batch API line."""
        rendered = self.render(item)
        return self.custom_id(item), self.client.request_body(
            rendered.messages, **self._call_args()
        )

    def verdict_from_body(self, item: JudgeInput, body: dict[str, Any]) -> Verdict:
        """The verdict from a Batch API result for ``item`` (a completion body, or the
        ``{"error": …}`` that :func:`ctxreplay.llm.batch.read_batch_output` gives a failure)."""
        if "error" in body and not body.get("choices"):
            err = body.get("error") or {}
            msg = err.get("message") if isinstance(err, dict) else err
            return Verdict.unscored(f"batch request failed: {str(msg)[:200]}")
        rendered = self.render(item)
        args = self._call_args()
        sent = self.client.request_body(rendered.messages, **args)
        try:
            completion = self.client.completion_from_body(body, request_body=sent)
        except ModelCallError as e:
            return Verdict.unscored(f"batch answer unreadable: {e.reason}")
        prompt_hash = self.client.prompt_hash(rendered.messages, **args)
        return self.verdict_from_completion(item, replace(completion, prompt_hash=prompt_hash))

    # --- answers ----------------------------------------------------------------------------

    def verdict_from_completion(self, item: JudgeInput, c: Completion) -> Verdict:
        usage = JudgeUsage(
            prompt_tokens=c.usage.prompt_tokens,
            completion_tokens=c.usage.completion_tokens,
            usd=0.0 if c.cache_hit else (c.usd or 0.0),
            calls=c.attempts,
        )
        common: dict[str, Any] = {
            "usage": usage,
            "cache_hit": c.cache_hit,
            "prompt_hash": c.prompt_hash,
            "raw": c.text,
        }
        answer, problem = structured_answer(c, JudgeAnswer)
        if answer is None:
            return Verdict.unscored(str(problem), **common)
        future_seqs = {m.seq for m in item.future}
        out = []
        for fact in answer.missing:
            source = fact.source_object
            detail = fact.explanation
            if source is not None and source not in item.index:
                detail = f"(model named unknown object {source[:80]!r}) {detail}"
                source = None
            need = fact.future_message
            out.append(
                Loss(
                    category=fact.category,
                    anchor=fact.quote,
                    source_object=source,
                    need_seq=need if need in future_seqs else None,
                    detail=detail[:1000],
                )
            )
        return Verdict(
            answer.label,
            losses=tuple(out),
            reason=answer.reason()[:1000] or None,
            dependencies=len(answer.facts),
            recoverable=answer.recoverable,
            **common,
        )
