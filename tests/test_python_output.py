"""Structured output in the Python API (``output=``) against the kit's fake
ACP agent, a real process: the prompt carries the schema, the answer is
validated into ``result.output``, a wrong answer is sent back once with what
was wrong, a second wrong one raises ``OutputInvalid``. Under trio and asyncio.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import pytest
import trio

import agy_host
from agy_host.api._output import OutputSpec, candidates, schema_problem
from agy_host.testing.agents import FakeAgent, fake_acp_agent_command
from agy_host.testing.isolation import isolated_env

LOOPS = ["trio", "asyncio"]


@dataclasses.dataclass
class Verdict:
    passed: bool
    failures: int
    names: list[str]


class Point(msgspec.Struct):
    x: int
    y: int


class Totals(TypedDict):
    files: int
    lines: int


def answering(*answers: str) -> dict[str, Any]:
    """A scenario whose n-th prompt is answered with ``answers[n]``."""
    return {"prompts": [[{"chunk": text}, {"stop": "end_turn"}] for text in answers]}


def run_on(loop: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    if loop == "trio":
        return trio.run(fn)
    return asyncio.run(fn())  # type: ignore[arg-type]


class Home:
    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.env = isolated_env(tmp_path / "home", AGY_HOST_TTY="none")
        self.workdir = tmp_path / "agents"

    def agent(self, *answers: str) -> FakeAgent:
        return fake_acp_agent_command(answering(*answers), workdir=self.workdir)

    def run(self, agent: FakeAgent, loop: str, output: Any, prompt: str = "judge the tests") -> Any:
        async def main() -> Any:
            async with agy_host.open_session(agent=agent.command_line, env=self.env, cwd=self.cwd) as s:
                return await s.run(prompt, output=output)

        return run_on(loop, main)


def prompts(agent: FakeAgent) -> list[str]:
    """The text of each ``session/prompt`` the agent received."""
    out = []
    for message in agent.received():
        if message.get("method") == "session/prompt":
            out.append("\n".join(b.get("text", "") for b in message["params"]["prompt"]))
    return out


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_dataclass_answer_is_validated_into_result_output(home: Home, loop: str) -> None:
    agent = home.agent('Here it is:\n```json\n{"passed": false, "failures": 2, "names": ["a", "b"]}\n```\nDone.')
    result = home.run(agent, loop, Verdict)
    assert result.exit_code == 0, result
    assert result.output == Verdict(passed=False, failures=2, names=["a", "b"])
    [sent] = prompts(agent)
    assert sent.startswith("judge the tests") and "JSON Schema" in sent and '"failures"' in sent, sent


@pytest.mark.parametrize("loop", LOOPS)
def test_a_wrong_answer_is_sent_back_once_with_what_was_wrong(home: Home, loop: str) -> None:
    agent = home.agent('{"x": 1, "y": "two"}', 'Sorry: {"x": 1, "y": 2}')
    result = home.run(agent, loop, Point)
    assert result.exit_code == 0, result
    assert result.output == Point(x=1, y=2)
    _first, second = prompts(agent)
    assert "Expected `int`, got `str` - at `$.y`" in second, second
    assert "JSON Schema" not in second, "the retry names the problem; the schema is in the conversation already"


@pytest.mark.parametrize("loop", LOOPS)
def test_a_second_wrong_answer_raises_with_the_raw_answer(home: Home, loop: str) -> None:
    agent = home.agent("I would rather not.", "Still no JSON here.")
    with pytest.raises(agy_host.OutputInvalid) as raised:
        home.run(agent, loop, Point)
    assert raised.value.raw == "Still no JSON here."
    assert raised.value.reason == "it holds no JSON value"
    assert raised.value.result.response == "Still no JSON here." and raised.value.exit_code == 1
    assert len(prompts(agent)) == 2


@pytest.mark.parametrize("loop", LOOPS)
def test_a_json_schema_dict_is_checked_and_its_value_kept_as_json(home: Home, loop: str) -> None:
    schema = {
        "type": "object",
        "properties": {"level": {"enum": ["low", "high"]}, "score": {"type": "number", "maximum": 1}},
        "required": ["level", "score"],
    }
    agent = home.agent('{"level": "medium", "score": 0.5}', '{"level": "high", "score": 0.5}')
    result = home.run(agent, loop, schema)
    assert result.output == {"level": "high", "score": 0.5}
    assert "$.level: 'medium' is not one of ['low', 'high']" in prompts(agent)[1]


def test_agy_host_run_takes_output_too(home: Home) -> None:
    agent = home.agent('{"files": 3, "lines": 120}')
    result = agy_host.run("count", agent=agent.command_line, env=home.env, cwd=home.cwd, output=Totals)
    assert result.output == {"files": 3, "lines": 120}


def test_a_failed_turn_is_returned_as_it_is_without_a_retry(home: Home) -> None:
    agent = fake_acp_agent_command({"prompt": [{"error": "the model is down"}]}, workdir=home.workdir)
    result = home.run(agent, "trio", Point)
    assert result.exit_code != 0 and result.output is None, result
    assert len(prompts(agent)) == 1


def test_an_unsupported_output_type_is_a_usage_error(home: Home) -> None:
    agent = home.agent("{}")
    with pytest.raises(agy_host.UsageError, match="output= takes"):
        home.run(agent, "trio", object)


# -- the pure parts --------------------------------------------------------------------------


def test_candidates_look_in_json_fences_first_then_the_whole_answer_then_the_outermost_value() -> None:
    answer = 'Plan:\n```python\nx = 1\n```\nResult:\n```json\n{"a": 1}\n```\nor {"b": 2}'
    found = candidates(answer)
    assert json.loads(found[0]) == {"a": 1}
    assert found[1].strip() == "x = 1"
    assert found[-1] == '{"a": 1}\n```\nor {"b": 2}'


def test_the_schema_check_names_the_path_of_what_is_wrong() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}},
        "additionalProperties": False,
    }
    assert schema_problem({"items": [1, 2]}, schema, "$") is None
    assert schema_problem({"items": [1, "2"]}, schema, "$") == "$.items[1]: expected integer, got str"
    assert schema_problem({"items": [1, 2, 3, 4]}, schema, "$") == "$.items: more than 3 items"
    assert schema_problem({"other": 1}, schema, "$") == "$: the field 'other' is not allowed"
    assert schema_problem(True, {"type": "integer"}, "$") == "$: expected integer, got bool"
    assert schema_problem(3, {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "$") is None


def test_the_instruction_carries_the_schema_of_the_type() -> None:
    text = OutputSpec.of(Point).instruction()
    assert '"x"' in text and '"integer"' in text and "nothing else" in text
