"""Structured output (``output=``) on the real Antigravity harness against
the kit's scripted model API: the model gets it wrong once, the host sends
the problem back, the second answer is the validated output."""

from __future__ import annotations

import dataclasses

import trio

import agy_host

from .conftest import HarnessHome


@dataclasses.dataclass
class Release:
    version: str
    breaking: bool


def test_the_harness_answer_is_validated_after_one_retry(hhome: HarnessHome) -> None:
    model = hhome.serve(
        {
            "turns": [
                [[{"text": 'Release: {"version": 2, "breaking": true}'}]],
                [[{"text": '```json\n{"version": "2.0.0", "breaking": true}\n```'}]],
            ]
        }
    )

    async def main() -> agy_host.TurnResult:
        async with agy_host.open_session(engine="harness", env=hhome.env, cwd=hhome.cwd) as s:
            return await s.run("describe the release", output=Release)

    result = trio.run(main)
    assert result.exit_code == 0, result
    assert result.output == Release(version="2.0.0", breaking=True)
    first, second = (str(request) for request in model.requests())
    assert "JSON Schema" in first and '"breaking"' in first, first
    assert "Expected `str`, got `int` - at `$.version`" in second, second
