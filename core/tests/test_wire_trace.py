"""The wire trace (core's engine SDK): what a line holds, what is redacted,
how the file is opened, and how a command turns it on. The engines' own
traffic through it is tested per engine, against real agents
(``plugins/*/tests/test_wire_trace.py``)."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_host.engine.redact import REDACTED, Redactor, env_secrets, sensitive_name, value_secrets
from agy_host.engine.trace import WireTrace, trace_target

Cli = Callable[..., tuple[int, str, str]]

GOOGLE_KEY = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"  # the shape of one, not a real key


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# -- redaction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["apiKey", "api_key", "GEMINI_API_KEY", "x-bridge-token", "Authorization", "client_secret", "password", "Cookie"],
)
def test_credential_names_are_sensitive(name: str) -> None:
    assert sensitive_name(name)


@pytest.mark.parametrize(
    "name", ["inputTokens", "output_tokens", "promptTokenCount", "maxTotalTokens", "keywords", "sessionId", "cwd"]
)
def test_counts_and_plain_names_are_not(name: str) -> None:
    assert not sensitive_name(name)


def test_values_under_sensitive_keys_are_redacted_and_counts_kept() -> None:
    frame: dict[str, Any] = {
        "config": {
            "models": [{"name": "gemini-3", "geminiApiEndpoint": {"apiKey": "k-123456789", "options": {}}}],
            "maxTotalTokens": "100000",
        },
        "headers": {"x-bridge-token": "abc", "content-type": "application/json"},
        "mcpServers": [
            {"headers": [{"name": "x-bridge-token", "value": "tok-987654321"}, {"name": "a", "value": "b"}]}
        ],
        "env": [{"name": "OPENAI_API_KEY", "value": "xyz"}],
        "credentials": {"password": {"nested": "hunter2"}, "empty_token": ""},
        "usage": {"inputTokens": 12, "outputTokens": "7", "promptTokenCount": 3},
        "count": 3,
        "ok": True,
    }
    out = Redactor().value(frame)
    assert out["config"]["models"][0]["geminiApiEndpoint"] == {"apiKey": REDACTED, "options": {}}
    assert out["config"]["models"][0]["name"] == "gemini-3"
    assert out["config"]["maxTotalTokens"] == "100000"
    assert out["headers"] == {"x-bridge-token": REDACTED, "content-type": "application/json"}
    assert out["mcpServers"][0]["headers"] == [
        {"name": "x-bridge-token", "value": REDACTED},
        {"name": "a", "value": "b"},
    ]
    assert out["env"] == [{"name": "OPENAI_API_KEY", "value": REDACTED}]
    assert out["credentials"] == {"password": {"nested": REDACTED}, "empty_token": ""}
    assert out["usage"] == frame["usage"] and out["count"] == 3 and out["ok"] is True
    assert frame["headers"]["x-bridge-token"] == "abc", "the frame itself is not changed"


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (f"GET https://generativelanguage.googleapis.com/v1/models?key={GOOGLE_KEY}&alt=sse", GOOGLE_KEY),
        (f"the key is {GOOGLE_KEY}.", GOOGLE_KEY),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
        ("curl -H 'authorization: token ghp_abcdefghijklmnop'", "ghp_abcdefghijklmnop"),
        ("bearer sk-live-0123456789abcdefghij", "sk-live-0123456789abcdefghij"),
        ("using OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx now", "sk-proj-abcdefghijklmnopqrstuvwx"),
        ('{"apiKey": "plain-secret-value", "model": "m"}', "plain-secret-value"),
        ("x-goog-api-key: some-socket-key-1234", "some-socket-key-1234"),
        ("export GITHUB_TOKEN=gho_0123456789 && run", "gho_0123456789"),
        ("password='correct horse'", "correct"),
    ],
)
def test_secrets_inside_strings_are_redacted(text: str, gone: str) -> None:
    out = Redactor().text(text)
    assert gone not in out, out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    ["Hello there.", "max_tokens=100 and inputTokens: 42", "the session id is fake-session-0001", "a=b; c: d"],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert Redactor().text(text) == text


def test_known_secret_values_are_redacted_wherever_they_appear() -> None:
    redactor = Redactor(["s3cr3t-value-xyz", "short"])
    redactor.add(["another-secret-99"])
    out = redactor.value({"text": "echo s3cr3t-value-xyz|another-secret-99", "list": ["short stays"]})
    assert out == {"text": f"echo {REDACTED}|{REDACTED}", "list": ["short stays"]}


def test_secrets_are_taken_from_the_environment_and_the_config() -> None:
    env = {"GEMINI_API_KEY": "AIza-env-secret", "HOME": "/home/me", "TOKENIZERS_PARALLELISM": "false"}
    assert env_secrets(env) == ["AIza-env-secret"]
    config = {"acp": {"profiles": {"g": {"env": {"ANTHROPIC_API_KEY": "sk-config-secret"}, "command": "x"}}}}
    assert value_secrets(config) == ["sk-config-secret"]


# -- the file ----------------------------------------------------------------------------


def test_each_frame_is_one_json_line_with_time_engine_direction_and_frame(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    trace = WireTrace.open(path)
    tap = trace.tap("acp")
    before = time.time()
    tap.sent(b'{"jsonrpc":"2.0","id":0,"method":"initialize"}\n')
    tap.received('{"jsonrpc":"2.0","id":0,"result":{}}')
    tap.received(b"Open the following link: https://example.com \xff")
    tap.stderr("warning: something")
    tap.sent({"bootstrap": {"OutputConfig": {"port": 1, "api_key": "abc"}}})
    # Written at once: a crash now still leaves every line on disk.
    got = lines(path)
    trace.close()
    tap.received(b"{}")  # after close: nothing, and no error
    assert [(e["engine"], e["dir"]) for e in got] == [
        ("acp", "out"),
        ("acp", "in"),
        ("acp", "in"),
        ("acp", "stderr"),
        ("acp", "out"),
    ]
    assert got[0]["frame"] == {"jsonrpc": "2.0", "id": 0, "method": "initialize"}
    assert got[1]["frame"] == {"jsonrpc": "2.0", "id": 0, "result": {}}
    assert got[2]["frame"] == "Open the following link: https://example.com \ufffd"
    assert got[3]["frame"] == "warning: something"
    assert got[4]["frame"] == {"bootstrap": {"OutputConfig": {"port": 1, "api_key": REDACTED}}}
    assert all(before - 1 <= e["time"] <= time.time() + 1 for e in got)
    assert all(round(e["time"], 3) == e["time"] for e in got)
    assert len(lines(path)) == 5


def test_the_file_is_private_and_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"old": 1}\n')
    path.chmod(0o644)
    trace = WireTrace.open(path, env={"GEMINI_API_KEY": "env-secret-123"})
    trace.tap("harness").sent('{"text": "env-secret-123"}')
    trace.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    fresh = tmp_path / "fresh.jsonl"
    WireTrace.open(fresh).close()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    old, new = lines(path)
    assert old == {"old": 1} and new["frame"] == {"text": REDACTED}


def test_a_write_that_fails_stops_the_trace_instead_of_the_turn(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    trace = WireTrace.open("/dev/full")
    trace.tap("acp").sent(b"{}")
    assert not trace.on and "No space left" in trace.error


def test_the_flag_wins_over_the_environment() -> None:
    env = {"AGY_HOST_TRACE": "/tmp/from-env.jsonl"}
    assert trace_target("/tmp/flag.jsonl", env) == "/tmp/flag.jsonl"
    assert trace_target(None, env) == "/tmp/from-env.jsonl"
    assert trace_target(None, {"AGY_HOST_TRACE": "  "}) is None


# -- commands ------------------------------------------------------------------------------


def test_run_chat_and_ask_take_trace_in_their_help(cli: Cli) -> None:
    for command in ("run", "chat", "ask"):
        code, out, _ = cli(command, "--help")
        assert code == 0 and "--trace" in out and "AGY_HOST_TRACE" in out, command


def test_a_trace_in_a_missing_folder_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("run", "--trace", str(tmp_path / "no" / "such" / "t.jsonl"), "hi")
    assert code == 2 and "does not exist" in err


def test_doctor_says_whether_tracing_is_on_and_where_to(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def row(exit_code: int = 0) -> dict[str, Any]:
        code, out, _ = cli("doctor", "--format", "json")
        assert code == exit_code, out
        [host] = [s for s in json.loads(out)["sections"] if s["title"] == "host"]
        [trace] = [r for r in host["rows"] if r["label"] == "trace"]
        assert isinstance(trace, dict)
        return trace

    assert row()["value"].startswith("off (--trace FILE")
    target = tmp_path / "t.jsonl"
    monkeypatch.setenv("AGY_HOST_TRACE", str(target))
    on = row()
    assert on["value"].startswith("on:") and str(target) in on["value"] and on.get("status", "info") == "info"
    monkeypatch.setenv("AGY_HOST_TRACE", str(tmp_path / "gone" / "t.jsonl"))
    broken = row(exit_code=1)  # a run would fail as well
    assert broken["status"] == "error" and "does not exist" in broken["value"]
