"""The README as a newcomer meets it, run as written on real agents.

Its first command on what its install line installs (the sandbox agent, no
ACP agent installed yet), and its everyday block line by line
(``catalogue.EVERYDAY`` says which line runs on which agent): on the real
harness (its page's install), on the real Gemini CLI (the README's ACP
install, the bridge added as the README says), each with the kit's scripted
model in place of its model. What each line's comment promises is checked;
a line that fails as written fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from doc_blocks import REPO_ROOT, blocks
from interop.provision_gemini import GeminiCli
from newcomer.catalogue import GEMINI_EVERYDAY, HARNESS_EVERYDAY, README_FIRST, everyday
from newcomer.place import VENV_BIN, Place, Ran, missing
from newcomer.shell import commands, find, installed, without_comment

Places = Callable[..., Place]
#: The harness runs its tools with the command it was given; a short wait keeps them synchronous.
WAIT = 5000
#: How the Gemini CLI names the bridge's tools to its model.
BRIDGE = "mcp_agy-host-bridge_"
#: What a refused request's closing line says to do (no terminal, nobody chose a policy).
HOW_TO_ALLOW = "To allow: --permissions auto"


def run_command(place: Place, line: str) -> list[dict[str, Any]]:
    """A model reply that has the harness run ``line`` in the project."""
    args = {"CommandLine": line, "Cwd": str(place.project), "WaitMsBeforeAsync": WAIT}
    return [{"call": {"name": "run_command", "args": args}}]


def answers_file() -> str:
    """docs/questions.md's ``answers.toml``, the file the README's ``--answers`` line names."""
    [block] = [b for b in blocks(REPO_ROOT / "docs" / "questions.md") if b.code.startswith("# answers.toml")]
    return block.code + "\n"


def json_values(text: str) -> list[dict[str, Any]]:
    """The JSON values of ``jq .``'s output, one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def test_the_first_turn_runs_on_the_sandbox_agent(place: Places) -> None:
    """``.venv/bin/agy-host run "Hello, who are you?"`` after the README's
    install (``./core ./plugins/acp_engine``): a real turn, over a real pipe,
    on the bundled sandbox agent, and the output says so. The venv is the
    environment under test, linked where the README's command finds it."""
    block = find("README.md", README_FIRST)
    home = place(installed(block))
    *_install, first_turn = commands(block)[0].split(" && ")
    venv = home.project / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "agy-host").symlink_to(VENV_BIN / "agy-host")
    ran = home.run(first_turn)
    assert ran.returncode == 0, ran
    assert "Hello, who are you?" in ran.stdout, ran
    assert "sandbox agent" in ran.stderr, f"the output does not say the turn ran on the sandbox agent\n{ran}"


def test_doctor_after_the_usage_pages_install(place: Places) -> None:
    """docs/usage.md: after its two install lines, ``agy-host doctor``
    says what is in place (the sandbox, since no ACP agent is installed,
    and the diff renderer) and spends no tokens."""
    block = find("docs/usage.md", "pip install ./core ./plugins/acp_engine")
    home = place(installed(block))
    [doctor] = [line for line in commands(block) if line.startswith("agy-host")]
    ran = home.run(doctor)
    assert ran.returncode == 0, ran
    assert "no tokens spent" in ran.stdout and "sandbox" in ran.stdout, ran
    assert "agy-host-diff-render" in ran.stdout, ran


def _harness_checks(place: Place) -> dict[str, Callable[[Ran], None]]:
    """What each README line promises, on the harness."""

    def fix(ran: Ran) -> None:  # asks before it runs: with no terminal, refused, saying how to allow
        assert ran.returncode == 5 and HOW_TO_ALLOW in ran.stderr, ran
        assert not (place.project / "fixed").exists(), f"the command ran without anyone allowing it\n{ran}"

    def session(ran: Ran) -> None:
        assert ran.returncode == 0 and ran.stdout.strip() == "Docs updated.", ran

    def status(ran: Ran) -> None:  # the session's agent stayed warm
        assert ran.returncode == 0 and re.search(r"^\s+work: warm, harness", ran.stdout, re.M), ran

    def json_lines(ran: Ran) -> None:
        events = json_values(ran.stdout)
        kinds = [e["type"] for e in events]
        assert ran.returncode == 0 and kinds[0] == "turn_start" and kinds[-2:] == ["turn_end", "done"], ran
        assert events[-1]["exit_code"] == 0, ran
        assert "".join(e.get("delta", "") for e in events if e["type"] == "text") == "Hello there.", ran

    def auto(ran: Ran) -> None:  # allowed without asking, no terminal needed
        assert ran.returncode == 0 and (place.project / "tests-ran").exists(), ran

    def doctor(ran: Ran) -> None:
        assert ran.returncode == 0 and "harness" in ran.stdout and "✗" not in ran.stdout, ran

    def plugins(ran: Ran) -> None:
        assert ran.returncode == 0 and "harness  [agy-host-harness" in ran.stdout, ran

    def models(ran: Ran) -> None:
        assert ran.returncode == 0 and "gemini-3.8-flash" in ran.stdout, ran

    def engine(ran: Ran) -> None:
        assert ran.returncode == 0 and ran.stdout.startswith("engine: harness"), ran

    return {
        'agy-host run "fix the failing test"': fix,
        'agy-host run --session work "and now the docs"': session,
        "agy-host sessions status": status,
        'agy-host run --format json "hi" | jq .': json_lines,
        'agy-host run --permissions auto "run the tests"': auto,
        "agy-host doctor": doctor,
        "agy-host plugins": plugins,
        "agy-host models": models,
        "agy-host engine": engine,
    }


def test_the_everyday_block_on_the_harness(place: Places, harness_binary: str) -> None:
    """The README's everyday lines, in order, on the harness as its page
    installs it (``./core ./plugins/harness_engine``), warm agents on as
    for any user; then ``agy-host config show`` (the synopsis line's first
    half) shows what ``config set`` wrote."""
    home = place(installed(find("docs/engines/harness.md", "pip install ./core ./plugins/harness_engine")), warm=True)
    model = home.model(
        {
            "rules": [
                {"match": "fix the failing test", "replies": [run_command(home, "touch fixed"), [{"text": "Fixed."}]]},
                {"match": "and now the docs", "replies": [[{"text": "Docs updated."}]]},
                {"match": "^hi$", "replies": [[{"text": "Hello there."}]]},
                {"match": "run the tests", "replies": [run_command(home, "touch tests-ran"), [{"text": "Pass."}]]},
            ]
        }
    )
    home.harness(harness_binary, model)
    checks = _harness_checks(home)
    lines = everyday(HARNESS_EVERYDAY)
    assert sorted(without_comment(line) for line in lines) == sorted(checks), (
        "a line with no check, or a check for none"
    )
    no_jq = missing("jq")
    for line in lines:
        if not (no_jq and "| jq" in line):
            checks[without_comment(line)](home.run(line))
    shown = home.ok("agy-host config show")
    assert f'base_url = "{model.url}"' in shown.stdout, shown
    if no_jq:
        pytest.skip(f"{no_jq} (every other line passed)")


def test_the_everyday_block_on_the_gemini_cli(place: Places, gemini_cli: GeminiCli) -> None:
    """The README's lines about questions and signing in, on the Gemini CLI
    made the default agent (``config set acp.agent``), with the README's ACP
    install and the bridge: ``--answers`` with docs/questions.md's
    ``answers.toml`` answers the bridge's question (the Gemini CLI's
    permission request for it goes to no policy); ``acp-auth`` lists the
    Gemini CLI's sign-in methods; ``--logout`` says it offers none, and how
    to sign out instead."""
    home = place(installed(find("docs/bridge.md", "pip install ./core ./plugins/acp_engine ./plugins/bridge_mcp")))
    ask = {"question": "Which branch should I ship?", "choices": ["main", "dev"]}
    model = home.model(
        {
            "rules": [
                {
                    "match": "ship it",
                    "replies": [
                        [{"call": {"name": BRIDGE + "agy_host_ask_user", "args": ask}}],
                        [{"tool_result": True}],
                    ],
                }
            ]
        }
    )
    home.gemini(gemini_cli.script, model)
    (home.project / "answers.toml").write_text(answers_file())
    home.ok('agy-host config set acp.agent "gemini --acp"')
    answered, signin, logout = (home.run(line) for line in everyday(GEMINI_EVERYDAY))
    assert answered.returncode == 0 and "The user chose: dev" in answered.stdout, answered
    assert "(question: agy_host_ask_user asks the user a question" in answered.stderr, answered
    assert signin.returncode == 0 and "gemini-api-key" in signin.stdout, signin
    assert "Sign-in state: signed in" in signin.stdout, signin
    assert logout.returncode == 1 and "does not offer ACP's logout" in logout.stderr, logout
    assert "sign out with the agent's own command or settings" in logout.stdout, logout


def test_fix_the_failing_test_asks_before_the_gemini_cli_writes(place: Places, gemini_cli: GeminiCli) -> None:
    """``agy-host run "fix the failing test"`` at a terminal, the Gemini
    CLI its agent: it "asks you before the agent writes". The prompt shows
    the edit and an input line; the person allows it once; the file is
    written and the answer streams."""
    [line] = everyday("test_readme.py::test_fix_the_failing_test_asks_before_the_gemini_cli_writes")
    home = place(installed(find("README.md", README_FIRST)))
    target = home.project / "fixed.txt"
    write = {"call": {"name": "write_file", "args": {"file_path": str(target), "content": "fixed\n"}}}
    model = home.model({"rules": [{"match": "fix the failing test", "replies": [[write], [{"text": "Fixed."}]]}]})
    home.gemini(gemini_cli.script, model)
    home.ok('agy-host config set acp.agent "gemini --acp"')
    pane = home.pane(line)
    shown = home.shows(pane, r"choose \[1-\d, 0 for none\]: ", timeout=90)
    assert "asks for permission" in shown and "+fixed" in shown, shown
    assert not target.exists(), "written before anyone answered"
    [allow] = re.findall(r"^\s+(\d)\) Allow  \[allow_once\]", shown, re.M)
    pane.type(allow)
    shown = pane.wait_for(r"\[exit \d+\]", timeout=60)
    assert "[exit 0]" in shown and "Fixed." in shown, shown
    assert target.read_text() == "fixed\n", shown
