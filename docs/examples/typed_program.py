"""A program on agy-host's public API, written as its users write theirs:
``mypy --strict`` checks it in CI (``nox -s typecheck``), and
tests/test_typed_example.py runs it against the kit's fake ACP agent.

    python docs/examples/typed_program.py "python -m agy_host.testing.acp.agent"
"""

from __future__ import annotations

import dataclasses
import sys

import trio

import agy_host


@dataclasses.dataclass
class Summary:
    title: str
    points: list[str]


def allow_reads(request: agy_host.PermissionRequest) -> bool:
    """Allow what only reads; refuse the rest."""
    return request.tool_kind in ("read", "search")


async def main(agent: str) -> int:
    async with agy_host.open_session(agent=agent, permissions=allow_reads) as s:
        text: list[str] = []
        async for event in s.prompt("say hello"):
            if isinstance(event, agy_host.TextDelta):
                text.append(event.delta)
        first: agy_host.TurnResult | None = s.result
        try:
            summary = await s.run("summarise the project", output=Summary)
        except agy_host.OutputInvalid as exc:
            print(f"no summary: {exc.reason}", file=sys.stderr)
            return 1
        status: agy_host.SessionStatus = s.info
        print("".join(text), first.exit_code if first else None, status.turns, summary.output)
        return 0


if __name__ == "__main__":
    sys.exit(trio.run(main, sys.argv[1]))
