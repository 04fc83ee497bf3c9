"""Run the ``agy-host`` CLI under an audit hook that records every file it
opens inside the forbidden paths (``AUDIT_FORBIDDEN``, ``os.pathsep``
separated) to ``AUDIT_LOG``. Child processes (the agent) are other
interpreters and are not audited: the agent may read its own credentials;
agy-host may not. ``AUDIT_SELFTEST=1`` opens the first forbidden path once
first, so a test can prove the hook sees opens."""

from __future__ import annotations

import os
import runpy
import sys

FORBIDDEN = [os.path.realpath(p) for p in os.environ.get("AUDIT_FORBIDDEN", "").split(os.pathsep) if p]
LOG = os.environ["AUDIT_LOG"]


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event not in ("open", "os.listdir", "os.scandir") or not args:
        return
    target = args[0]
    if isinstance(target, bytes):
        target = target.decode("utf-8", "replace")
    if not isinstance(target, str):
        return
    real = os.path.realpath(target)
    if any(real == bad or real.startswith(bad + os.sep) for bad in FORBIDDEN):
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # os.open raises no "open" event
        try:
            os.write(fd, f"{event} {real}\n".encode())
        finally:
            os.close(fd)


sys.addaudithook(_hook)
if os.environ.get("AUDIT_SELFTEST") == "1" and FORBIDDEN:
    with open(FORBIDDEN[0], "rb"):
        pass
sys.argv = ["agy-host", *sys.argv[1:]]
runpy.run_module("agy_host.cli.main", run_name="__main__")
