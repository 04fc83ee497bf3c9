"""The bridge's entry in the agy CLI's global MCP config (stream-json engine).

The ``agy`` CLI finds MCP servers in ``~/.gemini/config/mcp_config.json``
(``--add-dir`` discovery did not register tools, the original learnt), so a
stream-json host adds its bridge there while it runs, in exactly the shape
``agy mcp add --type http`` writes::

    {"mcpServers": {"agy-host-bridge-<pid>": {
        "disabled": false,
        "headers": {"x-bridge-token": "<token>"},
        "serverUrl": "http://127.0.0.1:<port>/mcp"}}}

The file is the user's, so every change is careful:

* written atomically (temp file, fsync, rename) under a lock beside it, and
  made ``0600`` on every write (it carries the token);
* other servers are kept byte for byte in meaning; a file that is not a JSON
  object is **refused** and never rewritten; a symlink is refused too
  (rewriting would replace the user's link with a plain file);
* entries of agy-host processes that died are swept (a pid is alive when
  ``kill(pid, 0)`` succeeds or fails with EPERM), and so are entries whose
  pid was reused by another process: each entry carries its process's start
  time (``/proc/<pid>/stat``, in the ``x-agy-host-started`` header, which
  agy sends back to the bridge and nobody reads), and an entry from before
  that header is kept only while its pid runs agy-host;
* our entry is removed when the host exits, and **disabled** while a one-shot
  delegated ``agy`` runs: every agy on the machine reads (and watches) this
  file, and a delegated agy would call host tools no host turn can serve.
  Disabling is reference-counted and released when the delegated process is
  gone, never on a timer (a timer release broke delegations at about 50 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agy_host import fsutil

ENTRY_PREFIX = "agy-host-bridge-"
_ENTRY = re.compile(rf"^{re.escape(ENTRY_PREFIX)}(\d+)$")
TOKEN_HEADER = "x-bridge-token"
#: The registering process's start time: with the pid, who wrote the entry.
STARTED_HEADER = "x-agy-host-started"


class RegistrationRefused(Exception):
    """The config file cannot be changed safely (corrupt, not an object, a symlink)."""


def config_file(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".gemini" / "config" / "mcp_config.json"


def entry_name(pid: int) -> str:
    return f"{ENTRY_PREFIX}{pid}"


def entry(url: str, token: str, *, disabled: bool = False, started: str | None = None) -> dict[str, Any]:
    headers = {TOKEN_HEADER: token}
    if started is not None:
        headers[STARTED_HEADER] = started
    return {"disabled": disabled, "headers": headers, "serverUrl": url}


def process_started(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, ``/proc/<pid>/stat``
    field 22); ``None`` where that cannot be read (another OS, no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("utf-8", "replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _runs_agy_host(pid: int) -> bool:
    """Whether ``pid``'s command line names agy-host (``True`` when it cannot be read)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"agy-host" in cmdline or b"agy_host" in cmdline


def still_ours(pid: int, value: object) -> bool:
    """Whether the live ``pid`` is still the process that wrote ``value``."""
    headers = value.get("headers") if isinstance(value, dict) else None
    recorded = headers.get(STARTED_HEADER) if isinstance(headers, dict) else None
    if not isinstance(recorded, str):
        return _runs_agy_host(pid)  # an entry from before the header
    now = process_started(pid)
    return now is None or now == recorded


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_path(path: Path) -> Path:
    # fsutil.locked adds ".lock"; a hidden name keeps agy's folder tidy.
    return path.with_name(f".{path.name}.agy-host")


def read(path: Path) -> dict[str, Any] | None:
    """The parsed file, ``None`` when absent; refuses what it cannot keep."""
    if path.is_symlink():
        raise RegistrationRefused(f"{path} is a symlink; refusing to replace it")
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistrationRefused(f"cannot read {path}: {exc}; refusing to touch it") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise RegistrationRefused(f"{path} is not valid JSON ({exc}); refusing to touch it") from exc
    if not isinstance(data, dict):
        raise RegistrationRefused(f"{path} does not hold a JSON object; refusing to touch it")
    return data


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        servers = {}
        data["mcpServers"] = servers
    return servers


def _write(path: Path, data: dict[str, Any]) -> None:
    fsutil.write_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), mode=0o600)


def update(path: Path, change: Callable[[dict[str, Any]], bool], *, create: bool = True) -> bool:
    """Apply ``change`` to the servers table under the lock; write only when it
    says something changed. Returns whether the file was written."""
    if not create and not path.exists() and not path.is_symlink():
        return False  # nothing to change, and no folder of agy's is created for the lock
    with fsutil.locked(_lock_path(path)):
        data = read(path)
        if data is None:
            if not create:
                return False
            data = {}
        if not change(_servers(data)):
            return False
        _write(path, data)
        return True


def register(path: Path, pid: int, url: str, token: str) -> bool:
    """Add or refresh our entry (enabled)."""
    wanted = entry(url, token, started=process_started(pid))

    def change(servers: dict[str, Any]) -> bool:
        if servers.get(entry_name(pid)) == wanted:
            return False
        servers[entry_name(pid)] = wanted
        return True

    return update(path, change)


def unregister(path: Path, pid: int) -> bool:
    """Remove only our entry; ``False`` when it was not there."""

    def change(servers: dict[str, Any]) -> bool:
        return servers.pop(entry_name(pid), None) is not None

    return update(path, change, create=False)


def sweep_stale(
    path: Path,
    is_alive: Callable[[int], bool] = pid_alive,
    is_writer: Callable[[int, object], bool] = still_ours,
) -> list[str]:
    """Remove ``agy-host-bridge-<pid>`` entries whose pid is dead or now
    another process (:func:`still_ours`); other names stay."""
    removed: list[str] = []

    def change(servers: dict[str, Any]) -> bool:
        for name in list(servers):
            match = _ENTRY.match(name)
            if not match:
                continue
            pid = int(match.group(1))
            if not is_alive(pid) or not is_writer(pid, servers[name]):
                del servers[name]
                removed.append(name)
        return bool(removed)

    update(path, change, create=False)
    return removed


def set_disabled(path: Path, disabled: bool, *, pid: int | None = None) -> list[str]:
    """Flip ``disabled`` on our entries (only ``pid``'s, or every agy-host
    bridge entry); idempotent. Returns the entries changed."""
    changed: list[str] = []

    def change(servers: dict[str, Any]) -> bool:
        for name, value in servers.items():
            match = _ENTRY.match(name)
            if not match or (pid is not None and int(match.group(1)) != pid) or not isinstance(value, dict):
                continue
            if value.get("disabled") is not disabled:
                value["disabled"] = disabled
                changed.append(name)
        return bool(changed)

    update(path, change, create=False)
    return changed


class CliRegistration:
    """One host's entry, for the length of a command: :meth:`start`,
    :meth:`suppressed` around a delegated agy, :meth:`stop`."""

    def __init__(self, path: Path, *, pid: int | None = None, warn: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.pid = os.getpid() if pid is None else pid
        self._warn = warn or (lambda _m: None)
        self.active = False
        self.swept: list[str] = []
        self._suppressions = 0

    def start(self, url: str, token: str) -> bool:
        """Sweep dead hosts' entries, then register ours. A refused file is
        reported and left as it is (the bridge still serves ACP)."""
        try:
            swept = sweep_stale(self.path)
            register(self.path, self.pid, url, token)
        except (RegistrationRefused, OSError) as exc:
            self._warn(f"bridge: not registered for the agy CLI: {exc}")
            return False
        self.swept = swept
        self.active = True
        return True

    def stop(self) -> None:
        if not self.active:
            return
        self.active = False
        try:
            unregister(self.path, self.pid)
        except (RegistrationRefused, OSError) as exc:
            self._warn(f"bridge: could not remove our entry from {self.path}: {exc}")

    @contextlib.contextmanager
    def suppressed(self) -> Iterator[None]:
        """Our entry is disabled while the block runs (reference-counted: the
        first entry disables, the last exit restores). A refused file fails
        open: things are left as they are."""
        self._suppressions += 1
        try:
            if self._suppressions == 1 and self.active:
                self._set(True)
            yield
        finally:
            self._suppressions -= 1
            if self._suppressions == 0 and self.active:
                self._set(False)

    def _set(self, disabled: bool) -> None:
        try:
            set_disabled(self.path, disabled, pid=self.pid)
        except (RegistrationRefused, OSError) as exc:
            self._warn(f"bridge: could not {'disable' if disabled else 're-enable'} our entry: {exc}")


__all__ = [
    "ENTRY_PREFIX",
    "STARTED_HEADER",
    "TOKEN_HEADER",
    "CliRegistration",
    "RegistrationRefused",
    "config_file",
    "entry",
    "entry_name",
    "pid_alive",
    "process_started",
    "read",
    "register",
    "set_disabled",
    "still_ours",
    "sweep_stale",
    "unregister",
    "update",
]
