"""``agy-host ask``: one-shot delegation with text, duration, status and a
resumable session; ``--mode plan`` through a real (fake) agy CLI process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host.cli.exit_codes import ExitCode
from agy_host.testing.agy_cli.agent import make_fake_agy
from agy_host.testing.store import read_bindings

Cli = Callable[..., tuple[int, str, str]]


def report(out: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(out)
    assert doc["type"] == "ask" and doc["version"] == 1
    return doc


def test_text_answer_and_status_line(cli: Cli) -> None:
    code, out, err = cli("ask", "what", "is", "up")
    assert code == 0
    assert out == "echo: what is up\n"
    status = err.strip().splitlines()[-1]
    assert status.startswith("[ask] ok in ")
    assert "; session ask-" in status and "; conversation echo-" in status
    assert "continue: agy-host run --session ask-" in status


def test_json_report_and_resume(cli: Cli, echo_plugin: Any) -> None:
    code, out, _ = cli("ask", "--format", "json", "--session", "deleg", "first")
    first = report(out)
    assert code == 0
    assert first["status"] == "ok" and first["text"] == "echo: first" and first["exit_code"] == 0
    assert first["session"] == "deleg" and first["engine"] == "echo"
    assert first["duration_s"] >= 0 and first["resume"] == 'agy-host run --session deleg "..."'
    code, out, _ = cli("ask", "--format", "json", "--session", "deleg", "--resume", "second")
    assert report(out)["conversation_id"] == first["conversation_id"]
    assert echo_plugin.recorder[-1].conversation_id == first["conversation_id"]


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        (["--timeout", "0.002", "!hang"], "timeout", ExitCode.TIMEOUT),
        (["!fail"], "error", ExitCode.ERROR),
        (["!selfint"], "aborted", ExitCode.INTERRUPTED),
        (["--session", "ghost", "--resume", "hi"], "error", ExitCode.NO_SUCH_SESSION),
    ],
)
def test_statuses(cli: Cli, args: list[str], status: str, code: int) -> None:
    got, out, _ = cli("ask", "--format", "json", *args)
    doc = report(out)
    assert (got, doc["status"], doc["exit_code"]) == (code, status, code)


def test_usage_errors(cli: Cli) -> None:
    assert cli("ask", "--format", "yaml", "x")[0] == ExitCode.USAGE
    assert cli("ask", "--resume", "x")[0] == ExitCode.USAGE
    code, out, _ = cli("ask", "--format", "json", "--file", "/no/such/file", "x")
    assert code == ExitCode.USAGE and "no such file" in report(out)["error"]


# -- --mode plan: the agy CLI in print mode ------------------------------------------


@pytest.fixture
def agy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    def make(scenario: Any = "happy") -> Any:
        fake = make_fake_agy(tmp_path / "fake-agy", scenario)
        monkeypatch.setenv("AGY_BIN", str(fake.bin))
        return fake

    return make


def test_plan_runs_agy_print_mode_and_is_resumable(cli: Cli, agy: Callable[..., Any], agy_host_home: Any) -> None:
    fake = agy({"turns": [[{"say": ["PLAN: ", "1. read 2. fix"]}]]})
    code, out, err = cli("ask", "--mode", "plan", "--format", "json", "--session", "rev", "review this")
    doc = report(out)
    assert code == 0, err
    assert (doc["status"], doc["engine"], doc["mode"]) == ("ok", "agy-cli", "plan")
    assert doc["text"] == "PLAN: 1. read 2. fix"
    cid = doc["conversation_id"]
    assert cid and doc["resume"] == 'agy-host ask --mode plan --session rev "..."'
    [argv] = fake.argvs()
    assert argv[argv.index("--mode") + 1] == "plan"
    assert argv[argv.index("--add-dir") + 1] == str(Path.cwd())
    assert argv[-2:] == ["-p", "review this"] and "--output-format" in argv
    assert "--dangerously-skip-permissions" not in argv
    sessions = read_bindings(agy_host_home.state_dir)
    assert sessions["rev"]["conversation_id"] == cid and sessions["rev"]["engine"] == "stream-json"
    code, out, _ = cli("ask", "--mode", "plan", "--format", "json", "--session", "rev", "and now?")
    assert code == 0
    second = fake.argvs()[-1]
    assert second[second.index("--conversation") + 1] == cid


def test_plan_on_acp_says_acp_has_no_plan_mode(
    cli: Cli, agy: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    agy()
    monkeypatch.setenv("AGY_HOST_ENGINE", "acp")
    code, out, err = cli("ask", "--mode", "plan", "look")
    assert code == 0
    assert "Antigravity's ACP server has no plan mode" in err
    assert out == "HELLO\n"


def test_plan_timeout_stops_agy(cli: Cli, agy: Callable[..., Any]) -> None:
    fake = agy("slow")
    code, out, _ = cli("ask", "--mode", "plan", "--format", "json", "--timeout", "0.01", "x")
    doc = report(out)
    assert (code, doc["status"]) == (ExitCode.TIMEOUT, "timeout")
    assert fake.events("sigterm"), "agy was stopped, not left running"


def test_plan_failure_carries_agys_error(cli: Cli, agy: Callable[..., Any]) -> None:
    agy("crash")
    code, out, _ = cli("ask", "--mode", "plan", "--format", "json", "x")
    doc = report(out)
    assert (code, doc["status"]) == (ExitCode.ERROR, "error")
    assert "agy exited with status 1" in doc["error"] and "crashing mid-turn" in doc["error"]
    assert doc["text"] == "PARTIAL"


def test_plan_without_agy_says_how_to_get_it(cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGY_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, _ = cli("ask", "--mode", "plan", "--format", "json", "x")
    assert code == ExitCode.ERROR
    assert "no `agy` was found" in report(out)["error"]


def test_plan_without_the_stream_json_engine_says_how_to_get_it(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The print-mode plan is the stream-json plugin's; installed without it,
    the command says which package to install (here: its lookup fails)."""
    from agy_host.engine import base

    def not_installed(name: str, extra: object = None) -> object:
        raise base.EngineError(f"unknown engine {name!r}")

    monkeypatch.setattr(base, "load_engine_class", not_installed)
    code, out, _ = cli("ask", "--mode", "plan", "--format", "json", "x")
    assert code == ExitCode.ERROR
    assert "pip install " in report(out)["error"] and "plugins/stream_json_engine" in report(out)["error"]
