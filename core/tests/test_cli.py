"""The ``agy-host`` CLI in-process (``main(argv)``) with the echo engine:
streaming, formats, sessions, exit codes, Ctrl-C, and the info commands."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from engines.echo_engine import EchoPlugin

from agy_host import hookimpl
from agy_host.cli.exit_codes import EXIT_CODES, ExitCode
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.testing.store import read_bindings

Cli = Callable[..., tuple[int, str, str]]


def _sessions(agy_host_home: Any) -> dict[str, Any]:
    return read_bindings(agy_host_home.state_dir)


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_version_and_help(cli: Cli) -> None:
    assert cli("--version")[:2] == (0, "agy-host 0.1.0\n")
    code, out, _ = cli("--help")
    assert code == 0
    for command in ("run", "doctor", "plugins", "engine", "models", "config", "sessions"):
        assert command in out
    for code_value in EXIT_CODES:
        assert f"{code_value:>3}  " in out
    code, out, _ = cli("run", "--help")
    assert code == 0
    assert "--session" in out and "--resume" in out and "run-YYYYMMDD-HHMMSS" in out
    assert "130  interrupted" in out


def test_no_arguments_shows_help_and_bad_usage_exits_2(cli: Cli) -> None:
    _, out, err = cli()
    assert "Usage" in out + err
    assert cli("run", "--no-such-flag", "x")[0] == ExitCode.USAGE
    assert cli("frobnicate")[0] == ExitCode.USAGE


def test_run_streams_text_and_closes_with_the_session(cli: Cli, agy_host_home: Any) -> None:
    code, out, err = cli("run", "hi", "there")
    assert code == 0
    assert out == "echo: hi there\n"
    closing = err.strip().splitlines()[-1]
    assert closing.startswith("[done] stop in ")
    assert "usage not reported by this agent" in closing
    name = closing.split("session: ")[1]
    assert name.startswith("run-")
    binding = _sessions(agy_host_home)[f"{name}@echo"]
    assert binding["engine"] == "echo"
    assert binding["conversation_id"].startswith("echo-")


def test_run_json_ends_with_done(cli: Cli) -> None:
    code, out, _ = cli("run", "--format", "json", "--session", "j1", "!usage", "hi")
    assert code == 0
    events = _json_lines(out)
    assert all(e["version"] == 1 for e in events)
    types = [e["type"] for e in events]
    assert types[0] == "turn_start" and types[-2:] == ["turn_end", "done"]
    assert "text" in types and "usage" in types
    done = events[-1]
    assert done["session"] == "j1"
    assert done["exit_code"] == 0
    assert done["stop_reason"] == "stop"
    assert done["conversation_id"] == events[-2]["conversation_id"]
    assert done["usage"] == {"input_tokens": 3, "output_tokens": 5}


def test_run_quiet_prints_only_the_answer(cli: Cli) -> None:
    code, out, err = cli("run", "-f", "quiet", "hello")
    assert (code, out) == (0, "echo: hello\n")
    assert "[done]" not in err


def test_session_is_created_then_resumed(cli: Cli, echo_plugin: EchoPlugin) -> None:
    assert cli("run", "--session", "work", "one")[0] == 0
    assert cli("run", "--session", "work", "--resume", "two")[0] == 0
    assert cli("run", "three")[0] == 0
    first, second, third = echo_plugin.recorder
    assert first.conversation_id is None
    assert second.conversation_id is not None
    assert third.conversation_id is None


def test_resume_of_an_unknown_session_exits_4(cli: Cli) -> None:
    cli("run", "--session", "known", "x")
    code, _, err = cli("run", "--session", "ghost", "--resume", "hi")
    assert code == ExitCode.NO_SUCH_SESSION
    assert "no such session 'ghost'" in err and "known" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--session", "a@b", "hi"], "contains '@'"),
        (["run", "--format", "yaml", "hi"], "unknown --format 'yaml'"),
        (["run", "--resume", "hi"], "--resume needs --session"),
        (["run", "--timeout", "-1", "hi"], ""),
        (["run", "--cwd", "/no/such/dir", "hi"], ""),
    ],
)
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    code, _, err = cli(*args)
    assert code == ExitCode.USAGE
    assert message in err


def test_prompt_from_stdin(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("piped prompt\n"))
    assert cli("run", "-f", "quiet", "-")[:2] == (0, "echo: piped prompt\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("   \n"))
    assert cli("run", "-")[0] == ExitCode.USAGE


def test_unknown_engine_lists_installed(cli: Cli) -> None:
    code, _, err = cli("run", "--engine", "nope", "hi")
    assert code == ExitCode.ERROR
    assert "unknown engine 'nope'" in err and "echo" in err


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["!fail"], ExitCode.ERROR),
        (["--timeout", "0.002", "!hang"], ExitCode.TIMEOUT),
        (["--inactivity", "0.002", "!hang"], ExitCode.TIMEOUT),
        (["--permissions", "deny", "!perm"], ExitCode.PERMISSION_DENIED),
        (["!question"], ExitCode.PERMISSION_DENIED),
        (["--permissions", "auto", "!perm"], ExitCode.OK),
        (["!perm"], ExitCode.PERMISSION_DENIED),  # the default: nobody to ask, so it fails closed
    ],
)
def test_exit_codes(cli: Cli, args: list[str], code: int) -> None:
    assert cli("run", *args)[0] == code


def test_errors_are_shown_and_the_session_kept(cli: Cli, agy_host_home: Any) -> None:
    code, _, err = cli("run", "--session", "f", "!fail")
    assert code == 1
    assert "[error] echo: asked to fail" in err
    assert "f@echo" in _sessions(agy_host_home)


def test_tool_cards_in_text_mode(cli: Cli) -> None:
    _, _, err = cli("run", "!tool")
    lines = [line for line in err.splitlines() if line.startswith("[tool]")]
    assert lines[0] == "[tool] Read a.txt (started)"
    assert lines[1].startswith("[tool] Read a.txt (done, ")
    assert len(lines) == 2


class ToolPlugin:
    name = "tool-plugin"

    @hookimpl
    def agy_host_register_tools(self, register: Callable[[HostTool], None]) -> None:
        async def call(args: dict[str, Any]) -> ToolResult:
            return ToolResult(text=f"pong {args['x']}")

        register(HostTool(name="host_echo", description="echo", input_schema={}, call=call))


def test_run_executes_host_tools_and_resumes_the_turn(cli: Cli, echo_plugin: EchoPlugin) -> None:
    code, out, err = cli("run", "!bridge", plugins=[echo_plugin, ToolPlugin()])
    assert code == 0
    assert "tool said: pong 1" in out
    assert "[host tool] host_echo (parked)" in err


def test_ctrl_c_aborts_the_turn_and_keeps_the_binding(cli: Cli, agy_host_home: Any) -> None:
    code, out, err = cli("run", "--session", "int", "!selfint")
    assert code == ExitCode.INTERRUPTED
    assert "working" in out
    assert "interrupting the turn" in err
    assert "[done] aborted" in err
    assert "int@echo" in _sessions(agy_host_home)


def test_second_ctrl_c_stops_waiting_for_a_stuck_agent(cli: Cli) -> None:
    code, _, err = cli("run", "!selfint2")
    assert code == ExitCode.INTERRUPTED
    assert "not waiting for the agent any longer" in err
    # the agent never settled the turn: the host closed it for the renderer
    assert "[done] aborted" in err and "stopped waiting for the agent" in err


def test_doctor_text_and_json(cli: Cli) -> None:
    code, out, _ = cli("doctor")
    assert code == 0, out
    assert "agy-host doctor (no tokens spent)" in out
    assert "selected:" in out and "echo (AGY_HOST_ENGINE is set)" in out
    assert "echo engine:" in out  # the engine's own probe
    assert "echo hooks:" in out  # the engine's hooks object was registered
    assert "no run recorded yet" in out
    cli("run", "--session", "d1", "hi")
    code, out, _ = cli("doctor", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    sections = {s["title"]: {r["label"]: r for r in s["rows"]} for s in doc["sections"]}
    last = sections["last run"]
    assert last["driver"]["value"].startswith("echo: ready pid=")  # taken before the driver closed
    assert last["session id"]["value"].startswith("echo-")
    assert last["stats"]["value"] == "turns=1"
    assert last["echo note"]["value"] == "in-process"
    assert "d1" in sections["sessions"]["on echo"]["value"]
    assert any(p["name"] == "echo-test-plugin" for p in doc["plugins"])


class BrokenDiagnostics:
    name = "broken-diag"

    @hookimpl
    def agy_host_diagnostics(self, report: Any) -> None:
        raise RuntimeError("diag exploded")


def test_doctor_reports_a_failing_plugin_and_exits_1(cli: Cli, echo_plugin: EchoPlugin) -> None:
    code, out, _ = cli("doctor", plugins=[echo_plugin, BrokenDiagnostics()])
    assert code == ExitCode.ERROR
    assert "diag exploded" in out


def test_plugins_command(cli: Cli) -> None:
    code, out, _ = cli("plugins")
    assert code == 0
    assert "echo-test-plugin  [in-process]" in out
    assert "agy_host.builtins" not in out
    code, out, _ = cli("plugins", "--all", "--format", "json")
    doc = json.loads(out)
    names = {p["name"]: p for p in doc["plugins"]}
    assert names["agy_host.builtins.renderers"]["builtin"] is True
    assert names["echo-test-plugin"]["hooks"] == ["agy_host_register_engines"]
    assert isinstance(doc["engines"], list) and isinstance(doc["errors"], list)


def test_engine_show_and_set(cli: Cli, agy_host_home: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = cli("engine")
    assert code == 0
    assert out.startswith("engine: echo (AGY_HOST_ENGINE is set)")
    from agy_host.engine.base import installed_engines

    for entry in installed_engines():  # what each installed engine drives, from its distribution
        from importlib.metadata import distribution

        summary = distribution(entry.distribution).metadata["Summary"]
        assert f"{entry.name}  entry point" in out and summary in out, out
    monkeypatch.delenv("AGY_HOST_ENGINE")
    code, out, _ = cli("engine", "echo")
    assert code == 0
    assert "engine set to echo" in out
    assert 'engine = "echo"' in agy_host_home.config_path.read_text()
    code, out, _ = cli("engine", "--format", "json")
    assert json.loads(out)["source"] == "config"
    code, _, err = cli("engine", "nope")
    assert code == 1
    assert "unknown engine 'nope'" in err
    assert 'engine = "echo"' in agy_host_home.config_path.read_text()


def test_models(cli: Cli) -> None:
    code, out, _ = cli("models")
    assert code == 0
    assert out.splitlines()[0] == "* echo-1  Echo One  efforts: low, high"
    code, out, _ = cli("models", "-f", "json")
    assert [m["id"] for m in json.loads(out)["models"]] == ["echo-1", "echo-2"]


def test_config_show_set_path(cli: Cli, agy_host_home: Any) -> None:
    code, out, _ = cli("config", "path")
    assert (code, out.strip()) == (0, str(agy_host_home.config_path))
    code, out, _ = cli("config", "set", "turn.timeout_minutes", "2.5")
    assert code == 0
    code, out, _ = cli("config", "show")
    assert code == 0
    assert out.startswith(f"# {agy_host_home.config_path}")
    assert "timeout_minutes = 2.5" in out
    assert "AGY_HOST_ENGINE" in out  # the fixture's override is named
    code, _, err = cli("config", "set", "turn.timeout_minutes", "-4")
    assert code == 1 and "negative" in err
    code, out, _ = cli("config", "show", "--format", "json")
    assert json.loads(out)["config"]["turn"]["timeout_minutes"] == 2.5
    code, out, _ = cli("config", "unset", "turn.timeout_minutes")
    assert code == 0 and "turn.timeout_minutes removed from" in out and "its default again" in out
    code, out, _ = cli("config", "show", "--format", "json")
    assert json.loads(out)["config"]["turn"]["timeout_minutes"] == 10
    code, out, _ = cli("config", "unset", "turn.timeout_minutes")
    assert code == 0 and "is not set in" in out and "nothing changed" in out


def test_sessions_list_and_forget(cli: Cli) -> None:
    cli("run", "--session", "keep", "hi")
    code, out, _ = cli("sessions", "list")
    assert code == 0 and "keep@echo" in out
    assert cli("sessions", "forget", "keep")[0] == 0
    assert cli("sessions", "forget", "keep")[0] == ExitCode.NO_SUCH_SESSION
    code, out, _ = cli("sessions", "list", "--format", "json")
    assert json.loads(out)["bindings"] == {}


class CommandPlugin:
    name = "command-plugin"

    @hookimpl
    def agy_host_register_commands(self, app: Any) -> None:
        @app.command("hello")
        def hello() -> None:
            print("hello from a plugin")


class BrokenCommands:
    name = "broken-commands"

    @hookimpl
    def agy_host_register_commands(self, app: Any) -> None:
        raise RuntimeError("commands exploded")


def test_plugin_commands_are_added_and_a_broken_one_is_reported(cli: Cli, echo_plugin: EchoPlugin) -> None:
    plugins = [echo_plugin, CommandPlugin(), BrokenCommands()]
    assert cli("hello", plugins=plugins)[:2] == (0, "hello from a plugin\n")
    code, out, _ = cli("plugins", plugins=plugins)
    assert code == 0
    assert "broken-commands" in out and "commands exploded" in out


def test_config_warnings_are_shown(cli: Cli, agy_host_home: Any) -> None:
    agy_host_home.write_config('skip_permissions = "perhaps"\n')
    code, _, err = cli("run", "hi")
    assert code == 0
    assert "agy-host: warning: config: bad value for 'skip_permissions'" in err


class GoodService:
    name = "good-service"

    def __init__(self) -> None:
        self.started = False
        self.stopped = False

    async def run(self, *, task_status: Any) -> None:
        import trio

        self.started = True
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            self.stopped = True


class BadService:
    name = "bad-service"

    async def run(self, *, task_status: Any) -> None:
        raise OSError("port in use")


class ServicePlugin:
    name = "service-plugin"

    def __init__(self) -> None:
        self.good = GoodService()

    @hookimpl
    def agy_host_services(self, config: Any) -> list[Any]:
        return [self.good, BadService()]


def test_services_run_for_the_length_of_the_command(cli: Cli, echo_plugin: EchoPlugin) -> None:
    services = ServicePlugin()
    code, out, err = cli("run", "hi", plugins=[echo_plugin, services])
    assert (code, out) == (0, "echo: hi\n")
    assert services.good.started and services.good.stopped
    assert "service 'bad-service' failed: OSError: port in use" in err


def test_json_consumers_get_done_even_when_nothing_ran(cli: Cli) -> None:
    code, out, _ = cli("run", "--format", "json", "--engine", "nope", "hi")
    assert code == ExitCode.ERROR
    done = _json_lines(out)[-1]
    assert (done["type"], done["exit_code"], done["stop_reason"]) == ("done", 1, "error")
    assert "unknown engine" in done["error"]
    code, out, _ = cli("run", "--format", "json", "--session", "ghost", "--resume", "hi")
    assert code == ExitCode.NO_SUCH_SESSION
    assert _json_lines(out)[-1]["exit_code"] == 4
