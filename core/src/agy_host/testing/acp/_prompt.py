"""Playing one ``session/prompt`` of the fake ACP agent: its steps, in order.

Each prompt runs on its own thread so the agent's reader keeps serving
cancels and permission answers while steps sleep or wait. A graceful cancel
sets :attr:`PromptRun.cancel`, which wakes every wait (sleeps, agent-to-client
requests, ``hang``) so the prompt answers ``stopReason: cancelled`` promptly.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agy_host.testing import _wire
from agy_host.testing.acp.scenario import (
    Chunk,
    Crash,
    Echo,
    Error,
    Flood,
    Hang,
    McpCall,
    Notify,
    PromptMeta,
    PromptUsage,
    RawStdout,
    Repeat,
    Request,
    Sleep,
    Stderr,
    Step,
    Stop,
    Thought,
    Update,
)

if TYPE_CHECKING:
    from agy_host.testing.acp.agent import FakeAcpAgent


def subst(obj: Any, session_id: str) -> Any:
    if isinstance(obj, str):
        return obj.replace("<session>", session_id) if "<session>" in obj else obj
    if isinstance(obj, dict):
        return {k: subst(v, session_id) for k, v in obj.items()}
    if isinstance(obj, list):
        return [subst(v, session_id) for v in obj]
    return obj


class Pending:
    """An agent-to-client request waiting for its answer (or for a cancel)."""

    def __init__(self, run: PromptRun, method: str) -> None:
        self.run = run
        self.method = method
        self.done = threading.Event()
        self.response: dict[str, Any] | None = None


class _Cancelled(Exception):
    pass


class _Finished(Exception):
    def __init__(self, response: dict[str, Any] | None) -> None:
        super().__init__()
        self.response = response


class PromptRun:
    """One ``session/prompt`` being played, on its own thread so the reader
    can keep serving cancels and permission answers meanwhile."""

    def __init__(self, agent: FakeAcpAgent, session_id: str, request_id: Any, params: dict[str, Any]) -> None:
        self.agent = agent
        self.session_id = session_id
        self.request_id = request_id
        self.params = params
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self.usage: dict[str, Any] | None = None
        self.meta: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._main, name=f"prompt-{request_id}", daemon=True)

    # -- output helpers -------------------------------------------------

    def update(self, update: dict[str, Any]) -> None:
        self.agent.out.send(
            _wire.notification(
                "session/update", {"sessionId": self.session_id, "update": subst(update, self.session_id)}
            )
        )

    def _text_update(self, kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        if message_id is not None:
            update["messageId"] = message_id
        return update

    # -- the run ----------------------------------------------------------

    def _main(self) -> None:
        response: dict[str, Any] | None
        try:
            command = self.agent.scenario.command_steps(self.params.get("prompt"))
            if command is not None:
                self.agent.log.event("slash-command", id=self.request_id, command=command[0])
                self.run_steps(command[1])
            else:
                self.run_steps(self.agent.scenario.steps_for(self.agent.take_prompt_index()))
            response = self._result("end_turn")
        except _Cancelled:
            self.agent.log.event("prompt-cancelled", id=self.request_id)
            response = self._result("cancelled")
        except _Finished as fin:
            response = fin.response
        except Exception as exc:  # a bug here must still answer the prompt, visibly
            _wire.stderr(f"fake_acp_agent: prompt {self.request_id!r} failed: {exc!r}")
            response = _wire.error_response(self.request_id, -32603, "fake agent bug", {"error": repr(exc)})
        if response is not None:
            self.agent.out.send(response)
        self.finished.set()
        self.agent.prompt_done(self)

    def _result(self, reason: str) -> dict[str, Any]:
        result: dict[str, Any] = {"stopReason": reason}
        if self.usage is not None:
            result["usage"] = self.usage
        if self.meta is not None:
            result["_meta"] = self.meta
        return _wire.result_response(self.request_id, result)

    def _check(self) -> None:
        if self.cancel.is_set():
            raise _Cancelled

    def run_steps(self, steps: Sequence[Step]) -> None:
        for step in steps:
            self._check()
            self.run_step(step)

    def run_step(self, step: Step) -> None:
        sc = self.agent.scenario
        match step:
            case Chunk(text=text, message_id=mid):
                self.update(self._text_update("agent_message_chunk", text, mid))
            case Thought(text=text):
                self.update(self._text_update("agent_thought_chunk", text))
            case Sleep(seconds=seconds):
                if self.cancel.wait(max(0.0, seconds * sc.sleep_scale)):
                    raise _Cancelled
            case Update(update=update):
                self.update(update)
            case Notify(method=method, params=params):
                self.agent.out.send(_wire.notification(method, subst(params, self.session_id)))
            case Request():
                self._request(step)
            case PromptUsage(usage=usage):
                self.usage = usage
            case PromptMeta(meta=meta):
                self.meta = meta
            case Stop(reason=reason):
                raise _Finished(self._result(reason))
            case Error(code=code, message=message, data=data):
                raise _Finished(_wire.error_response(self.request_id, code, message, data))
            case Crash(code=code, stderr=text):
                self.agent.crash(code, text)
            case Hang():
                self.agent.log.event("prompt-hang", id=self.request_id)
                self.cancel.wait()
                raise _Cancelled
            case RawStdout(text=text):
                self.agent.out.raw_line(text)
            case Stderr(text=text, flood_bytes=n):
                if text:
                    _wire.stderr(text)
                if n > 0:
                    _flood_stderr(n)
            case Flood(count=count, text=text):
                self._flood(sc.flood_count if count is None else count, sc.flood_text if text is None else text)
            case Echo(prefix=prefix, resources=resources):
                self.update(self._text_update("agent_message_chunk", prefix + self._prompt_text(resources)))
            case McpCall():
                self._mcp_call(step)
            case Repeat(steps=inner, times=times):
                counter = itertools.count() if times is None else range(times)
                for _ in counter:
                    self._check()  # an empty body must still end on a cancel
                    self.run_steps(inner)

    def _prompt_text(self, resources: bool) -> str:
        parts: list[str] = []
        for block in self.params.get("prompt") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif resources and block.get("type") == "resource":
                res = block.get("resource")
                if isinstance(res, dict) and isinstance(res.get("text"), str):
                    parts.append(res["text"])
        return "".join(parts) if not resources else "\n".join(parts)

    def _mcp_call(self, step: McpCall) -> None:
        from agy_host.testing import _mcp as mcp

        try:
            server = mcp.pick_server(self.agent.mcp_servers(self.session_id), step.server)
            scale = self.agent.scenario.sleep_scale
            text, is_error, _ = mcp.call_tool(
                server, step, cancel=self.cancel, event=self.agent.log.event, sleep_scale=scale
            )
        except mcp.McpCancelled:
            raise _Cancelled from None
        except mcp.McpCallFailed as exc:
            text, is_error = str(exc), True
            self.agent.log.event("mcp-call", tool=step.tool, is_error=True, polls=0, text=text[:2000])
        self.update(self._text_update("agent_message_chunk", (step.error_prefix if is_error else step.prefix) + text))

    def _flood(self, count: int, text: str) -> None:
        line = _wire.encode(
            _wire.notification(
                "session/update",
                {"sessionId": self.session_id, "update": self._text_update("agent_message_chunk", text)},
            )
        )
        line += b"\n"
        per_write = max(1, (256 * 1024) // len(line))
        left = count
        while left > 0:
            self._check()
            n = min(left, per_write)
            self.agent.out.write(line * n)
            left -= n

    def _request(self, step: Request) -> None:
        params = subst(step.params, self.session_id)
        msg_id, pending = self.agent.open_request(self, step.method)
        self.agent.out.send({"jsonrpc": "2.0", "id": msg_id, "method": step.method, "params": params})
        # A cancel also sets ``done``; the timeout only covers a cancel that
        # raced with registering this request.
        if step.withdraw_after is not None and not pending.done.wait(
            step.withdraw_after * self.agent.scenario.sleep_scale
        ):
            self.agent.log.event("request-withdrawn", id=msg_id, method=step.method)
            self.agent.out.send(_wire.notification("$/cancel_request", {"requestId": msg_id}))
        while not pending.done.wait(0.5):
            if self.cancel.is_set():
                break
        self.agent.close_request(msg_id)
        if pending.response is None:
            # woken by a cancel: ACP says the client answers "cancelled" later;
            # the turn ends now either way.
            raise _Cancelled
        keys = self._branch_keys(pending.response, params)
        self.agent.log.event("request-answer", id=msg_id, method=step.method, matched=keys)
        for key in keys:
            if key in step.branches:
                self.run_steps(step.branches[key])
                return

    def _branch_keys(self, response: dict[str, Any], params: dict[str, Any]) -> list[str]:
        if "error" in response:
            return ["error", "*"]
        result = response.get("result")
        if isinstance(result, dict) and isinstance(result.get("action"), str):
            # an elicitation/create answer: accept (with content), decline, cancel
            action = result["action"]
            self.agent.log.event("elicitation-answer", action=action, content=result.get("content"))
            return [action, "result", "*"]
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if not isinstance(outcome, dict):
            return ["result", "*"]
        if outcome.get("outcome") == "cancelled":
            self.agent.log.event("permission-answer", outcome="cancelled")
            return ["cancelled", "result", "*"]
        option_id = outcome.get("optionId")
        self.agent.log.event("permission-answer", outcome=outcome.get("outcome"), optionId=option_id)
        keys: list[str] = [str(option_id)]
        options = params.get("options") or []
        kind = next((o.get("kind") for o in options if isinstance(o, dict) and o.get("optionId") == option_id), None)
        if kind is None:
            known = [o.get("optionId") for o in options if isinstance(o, dict)]
            _wire.stderr(f"fake_acp_agent: permission answered with unknown optionId {option_id!r} (offered {known})")
            self.agent.log.event("bad-option", optionId=option_id, offered=known)
        else:
            keys.append(str(kind))
            if str(kind).startswith("allow"):
                keys.append("allow")
            elif str(kind).startswith("reject"):
                keys.append("reject")
        keys += ["result", "*"]
        return keys


def _flood_stderr(n: int) -> None:
    line = b"e" * 79 + b"\n"
    block = line * 1024
    left = n
    while left > 0:
        chunk = block[:left]
        try:
            os.write(2, chunk)
        except OSError:
            return
        left -= len(chunk)


__all__ = ["Pending", "PromptRun", "subst"]
