"""The public face of ``agy_host``, pinned.

* The names exported from the package root are exactly :data:`EXPORTS`:
  adding one is a decision (edit the list), removing one breaks users.
* Core's top level stays small (at most ten modules), and its rooms say who
  may import them: ``contract/``, ``engine/``, ``service/`` and
  ``testing/`` are public; ``runtime/``, ``keeper/``, ``cli/``, ``builtins/``,
  the plugin manager and ``api._*`` are private.
* No plugin in this repository (nor the plugin template) imports a private
  core module: what a plugin needs must be public first.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agy_host

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core" / "src" / "agy_host"

EXPORTS = [
    "AgentCommand",
    "AgentMode",
    "AgyHostError",
    "Answer",
    "BoundConversation",
    "CommandsUpdated",
    "Config",
    "DiagnosticReport",
    "DiffSource",
    "DriverSnapshot",
    "Engine",
    "EngineCapabilities",
    "EngineContext",
    "EngineError",
    "EngineUnavailable",
    "ExitCode",
    "FileDiff",
    "FormField",
    "HostEvent",
    "HostTool",
    "HostToolUse",
    "ImageBlock",
    "KeeperLost",
    "McpServerSpec",
    "ModeCatalog",
    "ModelCatalog",
    "ModelInfo",
    "NotSupported",
    "Notice",
    "OutputInvalid",
    "PermissionAnswered",
    "PermissionDecision",
    "PermissionDenied",
    "PermissionOption",
    "PermissionPolicy",
    "PermissionRequest",
    "PlanEntry",
    "PlanUpdated",
    "PromptContext",
    "PromptPart",
    "Question",
    "QuestionAnswered",
    "RenderOptions",
    "Renderer",
    "ResourceBlock",
    "RunContext",
    "Service",
    "Session",
    "SessionStatus",
    "SessionBusy",
    "SessionDetail",
    "SessionEntry",
    "SessionInfo",
    "SessionNotFound",
    "StateFile",
    "TextBlock",
    "TextDelta",
    "ThoughtDelta",
    "ToolCall",
    "ToolCard",
    "ToolResult",
    "ToolUseRequested",
    "Turn",
    "TurnContext",
    "TurnDriver",
    "TurnEnded",
    "TurnError",
    "TurnHandle",
    "TurnInterrupted",
    "TurnRequest",
    "TurnResult",
    "TurnStarted",
    "TurnTimeout",
    "TurnTimers",
    "UsageCounts",
    "UsageError",
    "UsageReport",
    "__version__",
    "delete_session",
    "fork_session",
    "get_session",
    "hookimpl",
    "list_sessions",
    "open_session",
    "run",
]

PUBLIC_ROOMS = ("contract", "engine", "service", "testing")
PUBLIC_MODULES = {
    "config",
    "hookspecs",
    "exit_codes",
    "fsutil",
    "entry_points",
    "api",
    "api.errors",
    "api.status",
    "api.sessions",
}
PRIVATE_PREFIXES = ("runtime", "cli", "builtins", "plugins", "api._", "keeper")


def test_the_exports_are_pinned() -> None:
    assert sorted(agy_host.__all__) == sorted(EXPORTS)


def test_dir_lists_the_whole_public_api_and_nothing_else() -> None:
    """Issue 26 item 12: the names load lazily, so without ``__dir__`` a
    fresh ``dir(agy_host)`` showed 4 of them (and the module's helpers)."""
    fresh = subprocess.run(
        [sys.executable, "-c", "import agy_host, json; print(json.dumps(dir(agy_host)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(fresh.stdout) == sorted(EXPORTS)


def test_every_event_a_program_receives_is_in_the_python_docs() -> None:
    """Issue 26 item 12: ``ToolUseRequested`` reached programs undocumented."""
    from typing import get_args

    from agy_host.contract.events import HostEvent

    page = (REPO / "docs" / "python.md").read_text()
    missing = [event.__name__ for event in get_args(HostEvent) if f"`{event.__name__}`" not in page]
    assert missing == []


@pytest.mark.parametrize("name", EXPORTS)
def test_every_export_resolves_to_a_public_home(name: str) -> None:
    value = getattr(agy_host, name)
    module = getattr(value, "__module__", "agy_host") or "agy_host"
    if name in ("__version__", "hookimpl") or not module.startswith("agy_host."):
        return
    assert is_public(module), f"agy_host.{name} is defined in the private module {module}"


def test_core_has_at_most_ten_top_level_modules() -> None:
    modules = sorted(p.name for p in CORE.glob("*.py"))
    assert len(modules) <= 10, modules


def is_public(module: str) -> bool:
    if module == "agy_host":
        return True
    rest = module.removeprefix("agy_host.")
    if rest.startswith(PRIVATE_PREFIXES):
        return False
    return rest in PUBLIC_MODULES or rest.split(".")[0] in PUBLIC_ROOMS


def imported_modules(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # ``from agy_host import builtins`` names a module too
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return [(line, name) for line, name in found if name == "agy_host" or name.startswith("agy_host.")]


def plugin_sources() -> list[Path]:
    roots = [*REPO.glob("plugins/*/src"), REPO / "docs" / "examples"]
    return sorted(p for root in roots for p in root.rglob("*.py"))


def test_no_plugin_imports_a_private_core_module() -> None:
    offenders = []
    for path in plugin_sources():
        for line, module in imported_modules(path):
            if module.startswith("agy_host.") and not is_public(module) and _is_module(module):
                offenders.append(f"{path.relative_to(REPO)}:{line}: {module}")
    assert not offenders, "plugins import private core modules:\n" + "\n".join(offenders)


def _is_module(name: str) -> bool:
    """``from agy_host.contract.events import TextDelta`` lists ``...events.TextDelta``: a name, not a module."""
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from agy_host.runtime.host import Host\nfrom agy_host import builtins\n")
    assert [m for _, m in imported_modules(bad) if not is_public(m) and _is_module(m)] == [
        "agy_host.runtime.host",
        "agy_host.builtins",
    ]


CODE_WORDS = re.compile(r"\b(G(1|9|10)|Gate [A-Z])\b")


@pytest.mark.parametrize("command", ["run", "chat", "ask", "sessions", "config", "doctor"])
def test_help_speaks_words_not_spec_codes(command: str) -> None:
    from typer.testing import CliRunner

    from agy_host.cli.app import build_app
    from agy_host.cli.state import CliState

    state = CliState(env={})
    app = build_app(state)
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert not CODE_WORDS.search(result.output), result.output


def test_user_docs_speak_words_not_spec_codes() -> None:
    pages = [REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("plugins/*/README.md")]
    found = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if CODE_WORDS.search(line)
    ]
    assert not found, "\n".join(found)
