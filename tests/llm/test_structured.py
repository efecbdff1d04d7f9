"""Structured answers: one pydantic model gives the schema sent and the check of the answer."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

import pytest

from ctxreplay.judges.llm import SCHEMA_NAME as VERDICT_NAME
from ctxreplay.judges.llm import VERDICT_SCHEMA, JudgeAnswer, LLMJudge, LLMJudgeParams
from ctxreplay.llm import ModelClient
from ctxreplay.llm.structured import NOT_BLANK, Answer, hint, json_schema, read_answer
from ctxreplay.policies import _acf
from ctxreplay.policies._selfgc_prompt import SCHEMA_NAME, PlanFormatError, parse_plan, plan_schema

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


class Inner(Answer):
    """Not for the endpoint."""

    name: Annotated[str, NOT_BLANK]
    size: int | None


class Outer(Answer):
    kind: Literal["a", "b"]
    items: list[Inner] = hint(maxItems=3)
    note: str = hint("", maxLength=10, description="free text")


def test_the_schema_is_openai_strict_and_has_no_pydantic_extras():
    assert json_schema(Outer) == {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["a", "b"]},
            "items": {
                "type": "array",
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "size": {"type": ["integer", "null"]},
                    },
                    "required": ["name", "size"],
                    "additionalProperties": False,
                },
            },
            "note": {"type": "string", "description": "free text", "maxLength": 10},
        },
        "required": ["kind", "items", "note"],  # a default does not make a field optional here
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        ([], "answer is not an object"),
        ({"items": []}, "missing kind"),
        ({"kind": "c", "items": []}, "kind 'c' is not one of a, b"),
        ({"kind": "a", "items": [], "extra": 1}, "unexpected key extra"),
        ({"kind": "a", "items": {}}, "items is not a list"),
        ({"kind": "a", "items": [{"name": " ", "size": 1}]}, "items[0].name is blank"),
        ({"kind": "a", "items": [{"name": "x", "size": "3"}]}, "items[0].size is not an integer"),
        ({"kind": "a", "items": [{"name": "x", "size": True}]}, "items[0].size is not an integer"),
        ({"kind": "a", "items": [{"name": 1, "size": 1.5}]}, "items[0].name is not a string"),
    ],
)
def test_reading_is_strict_and_names_the_problem(doc, reason):
    answer, problem = read_answer(Outer, doc)
    assert answer is None
    assert problem is not None and problem.startswith(reason), problem


def test_defaults_may_be_left_out_and_hints_are_not_checked():
    answer, problem = read_answer(Outer, {"kind": "b", "items": [{"name": "x", "size": None}] * 5})
    assert problem is None and answer is not None
    assert answer.note == "" and len(answer.items) == 5  # maxItems guides decoding only


def test_the_judge_schema_comes_from_its_answer_model():
    assert json_schema(JudgeAnswer) == VERDICT_SCHEMA
    fact = VERDICT_SCHEMA["properties"]["facts"]["items"]
    assert fact["properties"]["future_message"] == {"type": ["integer", "null"]}
    assert fact["properties"]["source_object"] == {"type": ["string", "null"]}


def test_planner_answers_are_read_by_their_models():
    assert plan_schema(500)["properties"]["above_conversation_summary"]["maxLength"] == 500
    with pytest.raises(PlanFormatError, match=r"plan\[0\]\.targets\[0\] is not a string"):
        parse_plan('{"plan": [{"action": "fold", "targets": [3]}]}')
    with pytest.raises(PlanFormatError, match="missing plan"):
        parse_plan('{"above_conversation_summary": "x"}')
    lenient = parse_plan('{"plan": [{"action": " fold ", "targets": "function:a:1", "x": 1}]}')
    assert lenient.steps[0].targets == ("function:a:1",) and lenient.steps[0].action == "fold"
    with pytest.raises(_acf.ApplyBatchError, match=r"missing batch\[0\]\.result_id"):
        _acf.read_batch('{"batch": [{"note": "x"}]}')
    apply = _acf.TOOLS[0]["function"]["parameters"]
    assert apply == json_schema(_acf.ContextApply)
    assert apply["properties"]["batch"]["minItems"] == 1


def _sha(body: dict) -> str:
    return hashlib.sha256(json.dumps(body).encode()).hexdigest()


def test_requests_and_cache_keys_are_those_of_the_hand_written_schemas():
    """Recorded with the hand-written schema dictionaries this replaced: a changed key would make
    every cached answer a miss (and be paid again), a changed body a different request."""
    client = ModelClient("http://127.0.0.1:1/v1", "m", api_key_env=None)
    judge = LLMJudge(LLMJudgeParams(base_url="http://127.0.0.1:1/v1", model="m", cache_dir="off"))
    args = judge._call_args()
    assert args["schema_name"] == VERDICT_NAME
    assert judge.client.prompt_hash(MSGS, **args) == (
        "f8dc9ca6b082675a571b2045be056083429ac40927c51ec75e700e119ec04479"
    )
    assert _sha(judge.client.request_body(MSGS, **args)) == (
        "7be45b2e98c0673d0faaa960572c757b8818095bfa551e5dc8db261956980110"
    )
    plan = {
        "response_format": "json_schema",
        "schema": plan_schema(1500),
        "schema_name": SCHEMA_NAME,
        "max_tokens": 800,
    }
    assert client.prompt_hash(MSGS, **plan) == (
        "baaad584b64907b2ba9da1ea0b22e21b379faaa6a858e6d6984c2562d709ef4e"
    )
    assert _sha(client.request_body(MSGS, **plan)) == (
        "d64f5065f9ec9e21c91f1310086042df00d499c86aad08cfc9dd8b5addff9699"
    )
    acting = {"tools": _acf.TOOLS, "tool_choice": "auto", "max_tokens": 800}
    assert client.prompt_hash(MSGS, **acting) == (
        "1937fae9e9d07fa354c356d8ef61dc918234198975c95770cc92c30739d015be"
    )
    assert _sha(client.request_body(MSGS, **acting)) == (
        "b431950f9c759483e97e872fd46d50fd13b957d1b2ec3f53518fef7a0525f68e"
    )
    plain = client.prompt_hash(MSGS, max_tokens=100, seed=3, temperature=None)
    assert plain == "a183c3a0b271aa20c0de8a83ac6a247ad098869361eef9af7993760c49fb198a"
    # an Answer model is accepted where a schema is: the same request
    assert client.prompt_hash(MSGS, schema=JudgeAnswer, schema_name=VERDICT_NAME) == (
        client.prompt_hash(MSGS, schema=VERDICT_SCHEMA, schema_name=VERDICT_NAME)
    )
    judge.close()
    client.close()
