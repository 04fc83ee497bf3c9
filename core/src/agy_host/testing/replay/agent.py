"""Serve one recording as an agent: ``python -m agy_host.testing.replay.agent FILE``.

The agent waits for the client's next recorded message; when it arrives it
writes the agent frames that followed it in the recording, then waits again.
What makes a replay usable against a real client:

* responses carry the id the client actually used, not the recorded one;
* agent-to-client requests (``session/request_permission``) keep their
  recorded ids, and the replay waits for the client's answer before going
  on (an answer that differs from the recorded one is reported on stderr);
* ``_raw`` lines are written verbatim; recorded session ids are kept, so the
  client must use the ones it was given;
* recordings without the client's side (htui) get a synthesised handshake
  (see :mod:`agy_host.testing.replay.script`).

A request that is not the recording's next one gets JSON-RPC -32603 whose
message says what was expected, and the same text goes to stderr, so a test
that drifted from the recording explains itself. Client notifications that
are not next in the recording (a ``session/cancel``) are logged and ignored.
Every received message is appended to ``--log`` (env
``AGY_REPLAY_AGENT_LOG``) exactly like the fake ACP agent does. On stdin EOF
it exits 0, or with the code of the last recorded ``{"exit": N}`` note it
reached. Timing (``_t``) is not reproduced: frames are written at once.

Options: ``--log PATH``, ``--handshake PATH`` (initialize digest for
agent-only recordings), ``--session-id ID`` (for synthesised sessions).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from agy_host.testing import _wire
from agy_host.testing.replay.recordings import RecordingError, is_response
from agy_host.testing.replay.script import SYNTH_SESSION_ID, Emit, EmitRaw, ExitCode, Expect, ScriptItem, load_script

INTERNAL_ERROR = -32603
PARSE_ERROR = -32700


def _key(msg_id: Any) -> str:
    return repr(msg_id)


class Replayer:
    def __init__(self, script: Sequence[ScriptItem], out: _wire.Output, log: _wire.MessageLog, name: str) -> None:
        self.script = list(script)
        self.out = out
        self.log = log
        self.name = name
        self.pos = 0
        self.exit_code = 0
        #: recorded client request id -> the id the client really used
        self._ids: dict[str, Any] = {}
        self.play()

    # -- playing -----------------------------------------------------------

    def expected(self) -> Expect | None:
        if self.pos < len(self.script):
            item = self.script[self.pos]
            return item if isinstance(item, Expect) else None
        return None

    def play(self) -> None:
        """Write agent items until the next expected client message."""
        while self.pos < len(self.script):
            item = self.script[self.pos]
            if isinstance(item, Expect):
                return
            self.pos += 1
            if isinstance(item, Emit):
                self.out.send(self._rewrite(item.frame))
            elif isinstance(item, EmitRaw):
                self.out.raw_line(item.text)
            elif isinstance(item, ExitCode):
                self.exit_code = item.code

    def _rewrite(self, frame: dict[str, Any]) -> dict[str, Any]:
        if is_response(frame) and "id" in frame:
            key = _key(frame["id"])
            if key in self._ids:
                return {**frame, "id": self._ids.pop(key)}
        return frame

    def _mismatch(self, msg_id: Any, got: str, expect: Expect | None) -> None:
        if expect is None:
            text = f"replay {self.name}: the recording has no more client messages, got {got}"
        else:
            text = f"replay {self.name}: expected {expect.describe()} (recording line {expect.line}), got {got}"
        _wire.stderr(text)
        self.log.event("mismatch", message=text)
        if msg_id is not None:
            data: dict[str, Any] = {"recording": self.name, "got": got}
            if expect is not None:
                data.update(expected=expect.frame, line=expect.line)
            self.out.send(_wire.error_response(msg_id, INTERNAL_ERROR, text, data))

    # -- input -------------------------------------------------------------

    def handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = _wire.decode(line)
        except msgspec.DecodeError:
            self.log.received(line, parsed=False)
            _wire.stderr(f"replay {self.name}: not JSON, answered -32700: {line[:200]!r}")
            self.out.send(_wire.error_response(None, PARSE_ERROR, "Parse error"))
            return
        self.log.received(line, parsed=True)
        if not isinstance(msg, dict):
            self._mismatch(None, "a non-object JSON line", self.expected())
            return
        expect = self.expected()
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            self._on_request(msg, method, expect)
        elif isinstance(method, str):
            self._on_notification(method, expect)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self._on_response(msg, expect)
        else:
            self._on_line(msg, expect)

    def _advance(self) -> None:
        self.pos += 1
        self.play()

    def _on_request(self, msg: dict[str, Any], method: str, expect: Expect | None) -> None:
        if expect is not None and expect.kind == "request" and expect.frame["method"] == method:
            self._ids[_key(expect.frame["id"])] = msg["id"]
            self._advance()
            return
        self._mismatch(msg["id"], f"request {method}", expect)

    def _on_notification(self, method: str, expect: Expect | None) -> None:
        if expect is not None and expect.kind == "notification" and expect.frame["method"] == method:
            self._advance()
            return
        _wire.stderr(f"replay {self.name}: ignoring notification {method} (not next in the recording)")
        self.log.event("ignored-notification", method=method)

    def _on_response(self, msg: dict[str, Any], expect: Expect | None) -> None:
        if expect is not None and expect.kind == "response" and expect.frame["id"] == msg["id"]:
            recorded = {k: expect.frame.get(k) for k in ("result", "error") if k in expect.frame}
            got = {k: msg.get(k) for k in ("result", "error") if k in msg}
            if recorded != got:
                _wire.stderr(f"replay {self.name}: answer to id {msg['id']!r} differs: recorded {recorded}, got {got}")
                self.log.event("answer-differs", id=msg["id"], recorded=recorded, got=got)
            self._advance()
            return
        _wire.stderr(f"replay {self.name}: unexpected response id {msg['id']!r} ignored")
        self.log.event("unexpected-response", id=msg["id"])

    def _on_line(self, msg: dict[str, Any], expect: Expect | None) -> None:
        # Not JSON-RPC (a stream-json stdin line): match on its "event"/"type".
        if expect is not None and expect.kind == "line":
            label = ("event", "type")
            if all(msg.get(k) == expect.frame.get(k) for k in label):
                self._advance()
                return
        self._mismatch(None, f"line {msg!r:.200}", expect)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    p = argparse.ArgumentParser(
        prog="python -m agy_host.testing.replay.agent", description="Serve one recording as an ACP agent."
    )
    p.add_argument("recording", help="a recorded .jsonl file")
    p.add_argument("--log", help="append received messages here (env AGY_REPLAY_AGENT_LOG)")
    p.add_argument("--handshake", help="initialize digest for recordings without client frames")
    p.add_argument("--session-id", default=SYNTH_SESSION_ID, help="session id of a synthesised session/new")
    args = p.parse_args(argv)
    try:
        script = load_script(args.recording, handshake=args.handshake, session_id=args.session_id)
    except (RecordingError, OSError, ValueError, TypeError) as exc:
        _wire.stderr(f"replay_agent: {exc}")
        return 2
    log = _wire.MessageLog(args.log or env.get("AGY_REPLAY_AGENT_LOG"))
    replayer = Replayer(script, _wire.Output(), log, os.path.basename(args.recording))
    try:
        for line in _wire.stdin_lines():
            replayer.handle_line(line)
    except KeyboardInterrupt:
        return 130
    log.event("stdin-eof")
    return replayer.exit_code


if __name__ == "__main__":
    sys.exit(main())
