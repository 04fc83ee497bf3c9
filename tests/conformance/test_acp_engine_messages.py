"""What agy-host's ACP engine puts on the wire is valid ACP, and what the
official SDK's golden messages say decodes through our structs.

The engine runs real turns against the fake ACP agent; the fake logs every
message it received, verbatim, and each one is validated against the vendored
ACP v1 schema (requests and notifications by method, our answers to the
agent's requests by the method they answer).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

pytest.importorskip("agy_host_acp", reason="the ACP engine plugin is not installed")

from conformance.schema import validate_client_message

from agy_host.config import Config
from agy_host.contract.events import BridgeCallActivity, TextActivity
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import ImageBlock, ResourceBlock, TextBlock
from agy_host.engine.base import EngineContext, McpServerSpec
from agy_host.engine.driver import TurnRequest
from agy_host_acp import schema as s
from agy_host_acp.engine import AcpEngine

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "acp-schema" / "golden-python-sdk-0.12.1"


async def first_option(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(option_id=request.options[0].option_id, policy="test")


async def run_scenario(tmp_path: Path, scenario: str, *, abort: bool = False, **settings: Any) -> list[dict[str, Any]]:
    log = tmp_path / f"{scenario}.log"
    argv = [sys.executable, "-m", "agy_host.testing.acp.agent", "--scenario", scenario, "--log", str(log)]
    for key, value in settings.items():
        argv += ["--set", f"{key}={json.dumps(value)}"]
    cfg = Config()
    cfg.acp.cancel_grace_seconds = 1.0
    ctx = EngineContext(
        config=cfg,
        state_dir=tmp_path,
        decide_permission=first_option,
        mcp_servers=lambda: [
            McpServerSpec(name="bridge", url="http://127.0.0.1:1/mcp", headers={"x-bridge-token": "t"})
        ],
        agent=shlex.join(argv),
        env={k: v for k, v in os.environ.items() if not k.startswith("AGY_")},
    )
    engine = AcpEngine(ctx)
    prompt = [
        ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
        ResourceBlock(uri="urn:agy-host:context-digest/3", text="digest", mime_type="text/markdown"),
        TextBlock(text="hello"),
    ]
    async with engine.open_driver() as drv:
        conv = None
        for _ in range(2):
            handle = await drv.run(
                TurnRequest(session="c", prompt=prompt, cwd=str(tmp_path), conversation_id=conv, model="m", mode="yolo")
            )
            with trio.fail_after(20):
                async for act in handle:
                    if abort and isinstance(act, TextActivity):
                        handle.abort("test")
                    if isinstance(act, BridgeCallActivity):
                        drv.kick_idle()
            assert handle.outcome is not None
            conv = handle.outcome.conversation_id
        await drv.aclose()
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("scenario", "abort", "settings"),
    [
        ("happy", False, {}),
        ("permission", False, {}),
        ("question", False, {}),
        ("load-replay", False, {}),
        ("cancel-graceful", True, {}),
        ("tool-diff", False, {}),
    ],
)
async def test_every_message_we_send_is_valid_acp(
    tmp_path: Path, scenario: str, abort: bool, settings: dict[str, Any]
) -> None:
    received = await run_scenario(tmp_path, scenario, abort=abort, **settings)
    frames = [m for m in received if "jsonrpc" in m]
    assert any(m.get("method") == "session/prompt" for m in frames)
    for msg in frames:
        if "method" in msg:
            validate_client_message(msg)
        else:  # our answer to one of the agent's requests: only permission requests here
            validate_client_message(msg, request_method="session/request_permission")


GOLDEN_TYPES: dict[str, type[Any]] = {
    "initialize_response.json": s.InitializeResult,
    "new_session_response.json": s.SessionSetup,
    "set_session_config_option_response.json": s.SetConfigOptionResult,
    "request_permission_request.json": s.RequestPermissionParams,
    "tool_content_content_text.json": s.ToolContent,
    "tool_content_diff.json": s.ToolContent,
    "tool_content_diff_no_old.json": s.ToolContent,
    "tool_content_terminal.json": s.ToolContent,
    "content_text.json": s.Content,
    "content_image.json": s.Content,
    "content_audio.json": s.Content,
    "content_resource_text.json": s.Content,
    "content_resource_blob.json": s.Content,
    "content_resource_link.json": s.Content,
}


@pytest.mark.parametrize("name", sorted(GOLDEN_TYPES))
def test_golden_messages_decode_through_our_structs(name: str) -> None:
    raw = (GOLDEN / name).read_bytes()
    value = msgspec.json.decode(raw, type=GOLDEN_TYPES[name])
    data = json.loads(raw)
    if name == "tool_content_diff.json":
        assert value.path == data["path"] and value.new_text == data["newText"] and value.old_text == data["oldText"]
    if name == "request_permission_request.json":
        assert [o.option_id for o in value.options] == [o["optionId"] for o in data["options"]]
    if name == "initialize_response.json":
        assert value.agent_capabilities.load_session is data["agentCapabilities"]["loadSession"]


def test_every_golden_session_update_is_a_known_variant() -> None:
    names = sorted(p.name for p in GOLDEN.glob("session_update_*.json"))
    assert names
    for name in names:
        _, update, _ = s.decode_session_update(b'{"sessionId":"s","update":' + (GOLDEN / name).read_bytes() + b"}")
        assert not isinstance(update, s.UnknownUpdate), name
