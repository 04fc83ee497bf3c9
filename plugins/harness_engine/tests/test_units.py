"""Pure units of the harness engine: the bootstrap codec, frame decoding, the
step mapping, the config it sends, binary resolution and the managed install.
(The engine against the real binary: ``test_real_harness.py``.)"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from agy_host_harness import binary, bootstrap, harness_config, install, pin, prompting, wire
from agy_host_harness.mapping import StepMapper
from agy_host_harness.process import meaningful
from agy_host_harness.settings import HarnessSettings, narrow

from agy_host.contract.events import (
    TextActivity,
    ThoughtActivity,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
)
from agy_host.contract.prompt import ImageBlock, ResourceBlock, TextBlock
from agy_host.contract.prompt_parts import PROMPT_SEPARATOR, SYSTEM_END, SYSTEM_PREAMBLE
from agy_host.engine.base import McpServerSpec
from agy_host.engine.turn import TurnFailed

# -- bootstrap ------------------------------------------------------------------------


def _read_fields(data: bytes) -> list[tuple[int, int, Any]]:
    out, pos = [], 0
    while pos < len(data):
        key, pos = bootstrap._read_varint(data, pos)
        field, kind = key >> 3, key & 7
        if kind == 0:
            value, pos = bootstrap._read_varint(data, pos)
        else:
            size, pos = bootstrap._read_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        out.append((field, kind, value))
    return out


def test_input_config_is_protobuf_with_the_harness_field_numbers() -> None:
    config = bootstrap.InputConfig(
        storage_directory="/s", port=300, client_info=bootstrap.ClientInfo(version="v"), env={"A": "1", "B": "2"}
    )
    fields = _read_fields(bootstrap.encode_input(config))
    assert fields[0] == (1, 2, b"/s")
    assert fields[1] == (2, 0, 300)  # a two-byte varint
    assert fields[2] == (3, 2, b"127.0.0.1")
    info = _read_fields(fields[3][2])
    assert (1, 2, b"python") in info and (2, 2, b"v") in info
    env = [_read_fields(v) for f, _, v in fields if f == 5]
    assert env == [[(1, 2, b"A"), (2, 2, b"1")], [(1, 2, b"B"), (2, 2, b"2")]]
    assert bootstrap.frame(b"abc") == b"\x03\x00\x00\x00abc"


def test_output_config_decodes_and_skips_unknown_fields() -> None:
    key = "k" * 32
    data = b"\x08" + bootstrap._varint(40000) + b"\x12\x20" + key.encode() + b"\x18\x07" + b"\x22\x01x"
    assert bootstrap.decode_output(data) == bootstrap.OutputConfig(port=40000, api_key=key)
    with pytest.raises(bootstrap.BootstrapError, match="no usable port"):
        bootstrap.decode_output(b"\x12\x01k")
    with pytest.raises(bootstrap.BootstrapError, match="truncated"):
        bootstrap.decode_output(b"\x08\xff")


# -- frames and mapping -----------------------------------------------------------------


def test_frames_tolerate_unknown_kinds_fields_and_int64_strings() -> None:
    event = wire.decode(b'{"usageUpdate":{"total":{"promptTokenCount":"12"}},"seqNum":"9","newThing":{}}')
    assert event.seq_num == 9 and event.usage_update is not None
    assert event.usage_update.total == wire.Usage(prompt_token_count=12)
    unknown = wire.decode(b'{"someFutureEvent":{"x":1}}')
    assert unknown == wire.OutputEvent()
    with pytest.raises(msgspec.DecodeError):
        wire.decode(b"not json")
    deep = '{"stepUpdate":{"invokeSubagent":' + '{"a":' * 3000 + "1" + "}" * 3000 + "}}"
    assert wire.decode_or_reason(deep) == (None, "nested too deep"), "deep JSON is garbage, never a crash"
    assert wire.decode_or_reason("[1]")[0] is None
    assert wire.decode_or_reason('{"seqNum": "3"}') == (wire.OutputEvent(seq_num=3), "")


def _step(**fields: Any) -> wire.StepUpdate:
    return msgspec.convert({"trajectoryId": "main", **fields}, wire.StepUpdate)


def test_mapping_text_thinking_and_subagent_text() -> None:
    got: list[Any] = []
    mapper = StepMapper(got.append, "main")
    mapper.step(_step(source="SOURCE_USER", target="TARGET_MODEL", textDelta="my prompt"))
    mapper.step(_step(source="SOURCE_MODEL", target="TARGET_USER", textDelta="He", thinkingDelta="hm"))
    mapper.step(_step(source="SOURCE_MODEL", target="TARGET_USER", textDelta="llo", state="STATE_DONE"))
    sub = {"trajectoryId": "sub-trajectory", "source": "SOURCE_MODEL", "target": "TARGET_USER"}
    mapper.step(_step(**sub, textDelta="found it", stepIndex=4))
    mapper.step(_step(**sub, state="STATE_DONE", stepIndex=4))
    assert got[:3] == [ThoughtActivity(delta="hm"), TextActivity(delta="He"), TextActivity(delta="llo")]
    assert mapper.response == "Hello", "the subagent's text is not part of the answer"
    assert got[3].code == "subagent" and "found it" in got[3].message


def test_mapping_tool_cards_once_per_step_with_kind_output_and_diff() -> None:
    got: list[Any] = []
    mapper = StepMapper(got.append, "main")
    env = {"source": "SOURCE_MODEL", "target": "TARGET_ENVIRONMENT", "stepIndex": 3}
    run = {"commandLine": "make", "workingDir": "/p"}
    mapper.step(_step(**env, state="STATE_ACTIVE", runCommand=run))
    mapper.step(_step(**env, state="STATE_ACTIVE", runCommand=run))
    mapper.step(_step(**env, state="STATE_DONE", runCommand={**run, "exitCode": 2, "combinedOutput": "bad\r\n"}))
    mapper.step(_step(**env, state="STATE_DONE", runCommand=run))  # repeated: nothing more
    assert [type(a) for a in got] == [ToolStartActivity, ToolDoneActivity]
    assert got[0].kind == "execute" and got[0].title == "make"
    assert got[1].output == "bad\n\n(exit code 2)"
    lines = [
        {"text": "a", "action": "LINE_ACTION_NONE"},
        {"text": "b", "action": "LINE_ACTION_DELETE"},
        {"text": "c", "action": "LINE_ACTION_INSERT"},
    ]
    edit = {"filePath": "file:///p/x.txt", "diffBlock": [{"startLine": 1, "lines": lines}]}
    mapper.step(_step(**{**env, "stepIndex": 5}, state="STATE_DONE", editFile=edit))
    start, done = got[2], got[3]
    assert start.kind == "edit" and start.locations == ["/p/x.txt"]
    assert done.diff is not None and (done.diff.old_text, done.diff.new_text) == ("a\nb", "a\nc")
    mapper.step(
        _step(
            **{**env, "stepIndex": 6},
            state="STATE_ERROR",
            viewFile={"filePath": "/nope"},
            errorMessage="denied by policy",
        )
    )
    assert isinstance(got[-1], ToolErrorActivity) and got[-1].denied
    mapper.step(_step(**{**env, "stepIndex": 7}, state="STATE_DONE", text="Tool execution"))
    assert got[-1].name == "harness_tool", "an action this engine does not know still gets a card"
    mapper.step(_step(**{**env, "stepIndex": 8}, customTool={"toolCall": {"id": "1", "name": "host_echo"}}))
    assert got[-1].name == "harness_tool", "host tools get no harness card"


def test_mapping_keeps_system_errors() -> None:
    got: list[Any] = []
    mapper = StepMapper(got.append, "main")
    mapper.step(_step(source="SOURCE_SYSTEM", target="TARGET_USER", state="STATE_ERROR", errorMessage="network issue"))
    assert mapper.errors == ["network issue"] and got[0].level == "warning"


# -- prompts and config -----------------------------------------------------------------------


def test_the_system_block_moves_to_the_config_and_the_rest_is_user_input() -> None:
    block = f"{SYSTEM_PREAMBLE}\n\nBe brief.\n\n{SYSTEM_END}"
    system, rest = prompting.split_system(
        [TextBlock(text=f"{block}\n\nfix it"), ImageBlock(data="AA==", mime_type="image/png")]
    )
    assert system == block
    assert prompting.user_parts(rest) == [{"text": "fix it"}, {"media": {"mimeType": "image/png", "data": "AA=="}}]
    assert prompting.split_system([TextBlock(text="plain")]) == ("", [TextBlock(text="plain")])
    with pytest.raises(TurnFailed, match="empty"):
        prompting.user_parts([TextBlock(text="  ")])


def test_the_user_input_reads_as_on_the_other_engines() -> None:
    """The turn layer joins the system block to the rest with the prompt
    separator; it leaves with the block. The host's own context (the digest)
    goes as its text alone, a file under its URI."""
    block = f"{SYSTEM_PREAMBLE}\n\nBe brief.\n\n{SYSTEM_END}"
    system, rest = prompting.split_system([TextBlock(text=f"{block}{PROMPT_SEPARATOR}first question")])
    assert system == block and prompting.user_parts(rest) == [{"text": "first question"}]
    parts = prompting.user_parts(
        [
            ResourceBlock(uri="urn:agy-host:context-digest/s/2", text="DIGEST"),
            ResourceBlock(uri="file:///p/a.py", text="print(1)"),
            TextBlock(text="go"),
        ]
    )
    assert parts == [{"text": "DIGEST"}, {"text": "[file:///p/a.py]\nprint(1)"}, {"text": "go"}]


def _profile(**kw: Any) -> harness_config.Profile:
    values: dict[str, Any] = {
        "model": "m",
        "effort": None,
        "cwd": "/p",
        "policy": "ask",
        "skip_permissions": False,
        "host_tools": (),
        "mcp": (),
    }
    values.update(kw)
    return harness_config.Profile(**values)


def test_policies_map_to_static_or_dynamic_rules() -> None:
    assert harness_config.policy_config("auto", False) is None
    assert harness_config.policy_config("ask", True) is None
    deny = harness_config.policy_config("deny", False)
    assert deny is not None and {r["decision"] for r in deny["rules"][:-1]} == {"POLICY_DECISION_DENY"}
    asked = harness_config.policy_config("rules", False)
    assert asked is not None and all(r["isDynamic"] for r in asked["rules"][:-1])
    assert {r["tool"] for r in asked["rules"]} >= {"run_command", "write_to_file"}
    # a harness with rules denies whatever no rule matches: the rest (host tools, reads) is allowed by name
    assert deny["rules"][-1] == asked["rules"][-1] == {"tool": "*", "decision": "POLICY_DECISION_ALLOW"}


def test_config_has_a_budget_endpoint_tools_and_the_bridge_without_host_tools() -> None:
    settings = HarnessSettings()
    point = harness_config.Endpoint(kind="gemini", base_url="http://127.0.0.1:1", api_key="k")
    bridge = McpServerSpec(
        name="agy-host-bridge",
        url="http://127.0.0.1:2/mcp",
        headers={"t": "x"},
        role="host-tools",
        offers=["activate_skill"],
    )
    other = McpServerSpec(name="team", url="http://127.0.0.1:3/mcp")
    from agy_host.contract.tools import HostTool, ToolResult

    async def call(_: dict[str, Any]) -> ToolResult:
        return ToolResult()

    tool = HostTool(name="host_echo", description="", input_schema={}, call=call)
    config = harness_config.build(
        settings=settings,
        profile=_profile(effort="high"),
        point=point,
        tools=[tool],
        servers=[bridge, other],
        system_block="S",
        app_data_dir="/a",
        cascade_id=None,
    )
    assert config["budgetConfig"] == {"maxModelCalls": 50}
    assert config["sessionContinuationMode"] == "CREATE_ONLY"
    model = config["models"][0]
    assert model["geminiApiEndpoint"] == {
        "options": {"thinkingLevel": "high"},
        "baseUrl": "http://127.0.0.1:1",
        "apiKey": "k",
    }
    assert config["tools"][0]["parametersJsonSchema"] == '{"type":"object","properties":{}}'
    assert config["mcpServers"][0]["disabledTools"] == ["host_echo"]
    assert "disabledTools" not in config["mcpServers"][1]
    assert config["systemInstructions"]["appended"]["appendedSections"][0]["content"] == "S"
    resumed = harness_config.build(
        settings=settings,
        profile=_profile(),
        point=point,
        tools=[],
        servers=[],
        system_block="",
        app_data_dir="/a",
        cascade_id="c1",
    )
    assert (resumed["cascadeId"], resumed["sessionContinuationMode"]) == ("c1", "RESUME")
    assert "systemInstructions" not in resumed
    idle_bridge = McpServerSpec(name="agy-host-bridge", url="http://127.0.0.1:2/mcp", role="host-tools")
    assert harness_config.mcp_servers([idle_bridge, other], ["host_echo"]) == [
        {"name": "team", "http": {"url": "http://127.0.0.1:3/mcp", "headers": {}}}
    ], "a bridge with nothing but host tools is left out"


def test_endpoints_in_their_order() -> None:
    env = {"GEMINI_API_KEY": "g", "GOOGLE_GEMINI_BASE_URL": "http://x"}
    assert harness_config.endpoint(HarnessSettings(), env) == harness_config.Endpoint(
        kind="gemini", base_url="http://x", api_key="g", source="$GOOGLE_GEMINI_BASE_URL"
    )
    given = harness_config.endpoint(HarnessSettings(base_url="http://y/"), env)
    assert (given.base_url, given.source) == ("http://y", "[harness] base_url")
    assert harness_config.endpoint(HarnessSettings(), {}).source == "", "Google's own endpoint"
    assert harness_config.endpoint(HarnessSettings(project="p"), env).kind == "vertex"
    local = harness_config.endpoint(HarnessSettings(openai_base_url="http://127.0.0.1:11434/v1/", project="p"), env)
    assert local == harness_config.Endpoint(
        kind="openai", base_url="http://127.0.0.1:11434/v1", source="[harness] openai_base_url"
    )
    assert harness_config.model_config("llama", "low", local) == {
        "name": "llama",
        "types": ["MODEL_TYPE_TEXT"],
        "gemmaEndpoint": {"baseUrl": "http://127.0.0.1:11434/v1"},
    }


def test_settings_narrow_bad_values_with_a_warning() -> None:
    warnings: list[str] = []
    settings = narrow({"max_model_calls": -3, "cancel_grace_seconds": 0, "bogus": 1, "model": "x"}, warnings.append)
    assert settings.max_model_calls == 50 and settings.cancel_grace_seconds == 5.0 and settings.model == "x"
    assert len(warnings) == 3 and any("harness.bogus" in w for w in warnings)


def test_glog_noise_is_filtered_and_reasons_kept() -> None:
    assert meaningful("ERROR: logging before google.Init: x") is None
    assert meaningful("E1204 03:12:00.123456   77 main.go:12] unknown cascade id") == "unknown cascade id"
    assert meaningful("Stdin closed, cleaning up...") == "Stdin closed, cleaning up..."


# -- binary resolution and the managed install -------------------------------------------------------


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_binary_resolution_order_and_named_paths_that_cannot_run(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert binary.resolve("", env).source in ("none", pin.DISTRIBUTION)
    managed = _exe(tmp_path / "data" / "agy-host" / "harness" / "0.1.22" / "localharness")
    os.symlink("0.1.22", managed.parent.parent / "current")
    found = binary.resolve("", env)
    if found.source != pin.DISTRIBUTION:
        assert (found.source, found.found, found.version) == ("managed", True, "0.1.22")
    configured = _exe(tmp_path / "conf" / "lh")
    assert binary.resolve(str(configured), env).source == "config"
    named = binary.resolve(str(configured), {**env, binary.ENV_VAR: str(tmp_path / "missing")})
    assert (named.source, named.found) == (binary.ENV_VAR, False) and "does not exist" in named.problem
    configured.chmod(0o644)
    assert "not executable" in binary.resolve(str(configured), env).problem


def _fake_wheel(path: Path, content: bytes = b"#!/bin/sh\necho harness\n") -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(pin.BINARY_IN_WHEEL, content)
    return path


def test_install_from_a_wheel_is_versioned_with_a_current_link_and_a_receipt(tmp_path: Path) -> None:
    root = tmp_path / "root"
    receipt = install.install(root=root, version="9.9.9", wheel=_fake_wheel(tmp_path / "x.whl"))
    assert os.readlink(root / "current") == "9.9.9"
    exe = root / "current" / "localharness"
    assert exe.read_bytes().endswith(b"echo harness\n") and exe.stat().st_mode & stat.S_IXUSR
    assert receipt.sha256 == install.sha256_of(tmp_path / "x.whl") and not receipt.pinned
    assert install.read_receipt({}, root) == receipt
    install.install(root=root, version="9.9.10", wheel=_fake_wheel(tmp_path / "y.whl", b"new"))
    assert os.readlink(root / "current") == "9.9.10" and (root / "9.9.9" / "localharness").exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".")], "no staging folder is left behind"


def test_an_install_that_fails_keeps_the_previous_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    install.install(root=root, version="1.0", wheel=_fake_wheel(tmp_path / "a.whl"))
    bad = tmp_path / "b.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("something/else", b"x")
    with pytest.raises(install.InstallError, match="has no google/antigravity/bin/localharness"):
        install.install(root=root, version="2.0", wheel=bad)
    pinned = _fake_wheel(tmp_path / "pinned.whl")
    monkeypatch.setitem(pin.WHEEL_SHA256, "pinned.whl", "0" * 64)
    with pytest.raises(install.InstallError, match="refusing to install"):
        install.install(root=root, version="3.0", wheel=pinned)
    assert os.readlink(root / "current") == "1.0"
    assert sorted(p.name for p in root.iterdir()) == ["1.0", "current"]


def test_no_wheel_platforms_get_a_clear_error() -> None:
    problem = install.platform_problem("linux", "aarch64")
    assert problem is not None and "linux aarch64" in problem and "ANTIGRAVITY_HARNESS_PATH" in problem
    assert install.platform_problem("linux", "x86_64") is None
    assert install.platform_problem("darwin", "arm64") is None


async def test_a_conversation_closed_over_a_refused_key_is_an_auth_failure() -> None:
    """Under load the harness can close the socket before its error frame is
    read; its own words (an API key refused) still make the failure ``auth``."""
    from agy_host_harness import outcome
    from agy_host_harness.turn import HarnessTurn

    from agy_host.contract.prompt import TextBlock
    from agy_host.engine.driver import TurnRequest

    class Gone:
        alive = False
        returncode = 1

        def reason(self) -> str:
            return "Error 401, Message: API key not valid. Please pass a valid API key."

    turn = HarnessTurn(TurnRequest(session="s", prompt=[TextBlock(text="go")], cwd="/tmp"))
    turn.socket_closed = "closed"
    failed = outcome.settle(turn, Gone())  # type: ignore[arg-type]
    assert (failed.error_kind, "API key not valid" in failed.error) == ("auth", True)
    turn = HarnessTurn(TurnRequest(session="s", prompt=[TextBlock(text="go")], cwd="/tmp"))
    turn.socket_closed = "closed"
    assert outcome.settle(turn, None).error_kind == "exited"


def test_a_base_url_variable_the_config_overrides_is_named() -> None:
    """The new-user trial: after the docs' offline recipe set ``[harness]
    base_url``, a later ``GOOGLE_GEMINI_BASE_URL`` was silently not used.
    The config still wins (it is the engine's own setting); the user is told."""
    env = {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:2/"}
    configured = HarnessSettings(base_url="http://127.0.0.1:1")
    said = harness_config.shadowed_base_url(configured, env)
    assert said is not None and "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:2 is not used" in said
    assert "http://127.0.0.1:1" in said
    assert harness_config.endpoint(configured, env).base_url == "http://127.0.0.1:1"
    assert harness_config.shadowed_base_url(HarnessSettings(), env) is None, "no config: the variable is used"
    same = HarnessSettings(base_url="http://127.0.0.1:2")
    assert harness_config.shadowed_base_url(same, env) is None
    assert harness_config.shadowed_base_url(configured, {}) is None
