"""What the model-driven planners share: endpoint parameters, a lazily built client, bookkeeping.

``self-gc:planner=llm`` and ``agent-forgetting:planner=llm`` call any OpenAI-compatible endpoint
through :class:`~ctxreplay.llm.client.ModelClient`, so they get its response cache, retries,
per-endpoint concurrency limit and cost accounting. The client holds sockets and locks: a policy
pickles as its parameters only, and each worker process builds its own client on first use.

Every call's prompt hash, the parameters actually sent, token usage and cost go into
``Plan.planner`` (a :class:`~ctxreplay.replay.plan.PlannerReport`, which the engine writes to the
figures table); attempts, finish reason and model go into ``Plan.meta``. A call that fails —
timeout, refusal, output that cannot be read — raises :class:`ModelPlannerError`, which the
harness turns into a recorded planner failure with the prefix unchanged, never a silent
keep-all; the error carries the same report in ``.report``, since the tokens were spent all the
same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ParameterError
from ..llm.completion import Completion, ModelCallError
from ..llm.endpoint import OPERATIONAL, EndpointParams, LazyClient
from ..replay.plan import PlannerError, PlannerReport

if TYPE_CHECKING:
    from ..llm.client import ModelClient


@dataclass(frozen=True)
class ModelParams(EndpointParams):
    """Endpoint and sampling parameters of a model-driven planner (used when ``planner=llm``)."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 800


class ModelPlannerError(PlannerError):
    """A planner failure with what the failed attempt cost (tokens, prompt hash, parameters)."""

    def __init__(
        self,
        reason: str,
        meta: dict[str, Any] | None = None,
        report: PlannerReport | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.meta: dict[str, Any] = {**(meta or {}), "failure": reason}
        self.report = report


class ModelPlannerMixin:
    """Client handling for a :class:`~ctxreplay.policies.base.Policy` whose Params extend
    :class:`ModelParams`; it comes before ``Policy`` in the bases."""

    operational: ClassVar[frozenset[str]] = OPERATIONAL
    name: ClassVar[str]
    label: str
    params: Any

    #: whether the llm planner spends a ``target``/``budget`` (else only ``planner=rules`` does)
    llm_spends_budget: ClassVar[bool] = False

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)  # type: ignore[call-arg]  # the Policy after this mixin
        p = self.params
        asked = getattr(p, "target", 0) or getattr(p, "budget", 0)
        if asked and getattr(p, "planner", "llm") == "llm" and not self.llm_spends_budget:
            raise ParameterError(
                f"policy {self.name}: target and budget are spent by planner=rules; the llm "
                "planner plans by its own instructions"
            )
        self._client = LazyClient(self.params, caller=self.label)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = super().describe()  # type: ignore[misc]
        if getattr(self.params, "planner", "llm") == "llm":
            out["endpoint"] = self.model_settings()
        return out

    @property
    def client(self) -> ModelClient:
        return self._client.get()

    def close(self) -> None:
        self._client.close()

    def model_settings(self) -> dict[str, Any]:
        """Endpoint settings for the run manifest (the key's variable name, never its value)."""
        p = self.params
        return {
            "base_url": p.base_url,
            "model": p.model,
            "api_key_env": p.api_key_env,
            "cache_dir": p.cache_dir,
            "tariff": p.tariff or None,
            "temperature": p.temperature,
            "seed": p.seed,
            "max_tokens": p.max_tokens,
        }

    def ask(
        self,
        request: Sequence[Mapping[str, Any]],
        args: dict[str, Any],
        meta: dict[str, Any] | None = None,
    ) -> tuple[Completion, dict[str, Any], PlannerReport]:
        """One planner call: the completion, ``meta`` plus the call's details, and its report.
        A failed call, a refusal or a content-filtered answer is a :class:`ModelPlannerError`
        carrying the report (for a failed call, with the request as it was sent)."""
        meta = dict(meta or {})
        try:
            completion = self.client.complete(request, **args)
        except ModelCallError as e:
            meta.update(planner="llm", attempts=e.attempts)
            report = PlannerReport(
                prompt_tokens=0,
                completion_tokens=0,
                prompt_hash=e.prompt_hash,
                params_sent=self.client.request_body(request, **args),
            )
            raise ModelPlannerError(f"model call failed: {e.reason}", meta, report) from None
        meta.update(completion_meta(completion))
        report = completion_report(completion)
        if completion.refusal:
            raise ModelPlannerError(f"refused: {completion.refusal[:200]}", meta, report)
        if completion.finish_reason == "content_filter":
            raise ModelPlannerError(
                "refused: withheld by the endpoint's content filter", meta, report
            )
        return completion, meta, report

    # the client holds sockets and locks: workers rebuild it from the params
    def __getstate__(self) -> dict[str, Any]:
        return {"params": self.params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["params"])  # type: ignore[misc]


def completion_report(completion: Completion) -> PlannerReport:
    """What one model answer cost, for the figures. ``usd`` is what the call costs at the tariff
    even when our cache served it: it is the planner's L_GC in the replayed system, not what this
    replay spent."""
    return PlannerReport(
        prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens,
        usd=completion.usd,
        prompt_hash=completion.prompt_hash,
        params_sent=completion.params_sent,
        cache_hit=completion.cache_hit,
    )


def completion_meta(completion: Completion) -> dict[str, Any]:
    """The details of one model answer that no figure reads (``Plan.meta``)."""
    return {
        "planner": "llm",
        "cached_tokens": completion.usage.cached_tokens,
        "attempts": completion.attempts,
        "finish_reason": completion.finish_reason,
        "response_format": completion.response_format,
        "model": completion.model,
    }
