"""A deliberately small ACP client for the interop tests: raw JSON-RPC lines
over an agent's stdio, written here so the tests can talk to a real agent
without agy-host's own ACP engine in the way.

Every line sent and received is checked against the vendored ACP schema
(:mod:`conformance.schema`), so the tests also prove the schema helper on real
traffic. Reads have a deadline (a hung agent fails the test; it never hangs
the run); stderr goes to a file (a chatty agent cannot block on a full pipe).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from conformance.schema import validate_agent_message, validate_client_message

__all__ = ["AgentExited", "RawAgent", "processes_with", "wait_gone"]


class AgentExited(RuntimeError):
    pass


class RawAgent:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stderr_path: Path,
        validate: bool = True,
    ) -> None:
        self.argv = list(argv)
        self.stderr_path = stderr_path
        self.validate = validate
        self._stderr: IO[bytes] = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,  # its own process group: close() can end all of it
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="rawacp-reader", daemon=True)
        self._reader.start()
        self._next_id = 0  # 0 is a real id; agents must treat it as one
        self.notifications: list[dict[str, Any]] = []
        self.agent_requests: list[dict[str, Any]] = []
        self.log: list[tuple[str, dict[str, Any]]] = []

    # -- plumbing ------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_tail(self, lines: int = 30) -> str:
        self._stderr.flush()
        try:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _send(self, msg: dict[str, Any], *, request_method: str | None = None) -> None:
        if self.validate:
            validate_client_message(msg, request_method=request_method)
        self.log.append(("->", msg))
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise AgentExited(f"agent closed stdin; stderr:\n{self.stderr_tail()}") from None

    def _recv(self, deadline: float) -> dict[str, Any]:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no message from the agent in time; stderr:\n{self.stderr_tail()}")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AgentExited(f"agent closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr_tail()}")
            if not line.strip():
                continue
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise AssertionError(f"agent sent a non-object line: {line!r}")
            self.log.append(("<-", msg))
            return msg

    # -- protocol ------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any], *, timeout: float = 90.0) -> dict[str, Any]:
        """Send a request; collect notifications until its response; return
        the response object (``result`` or ``error``)."""
        rid = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            msg = self._recv(deadline)
            if "method" in msg:
                if self.validate:
                    validate_agent_message(msg)
                if "id" in msg:
                    self.agent_requests.append(msg)
                    self._answer(msg)
                else:
                    self.notifications.append(msg)
                continue
            if msg.get("id") == rid:
                if self.validate:
                    validate_agent_message(msg, request_method=method)
                return msg
            raise AssertionError(f"response to an unknown id {msg.get('id')!r} (waiting for {rid}): {msg}")

    def _answer(self, req: dict[str, Any]) -> None:
        method = req["method"]
        if method == "session/request_permission":
            self._send(
                {"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "cancelled"}}},
                request_method=method,
            )
        else:
            self._send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": f"not here: {method}"}})

    def initialize(self) -> dict[str, Any]:
        resp = self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
                "clientInfo": {"name": "agy-host-interop-tests", "version": "0"},
            },
        )
        return _result(resp, "initialize")

    def new_session(self, cwd: Path) -> str:
        result = _result(self.request("session/new", {"cwd": str(cwd), "mcpServers": []}), "session/new")
        sid = result["sessionId"]
        assert isinstance(sid, str) and sid, result
        return sid

    def load_session(self, cwd: Path, session_id: str) -> dict[str, Any]:
        resp = self.request("session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []})
        return _result(resp, "session/load")

    def prompt(self, session_id: str, text: str) -> tuple[str, str]:
        """Send a text prompt; return (stopReason, the agent's streamed text)."""
        start = len(self.notifications)
        result = _result(
            self.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
            "session/prompt",
        )
        return result["stopReason"], agent_text(self.notifications[start:], session_id)

    def close(self, timeout: float = 30.0) -> int:
        """EOF on stdin, then wait; escalate to SIGTERM and SIGKILL of the
        whole process group. Returns the exit code (negative: killed)."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(self.proc.pid, signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _killpg(self.proc.pid, signal.SIGKILL)
                rc = self.proc.wait()
        self._reader.join(timeout=10)
        # Children the agent left in its group go too (never anything else).
        _killpg(self.proc.pid, signal.SIGKILL)
        self._stderr.close()
        return rc


def _result(resp: dict[str, Any], method: str) -> dict[str, Any]:
    if "error" in resp:
        raise AssertionError(f"{method} failed: {resp['error']}")
    result = resp["result"]
    assert isinstance(result, dict), resp
    return result


def agent_text(notifications: Sequence[dict[str, Any]], session_id: str, kind: str = "agent_message_chunk") -> str:
    out = []
    for note in notifications:
        params = note.get("params") or {}
        update = params.get("update") or {}
        if note.get("method") != "session/update" or params.get("sessionId") != session_id:
            continue
        if update.get("sessionUpdate") == kind and (update.get("content") or {}).get("type") == "text":
            out.append(update["content"]["text"])
    return "".join(out)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def processes_with(marker: str) -> list[tuple[int, str]]:
    """Live processes whose command line contains ``marker`` (zombies have an
    empty command line and are not listed)."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def wait_gone(marker: str, grace: float = 5.0) -> list[tuple[int, str]]:
    """Processes still carrying ``marker`` after ``grace`` seconds (an exiting
    process may need a moment to be reaped; a leaked one stays)."""
    deadline = time.monotonic() + grace
    while True:
        left = processes_with(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def start_cli(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """The ``agy-host`` CLI in its own session (a SIGINT a test sends goes to
    it alone, like a Ctrl-C to a foreground job), output captured as text."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def communicate_or_fail(
    proc: subprocess.Popen[str], argv: Sequence[str], marker: str, timeout: float
) -> tuple[str, str]:
    """``proc.communicate()``; a CLI still running after ``timeout`` is killed
    with its whole group and the agents it started, and the test fails."""
    import shlex

    import pytest

    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        kill_all(marker)
        pytest.fail(
            f"agy-host run did not finish in {timeout:.0f}s\n$ {shlex.join(argv)}\n{out[-4000:]}\n{err[-4000:]}"
        )


def kill_all(marker: str) -> None:
    """Clean up after a failed leak check: SIGKILL the marked processes."""
    for pid, _ in processes_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
