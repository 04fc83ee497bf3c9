"""Which shell example of the README and the docs the newcomer suite runs,
on which real agent, and which it does not run, with the reason.

Every shell block that names ``agy-host`` (``shell.shell_blocks``) has an
entry here, keyed by its page and its first command (comments left out);
``test_catalogue.py`` fails on a block with no entry and on an entry with no
block, so a new or changed example is run or explained before it ships.

Agents: ``gemini`` is the real Gemini CLI (0.61, npm), ``fast-agent`` the
real fast-agent-mcp (Python 3.13), ``harness`` the real Antigravity harness
binary, all three with the kit's scripted model API in place of their
model; ``sandbox`` is the ACP engine's bundled sandbox agent, which a fresh
install runs until an ACP agent is installed (what the README's first
command promises).
"""

from __future__ import annotations

from dataclasses import dataclass

from newcomer.shell import commands, find, without_comment

#: The agents a block runs on (see the module's docstring).
AGENTS = ("gemini", "fast-agent", "harness", "sandbox")


@dataclass(frozen=True)
class Run:
    """The block is run as written by ``test`` (in ``tests/newcomer/``), on ``agents``."""

    test: str
    agents: tuple[str, ...]
    #: what of the block is not run, and why (empty: all of it)
    except_: str = ""


@dataclass(frozen=True)
class Skip:
    """The block is not run; ``reason`` says why, and where it is tested if it is."""

    reason: str


README_FIRST = (
    "python3 -m venv .venv && .venv/bin/pip install -q ./core ./plugins/acp_engine"
    ' && .venv/bin/agy-host run "Hello, who are you?"'
)
README_EVERYDAY = 'agy-host run "fix the failing test"'

BLOCKS: dict[tuple[str, str], Run | Skip] = {
    ("README.md", README_FIRST): Run(
        "test_readme.py::test_the_first_turn_runs_on_the_sandbox_agent",
        ("sandbox",),
        except_=(
            "the venv and the pip install (network, about a minute): the place has the same distributions, "
            "./core and ./plugins/acp_engine, the others hidden, and .venv/bin/agy-host is the tested one; "
            "and `bash .ci/run` (this suite is part of it)"
        ),
    ),
    ("README.md", README_EVERYDAY): Run("test_readme.py (line by line: EVERYDAY below)", ("gemini", "harness")),
    ("docs/ARCHITECTURE.md", 'agy-host run "fix the test" cli/run_cmd.py (or agy_host.run / open_session)'): Skip(
        "a diagram of the call path through the modules, not commands"
    ),
    ("docs/bridge.md", "pip install ./core ./plugins/acp_engine ./plugins/bridge_mcp"): Run(
        "test_pages.py::test_the_bridges_question_reaches_the_person_at_the_terminal", ("fast-agent",)
    ),
    ("docs/json-events.md", 'agy-host run --format json --session demo "say hi"'): Run(
        "test_pages.py::test_the_json_events_are_the_ones_shown", ("harness",)
    ),
    ("docs/json-events.md", 'agy-host run --format json "…" | jq -j \'select(.type == "text") | .delta\''): Run(
        "test_pages.py::test_the_json_events_are_the_ones_shown", ("harness",)
    ),
    (
        "docs/json-events.md",
        'agy-host run --format json "…" | jq -c \'select(.type == "plan") | [.entries[] | [.status, .content]]\'',
    ): Skip(
        "none of the real agents here sends a plan: the Gemini CLI 0.61 keeps its todos as a tool (write_todos), "
        "fast-agent sends none, the harness's wire carries none; the plan event and these fields are tested on the "
        "kit's fake ACP agent (core/tests/test_plan_and_commands.py, tests/test_python_api.py)"
    ),
    ("docs/sessions.md", 'agy-host run --session work "read the failing test"'): Run(
        "test_pages.py::test_a_warm_session_as_the_sessions_page_shows_it", ("harness",)
    ),
    ("docs/sessions.md", "agy-host sessions status"): Run(
        "test_pages.py::test_warm_agents_are_seen_and_steered_as_the_sessions_page_shows", ("harness",)
    ),
    ("docs/sessions.md", "agy-host sessions list"): Run(
        "test_pages.py::test_sessions_are_listed_and_pruned_as_the_sessions_page_shows", ("harness",)
    ),
    ("docs/usage.md", "pip install ./core ./plugins/acp_engine"): Run(
        "test_readme.py::test_doctor_after_the_usage_pages_install", ("sandbox",)
    ),
    ("docs/usage.md", "agy-host chat --agent demo --session fix-greet"): Skip(
        "a recorded screen of a chat with the kit's fake ACP agent set up as the profile `demo`, not a real agent; "
        "the chat's screen is tested in a real terminal in tests/test_terminal_tmux.py and core/tests/test_chat_repl.py"
    ),
    ("docs/usage.md", "agy-host sessions list"): Skip(
        "the output of the recorded chat above (its ids and times), with the same fake agent; `sessions list` and "
        "`show` are tested in core/tests/test_sessions_list.py"
    ),
    ("docs/usage.md", 'agy-host run --session work "and the docs"'): Run(
        "test_pages.py::test_a_busy_session_says_what_it_waits_for", ("harness",)
    ),
    ("docs/engines/acp.md", "pip install ./core ./plugins/acp_engine"): Run(
        "test_pages.py::test_the_acp_pages_commands", ("sandbox", "gemini")
    ),
    ("docs/engines/acp.md", "agy-host acp install"): Skip(
        "installs Google's ACP server from Google's servers and signs in with a Google account: neither is possible "
        "on a CI machine; tested with fakes in plugins/acp_engine/tests/test_install.py, test_status.py and "
        "test_acp_auth_agents.py"
    ),
    ("docs/engines/harness.md", "pip install ./core ./plugins/harness_engine"): Run(
        "test_pages.py::test_the_harness_install_block",
        ("harness",),
        except_=(
            "`agy-host harness install` (downloads the 45 MB wheel from PyPI; CI provisions the same pinned wheel "
            "once into .cache/harness with the same code, python -m agy_host_harness.install)"
        ),
    ),
    ("docs/engines/harness.md", 'agy-host run --engine harness "fix the failing test"'): Run(
        "test_pages.py::test_the_harness_pages_commands", ("harness",)
    ),
    ("docs/engines/harness.md", "port=$(mktemp)"): Run(
        "test_pages.py::test_the_harness_runs_offline_as_its_page_shows", ("harness",)
    ),
    ("docs/engines/stream-json.md", "pip install ./core ./plugins/stream_json_engine"): Skip(
        "runs Google's `agy` CLI, which needs a Google sign-in and cannot be installed on a CI machine; the "
        "stream-json engine is tested against the kit's fake agy (plugins/stream_json_engine/tests, nox -s parity)"
    ),
}

#: The README's everyday block, line by line (its commands without their
#: comments): ``(agent, test)`` for each agent it runs on, or why it is not run.
HARNESS_EVERYDAY = "test_readme.py::test_the_everyday_block_on_the_harness"
GEMINI_EVERYDAY = "test_readme.py::test_the_everyday_block_on_the_gemini_cli"
EVERYDAY: dict[str, tuple[tuple[str, str], ...] | str] = {
    'agy-host run "fix the failing test"': (
        ("gemini", "test_readme.py::test_fix_the_failing_test_asks_before_the_gemini_cli_writes"),
        ("harness", HARNESS_EVERYDAY),
    ),
    'agy-host run --session work "and now the docs"': (("harness", HARNESS_EVERYDAY),),
    "agy-host sessions status": (("harness", HARNESS_EVERYDAY),),
    'agy-host run --agent "gemini --acp" "hi"': (("gemini", "test_pages.py::test_the_acp_pages_commands"),),
    'agy-host run --format json "hi" | jq .': (("harness", HARNESS_EVERYDAY),),
    'agy-host run --permissions auto "run the tests"': (("harness", HARNESS_EVERYDAY),),
    # (the harness asks questions only with [harness] questions = true; the bridge's question tool is an ACP agent's)
    'agy-host run --answers answers.toml "ship it"': (("gemini", GEMINI_EVERYDAY),),
    "agy-host doctor": (("harness", HARNESS_EVERYDAY),),
    "agy-host plugins": (("harness", HARNESS_EVERYDAY),),
    "agy-host models": (("harness", HARNESS_EVERYDAY),),
    "agy-host engine": (("harness", HARNESS_EVERYDAY),),
    "agy-host config show | set KEY VALUE | unset KEY": (
        "a synopsis of three commands, not one to paste: `agy-host config show` runs in "
        f"{HARNESS_EVERYDAY}, `agy-host config set` sets up the places of this suite, and "
        "`config unset` is core/tests/test_cli.py::test_config_show_set_path"
    ),
    "agy-host acp-auth": (("gemini", GEMINI_EVERYDAY),),
    "agy-host acp-auth --logout": (("gemini", GEMINI_EVERYDAY),),
}


def everyday(test: str) -> list[str]:
    """The README's everyday lines (as written) that ``test`` runs, in the README's order."""
    lines = commands(find("README.md", README_EVERYDAY))
    return [line for line in lines if any(name == test for _agent, name in _runs(without_comment(line)))]


def _runs(line: str) -> tuple[tuple[str, str], ...]:
    runs = EVERYDAY[line]
    return () if isinstance(runs, str) else runs


__all__ = [
    "AGENTS",
    "BLOCKS",
    "EVERYDAY",
    "GEMINI_EVERYDAY",
    "HARNESS_EVERYDAY",
    "README_EVERYDAY",
    "README_FIRST",
    "Run",
    "Skip",
    "everyday",
]
