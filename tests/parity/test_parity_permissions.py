"""Parity item 21 (issue 26 item 3), beside ``test_parity.py`` (which is
over the 600-line limit): a tool that is not allowed ends the turn the same
way on every engine. Run per engine like the rest of the checklist
(``conftest.py``)."""

from __future__ import annotations

import pytest
from parity.rigs import Home, Rig, Script


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--permissions", "deny"], 5), ([], 5), (["--permissions", "skip"], 0)],
    ids=["deny", "default-without-terminal", "skip"],
)
def test_21_deny_means_the_same_on_every_engine(rig: Rig, home: Home, args: list[str], code: int) -> None:
    """Issue 26 item 3: a tool that is not allowed ends the turn with exit 5
    on every engine, whether the policy refused a request (ACP), a static
    rule denied it inside the harness, or agy denied it itself (stream-json:
    it cannot ask). The refusal is a permission event naming the request, the
    agent goes on, and the default (nobody chose a policy, no terminal here)
    says how to allow. Allowed, the same turn exits 0."""
    agent = rig.agent(Script([[{"permission": True}, {"say": " end"}]]))
    run = home.run("s21", "go", *args, agent=agent, timeout=40)
    assert run.returncode == code and run.done.get("exit_code") == code, run
    assert run.end.get("stop_reason") == "stop" and run.text.endswith(" end"), run
    assert agent.permission_answers() == ["denied" if code else "allowed"], run
    if not code:
        return
    refused = [
        e
        for e in run.of("permission")
        if not any(o["option_id"] == e.get("selected") and o["kind"].startswith("allow") for o in e.get("options", []))
    ]
    assert refused and refused[0]["title"], f"the refusal is a permission event naming the request: {run!r}"
    if not args:
        assert "To allow:" in run.end.get("error", ""), f"the default says how to allow: {run!r}"
