"""The schema helper on the ACP Python SDK's golden messages (they must
validate as the right type) and on broken messages (they must fail, naming
the path)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conformance.schema import (
    SCHEMA_DIR,
    AcpSchemaError,
    definition_for,
    methods,
    validate_agent_message,
    validate_client_message,
    validate_definition,
)

GOLDEN_DIR = SCHEMA_DIR / "golden-python-sdk-0.12.1"

Msg = dict[str, Any]


def _req(method: str, params: Any, id_: Any = 7) -> Msg:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def _note(method: str, params: Any) -> Msg:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _resp(result: Any, id_: Any = 7) -> Msg:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _update(update: Any) -> Msg:
    return _note("session/update", {"sessionId": "sess_abc123def456", "update": update})


def _prompt(block: Any) -> Msg:
    return _req("session/prompt", {"sessionId": "sess_abc123def456", "prompt": [block]})


def _tool_update(content: Any) -> Msg:
    return _update({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "content": [content]})


def _permission_answer(outcome: Any) -> Msg:
    return _resp({"outcome": outcome})


# Every golden file: (sender, how to wrap it into a message, the method a
# response answers, the definition the message must validate as, and the
# definition the file itself is an instance of).
Case = tuple[str, Callable[[Any], Msg], str | None, str, str]

GOLDEN: dict[str, Case] = {
    "initialize_request.json": (
        "client",
        lambda p: _req("initialize", p),
        None,
        "InitializeRequest",
        "InitializeRequest",
    ),
    "initialize_response.json": ("agent", _resp, "initialize", "InitializeResponse", "InitializeResponse"),
    "new_session_request.json": (
        "client",
        lambda p: _req("session/new", p),
        None,
        "NewSessionRequest",
        "NewSessionRequest",
    ),
    "new_session_response.json": ("agent", _resp, "session/new", "NewSessionResponse", "NewSessionResponse"),
    "prompt_request.json": ("client", lambda p: _req("session/prompt", p), None, "PromptRequest", "PromptRequest"),
    "cancel_notification.json": (
        "client",
        lambda p: _note("session/cancel", p),
        None,
        "CancelNotification",
        "CancelNotification",
    ),
    "set_session_config_option_request.json": (
        "client",
        lambda p: _req("session/set_config_option", p),
        None,
        "SetSessionConfigOptionRequest",
        "SetSessionConfigOptionRequest",
    ),
    "set_session_config_option_response.json": (
        "agent",
        _resp,
        "session/set_config_option",
        "SetSessionConfigOptionResponse",
        "SetSessionConfigOptionResponse",
    ),
    "request_permission_request.json": (
        "agent",
        lambda p: _req("session/request_permission", p, id_=0),  # id 0 is a real id
        None,
        "RequestPermissionRequest",
        "RequestPermissionRequest",
    ),
    "request_permission_response_selected.json": (
        "client",
        lambda p: _resp(p, id_=0),
        "session/request_permission",
        "RequestPermissionResponse",
        "RequestPermissionResponse",
    ),
    "permission_outcome_cancelled.json": (
        "client",
        _permission_answer,
        "session/request_permission",
        "RequestPermissionResponse",
        "RequestPermissionOutcome",
    ),
    "permission_outcome_selected.json": (
        "client",
        _permission_answer,
        "session/request_permission",
        "RequestPermissionResponse",
        "RequestPermissionOutcome",
    ),
    "fs_read_text_file_request.json": (
        "agent",
        lambda p: _req("fs/read_text_file", p, id_="r1"),
        None,
        "ReadTextFileRequest",
        "ReadTextFileRequest",
    ),
    "fs_read_text_file_response.json": (
        "client",
        lambda p: _resp(p, id_="r1"),
        "fs/read_text_file",
        "ReadTextFileResponse",
        "ReadTextFileResponse",
    ),
    "fs_write_text_file_request.json": (
        "agent",
        lambda p: _req("fs/write_text_file", p),
        None,
        "WriteTextFileRequest",
        "WriteTextFileRequest",
    ),
    **dict.fromkeys(
        (
            "session_update_agent_message_chunk.json",
            "session_update_agent_thought_chunk.json",
            "session_update_config_option_update.json",
            "session_update_plan.json",
            "session_update_tool_call.json",
            "session_update_tool_call_edit.json",
            "session_update_tool_call_locations_rawinput.json",
            "session_update_tool_call_read.json",
            "session_update_tool_call_update_content.json",
            "session_update_tool_call_update_more_fields.json",
            "session_update_user_message_chunk.json",
        ),
        ("agent", _update, None, "SessionNotification", "SessionUpdate"),
    ),
    **dict.fromkeys(
        (
            "content_audio.json",
            "content_image.json",
            "content_resource_blob.json",
            "content_resource_link.json",
            "content_resource_text.json",
            "content_text.json",
        ),
        ("client", _prompt, None, "PromptRequest", "ContentBlock"),
    ),
    **dict.fromkeys(
        (
            "tool_content_content_text.json",
            "tool_content_diff.json",
            "tool_content_diff_no_old.json",
            "tool_content_terminal.json",
        ),
        ("agent", _tool_update, None, "SessionNotification", "ToolCallContent"),
    ),
}


def _load(name: str) -> Any:
    return json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))


def _validate(sender: str, msg: Msg, request_method: str | None = None) -> str:
    fn = validate_client_message if sender == "client" else validate_agent_message
    return fn(msg, request_method=request_method)


def test_every_golden_file_is_covered() -> None:
    on_disk = {p.name for p in GOLDEN_DIR.glob("*.json")}
    assert on_disk, f"no golden messages under {GOLDEN_DIR}"
    assert on_disk == set(GOLDEN), (
        f"uncovered: {sorted(on_disk - set(GOLDEN))}; missing: {sorted(set(GOLDEN) - on_disk)}"
    )


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_message_validates_as_its_type(name: str) -> None:
    sender, wrap, request_method, as_message, as_fragment = GOLDEN[name]
    body = _load(name)
    assert _validate(sender, wrap(body), request_method) == as_message
    validate_definition(body, as_fragment)


@pytest.mark.parametrize("name", sorted(n for n, c in GOLDEN.items() if c[2] is None))
def test_golden_message_is_rejected_from_the_other_side(name: str) -> None:
    """A client request is not something an agent sends, and vice versa."""
    sender, wrap, _, _, _ = GOLDEN[name]
    other = "agent" if sender == "client" else "client"
    with pytest.raises(AcpSchemaError) as info:
        _validate(other, wrap(_load(name)))
    assert info.value.path == "$.method"
    assert f"{sender}" in str(info.value)


def test_brief_methods_resolve_to_definitions() -> None:
    client_requests = {
        "initialize": "InitializeRequest",
        "authenticate": "AuthenticateRequest",
        "session/new": "NewSessionRequest",
        "session/load": "LoadSessionRequest",
        "session/prompt": "PromptRequest",
        "session/set_config_option": "SetSessionConfigOptionRequest",
        "session/set_mode": "SetSessionModeRequest",
        "session/close": "CloseSessionRequest",
    }
    for method, definition in client_requests.items():
        assert definition_for("client", "request", method) == definition
        assert definition_for("agent", "response", method) == definition.replace("Request", "Response")
        assert method in methods("client", "request")
    assert definition_for("client", "notification", "session/cancel") == "CancelNotification"
    assert definition_for("agent", "notification", "session/update") == "SessionNotification"
    assert definition_for("agent", "request", "session/request_permission") == "RequestPermissionRequest"
    assert definition_for("client", "response", "session/request_permission") == "RequestPermissionResponse"
    assert "session/update" not in methods("client", "notification")


# ---------------------------------------------------------------------------
# Broken messages: each must fail, at the path that is wrong
# ---------------------------------------------------------------------------


def _golden_msg(name: str) -> Msg:
    _, wrap, _, _, _ = GOLDEN[name]
    return copy.deepcopy(wrap(_load(name)))


def _drop(msg: Msg, *path: Any) -> Msg:
    node: Any = msg
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return msg


def _set(msg: Msg, value: Any, *path: Any) -> Msg:
    node: Any = msg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return msg


BROKEN: list[tuple[str, str, Msg, str | None, str, str]] = [
    # (id, sender, message, request_method, expected path, text the error must contain)
    (
        "initialize-without-protocolVersion",
        "client",
        _drop(_golden_msg("initialize_request.json"), "params", "protocolVersion"),
        None,
        "$.params",
        "protocolVersion",
    ),
    (
        "initialize-protocolVersion-string",
        "client",
        _set(_golden_msg("initialize_request.json"), "1", "params", "protocolVersion"),
        None,
        "$.params.protocolVersion",
        "integer",
    ),
    (
        "initialize-without-params",
        "client",
        _drop(_golden_msg("initialize_request.json"), "params"),
        None,
        "$",
        "params",
    ),
    (
        "wrong-jsonrpc-version",
        "client",
        _set(_golden_msg("initialize_request.json"), "1.0", "jsonrpc"),
        None,
        "$.jsonrpc",
        "2.0",
    ),
    ("missing-jsonrpc", "client", _drop(_golden_msg("initialize_request.json"), "jsonrpc"), None, "$", "jsonrpc"),
    ("fractional-id", "client", _set(_golden_msg("initialize_request.json"), 1.5, "id"), None, "$.id", "1.5"),
    (
        "extra-envelope-member",
        "client",
        _set(_golden_msg("new_session_request.json"), "x", "extra"),
        None,
        "$",
        "extra",
    ),
    (
        "prompt-unknown-content-type",
        "client",
        _set(_golden_msg("prompt_request.json"), "txt", "params", "prompt", 0, "type"),
        None,
        "$.params.prompt[0]",
        "'txt'",
    ),
    (
        "prompt-text-not-a-string",
        "client",
        _set(_golden_msg("prompt_request.json"), 42, "params", "prompt", 0, "text"),
        None,
        "$.params.prompt[0].text",
        "string",
    ),
    (
        "new-session-mcp-server-without-name",
        "client",
        _drop(_golden_msg("new_session_request.json"), "params", "mcpServers", 0, "name"),
        None,
        "$.params.mcpServers[0]",
        "name",
    ),
    (
        "cancel-without-sessionId",
        "client",
        _drop(_golden_msg("cancel_notification.json"), "params", "sessionId"),
        None,
        "$.params",
        "sessionId",
    ),
    (
        "update-unknown-variant",
        "agent",
        _set(_golden_msg("session_update_plan.json"), "planz", "params", "update", "sessionUpdate"),
        None,
        "$.params.update",
        "'planz'",
    ),
    (
        "update-chunk-content-wrong-type",
        "agent",
        _set(_golden_msg("session_update_agent_message_chunk.json"), 5, "params", "update", "content", "text"),
        None,
        "$.params.update.content.text",
        "string",
    ),
    (
        "tool-call-without-id",
        "agent",
        _drop(_golden_msg("session_update_tool_call.json"), "params", "update", "toolCallId"),
        None,
        "$.params.update",
        "toolCallId",
    ),
    (
        "tool-call-bad-status",
        "agent",
        _set(_golden_msg("session_update_tool_call.json"), "running", "params", "update", "status"),
        None,
        "$.params.update.status",
        "'running'",
    ),
    (
        "diff-without-newText",
        "agent",
        _drop(_golden_msg("tool_content_diff.json"), "params", "update", "content", 0, "newText"),
        None,
        "$.params.update.content[0]",
        "newText",
    ),
    (
        "update-without-sessionId",
        "agent",
        _drop(_golden_msg("session_update_plan.json"), "params", "sessionId"),
        None,
        "$.params",
        "sessionId",
    ),
    (
        "new-session-response-without-sessionId",
        "agent",
        _drop(_golden_msg("new_session_response.json"), "result", "sessionId"),
        "session/new",
        "$.result",
        "sessionId",
    ),
    (
        "prompt-response-unknown-stop-reason",
        "agent",
        _resp({"stopReason": "done"}),
        "session/prompt",
        "$.result.stopReason",
        "'done'",
    ),
    (
        "permission-outcome-unknown",
        "client",
        _set(_golden_msg("request_permission_response_selected.json"), "maybe", "result", "outcome", "outcome"),
        "session/request_permission",
        "$.result.outcome",
        "'maybe'",
    ),
    (
        "permission-selected-without-optionId",
        "client",
        _drop(_golden_msg("request_permission_response_selected.json"), "result", "outcome", "optionId"),
        "session/request_permission",
        "$.result.outcome",
        "optionId",
    ),
    (
        "permission-option-bad-kind",
        "agent",
        _set(_golden_msg("request_permission_request.json"), "allow_forever", "params", "options", 0, "kind"),
        None,
        "$.params.options[0].kind",
        "'allow_forever'",
    ),
    (
        "response-with-result-and-error",
        "agent",
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": -32603, "message": "x"}},
        "session/new",
        "$",
        "exactly one",
    ),
    (
        "response-with-neither",
        "agent",
        {"jsonrpc": "2.0", "id": 1},
        "session/new",
        "$",
        "exactly one",
    ),
    (
        "error-code-not-integer",
        "agent",
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "auth", "message": "sign in"}},
        None,
        "$.error.code",
        "integer",
    ),
    (
        "error-without-message",
        "agent",
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000}},
        None,
        "$.error",
        "message",
    ),
    (
        "agent-sends-initialize",
        "agent",
        _golden_msg("initialize_request.json"),
        None,
        "$.method",
        "client request",
    ),
    (
        "client-sends-session-update",
        "client",
        _golden_msg("session_update_plan.json"),
        None,
        "$.method",
        "agent notification",
    ),
    (
        "notification-with-id-is-a-request",
        "client",
        {**_golden_msg("cancel_notification.json"), "id": 3},
        None,
        "$.method",
        "client notification",
    ),
    ("unknown-method", "client", _req("session/teleport", {}), None, "$.method", "not an ACP v1 method"),
    (
        "client-answers-a-client-method",
        "client",
        _resp({"sessionId": "s"}),
        "session/new",
        "$",
        "not a request the agent sends",
    ),
    ("method-not-a-string", "client", _req(5, {}), None, "$.method", "string"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    ("sender", "msg", "request_method", "path", "needle"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN]
)
def test_broken_message_fails_naming_the_path(
    sender: str, msg: Msg, request_method: str | None, path: str, needle: str
) -> None:
    with pytest.raises(AcpSchemaError) as info:
        _validate(sender, msg, request_method)
    err = info.value
    assert err.path == path, str(err)
    assert needle in str(err), str(err)
    assert path in str(err)


def test_response_needs_the_request_method() -> None:
    with pytest.raises(TypeError, match="request_method"):
        validate_agent_message(_golden_msg("new_session_response.json"))


def test_error_response_validates_without_a_method() -> None:
    msg = {"jsonrpc": "2.0", "id": 0, "error": {"code": -32000, "message": "Authentication required"}}
    assert validate_agent_message(msg) == "Error"
    assert validate_agent_message(msg, request_method="session/new") == "Error"


def test_extension_methods_check_the_envelope_only() -> None:
    assert validate_client_message(_req("_agy/ping", {"anything": [1, 2]})) == "ExtRequest"
    assert validate_agent_message(_note("_agy/notice", {"x": 1})) == "ExtNotification"
    with pytest.raises(AcpSchemaError) as info:
        validate_client_message({**_req("_agy/ping", {}), "jsonrpc": "2"})
    assert info.value.path == "$.jsonrpc"


def test_cancel_request_is_accepted_from_both_sides() -> None:
    msg = _note("$/cancel_request", {"requestId": 4})
    assert validate_client_message(msg) == validate_agent_message(msg) == "CancelRequestNotification"


def test_unstable_schema_is_selectable() -> None:
    # providers/list exists only on the unstable surface.
    msg = _req("providers/list", {})
    with pytest.raises(AcpSchemaError):
        validate_client_message(msg)
    assert validate_client_message(msg, unstable=True) == "ListProvidersRequest"


def test_validate_definition_names_the_fragment_path() -> None:
    block = _load("content_resource_text.json")
    del block["resource"]["uri"]
    with pytest.raises(AcpSchemaError) as info:
        validate_definition(block, "ContentBlock")
    assert info.value.path == "$.resource"
    assert "uri" in str(info.value)
    with pytest.raises(KeyError):
        validate_definition({}, "NoSuchDefinition")


# ---------------------------------------------------------------------------
# The vendored copy stays as it was shipped
# ---------------------------------------------------------------------------

#: sha256 over "<relative path>\0<sha256 of content>\n" for every vendored file, sorted.
VENDORED_DIGEST = "f92caf0046b10b0d24c238430ce515f9d7da4ec580d2ffa571786f31322ec991"


def _tree_digest(root: Path) -> tuple[str, dict[str, str]]:
    files = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
    h = hashlib.sha256()
    for rel, digest in sorted(files.items()):
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest(), files


def test_vendored_schema_is_unchanged() -> None:
    digest, files = _tree_digest(SCHEMA_DIR)
    assert "NOTE.md" in files
    assert digest == VENDORED_DIGEST, (
        "tests/fixtures/acp-schema changed; it is vendored data (see NOTE.md):\n"
        + "\n".join(f"{v}  {k}" for k, v in sorted(files.items()))
    )
    shared = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "acp-schema"
    if shared.is_dir():  # a developer machine or CI with shared/ beside the clone
        assert _tree_digest(shared)[0] == digest, f"the vendored copy differs from {shared}"
