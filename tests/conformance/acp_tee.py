"""A transparent wire tap for an ACP agent: ``python acp_tee.py LOG -- AGENT...``.

agy-host is given this script as its agent command; the script starts the
real agent and copies bytes line by line both ways, appending each line to
``LOG`` first. The fake ACP agent logs only what it *receives*, and a real
third-party agent logs nothing, so this is how the conformance tests see
every message an agent sends to agy-host (and every answer agy-host gives)
without changing either program.

Why it is safe to put in the middle:

* it stays in the process group agy-host made for the agent (no new
  session), so agy-host's SIGTERM/SIGKILL of the group reaches the agent
  exactly as without the tap;
* it survives SIGTERM itself (a no-op handler, so the agent does not
  inherit an ignored SIGTERM) and exits only when the agent's stdout closes,
  with the agent's exit status, so agy-host sees the agent's lifetime (not
  an early exit of the tap) and its kill escalation still applies;
* stdin EOF is passed on (many agents exit on it), stderr is inherited
  untouched;
* each log line is one ``os.write`` of a complete JSON object on an
  ``O_APPEND`` descriptor, written before the line is forwarded, so the log
  survives a SIGKILL and never interleaves half lines.

Log lines: ``{"dir": "to_agent" | "from_agent", "t": seconds, "frame": obj}``
for a JSON object, ``{"dir": ..., "t": ..., "raw": text}`` for anything else
(a sign-in URL line, garbage); ``{"dir": "tap", "start": pid}`` first and
``{"dir": "tap", "exit": rc}`` last, so runs appended to one log stay apart.

Standard library only: it runs under whatever interpreter agy-host's tests use.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any


class _Log:
    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._start = time.monotonic()

    def write(self, record: dict[str, Any]) -> None:
        record.setdefault("t", round(time.monotonic() - self._start, 4))
        os.write(self._fd, (json.dumps(record, ensure_ascii=False) + "\n").encode())

    def line(self, direction: str, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            return
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            self.write({"dir": direction, "frame": obj})
        else:
            self.write({"dir": direction, "raw": text})


def _pump(src: IO[bytes], dst: IO[bytes], log: _Log, direction: str) -> None:
    """Copy ``src`` to ``dst`` line by line, logging each line first; close
    ``dst`` at EOF (passing EOF on) or when the other end is gone."""
    try:
        for line in iter(src.readline, b""):
            log.line(direction, line)
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, ValueError, OSError):
                break
    finally:
        try:
            dst.close()
        except (BrokenPipeError, OSError):
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: acp_tee.py LOG -- AGENT [ARGS...]", file=sys.stderr)
        return 2
    log = _Log(argv[0])
    # Several runs may share one log (agy-host keys a session's conversation
    # by the agent command line, so a resumed run must use the same one).
    log.write({"dir": "tap", "start": os.getpid()})
    # The group SIGTERM reaches the agent too; the tap outlives it so its
    # exit status is the agent's (agy-host escalates to SIGKILL of the group).
    # A handler, not SIG_IGN: an ignored signal would be inherited by the agent.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: None)
    child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    to_agent = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, child.stdin, log, "to_agent"), name="to-agent", daemon=True
    )
    to_agent.start()
    _pump(child.stdout, sys.stdout.buffer, log, "from_agent")
    rc = child.wait()
    log.write({"dir": "tap", "exit": rc})
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
