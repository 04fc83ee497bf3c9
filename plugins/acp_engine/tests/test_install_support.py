"""Real parts for the install, status and sign-in tests (no tests in here).

* :class:`LoopbackServer`: a small HTTP/1.1 server on 127.0.0.1, in trio,
  serving routes the test sets up: the registry entry, good archives, and
  archives that are cut short, cut short once, or served without Range
  support. It answers a bounded number of requests and records each one.
* :func:`make_archive`: a real zip with a real fake server inside:
  ``agy_acp_server.par`` is a shell script that execs
  ``python -m agy_host.testing.acp.agent`` (scenario from the
  environment), plus a ``localharness_external`` of random bytes so the
  archive is big enough for progress and resume to mean something.
* :func:`run_cli`: the real ``agy-host`` console script as a subprocess, with
  an isolated HOME and no network beyond loopback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio

from agy_host_acp.registry import platform_key

AGY_HOST = Path(sys.executable).with_name("agy-host")
BUILD = "9.9.0"
PLATFORM = platform_key()
_OS, _ARCH = PLATFORM.split("-")
ARCHIVE_ARCH = "arm64" if _ARCH == "aarch64" else _ARCH


def archive_name(build: str) -> str:
    return f"agy-acp-server-{build}-{_OS}-{ARCHIVE_ARCH}.zip"


def fake_server_script(*, exit_code: int | None = None) -> str:
    """The fake ``agy_acp_server.par``: it insists on the harness path the
    engine must pass, then becomes the scripted fake ACP agent."""
    if exit_code is not None:
        return f"#!/bin/sh\necho 'fake agy: refusing to start' >&2\nexit {exit_code}\n"
    return (
        "#!/bin/sh\n"
        "# fake Antigravity ACP server for agy-host tests\n"
        '[ -f "$ANTIGRAVITY_HARNESS_PATH" ] || { echo "fake agy: ANTIGRAVITY_HARNESS_PATH not set" >&2; exit 3; }\n'
        ': "${AGY_FAKE_ACP_SCENARIO:=happy}"\n'
        "export AGY_FAKE_ACP_SCENARIO\n"
        f"exec {shlex.quote(sys.executable)} -m agy_host.testing.acp.agent\n"
    )


def _member(zf: zipfile.ZipFile, name: str, data: bytes, mode: int, compress: int = zipfile.ZIP_DEFLATED) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 10, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = compress
    zf.writestr(info, data)


def make_archive(
    path: Path,
    *,
    harness_bytes: int = 600_000,
    script: str | None = None,
    extra: Sequence[tuple[str, bytes]] = (),
    binary: bool = True,
    seed: int = 1,
) -> bytes:
    """Write a server archive like Google's (two top-level files); return its bytes."""
    rng = hashlib.sha256(str(seed).encode()).digest()
    harness = bytearray()
    while len(harness) < harness_bytes:
        rng = hashlib.sha256(rng).digest()
        harness += rng
    with zipfile.ZipFile(path, "w") as zf:
        if binary:
            _member(zf, "agy_acp_server.par", (script or fake_server_script()).encode(), 0o755)
        _member(zf, "localharness_external", bytes(harness[:harness_bytes]), 0o755, zipfile.ZIP_STORED)
        for name, data in extra:
            _member(zf, name, data, 0o644)
    return path.read_bytes()


def symlink_archive(path: Path) -> bytes:
    with zipfile.ZipFile(path, "w") as zf:
        _member(zf, "agy_acp_server.par", fake_server_script().encode(), 0o755)
        info = zipfile.ZipInfo("localharness_external")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    return path.read_bytes()


def damage_member(data: bytes, name: str = "localharness_external") -> bytes:
    """Flip bytes inside a stored member's data: the zip still opens, its CRC fails."""
    import io

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    mid = start + info.compress_size // 2
    out = bytearray(data)
    for i in range(mid, mid + 64):
        out[i] ^= 0xFF
    return bytes(out)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def registry_entry(build: str, url: str, version: str | None = None) -> bytes:
    target = {"archive": url, "cmd": "./agy_acp_server.par"}
    if _OS == "linux":
        target["args"] = ["--uid="]  # type: ignore[assignment]
    entry = {
        "id": "antigravity-acp",
        "name": "Google Antigravity",
        "version": version or build,
        "distribution": {"binary": {PLATFORM: target}},
    }
    return json.dumps(entry).encode()


def write_pins(path: Path, builds: Mapping[str, tuple[str, str, int]], default: str = "") -> Path:
    """``builds``: build -> (url, sha256, bytes) for this platform."""
    lines = [f'default = "{default}"', ""] if default else []
    for build, (url, sha, size) in builds.items():
        lines += [
            f'[builds."{build}".archives.{PLATFORM}]',
            f'url = "{url}"',
            f'sha256 = "{sha}"',
            f"bytes = {size}",
            'source = "made by the test"',
            "",
        ]
    path.write_text("\n".join(lines))
    return path


# ---------------------------------------------------------------------------
# the loopback server
# ---------------------------------------------------------------------------


class Route(msgspec.Struct, kw_only=True):
    body: bytes
    #: ok | truncate (every response cut in half) | drop-once (the first one
    #: cut, Range honoured) | no-range (the first one cut, Range ignored)
    mode: str = "ok"
    status: int = 200
    content_type: str = "application/octet-stream"
    served: int = 0


class Seen(msgspec.Struct):
    method: str
    path: str
    headers: dict[str, str]


class LoopbackServer:
    """Start with ``await nursery.start(server.run)``; it stops with the nursery."""

    def __init__(self, max_requests: int = 64) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self.max_requests = max_requests
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add(self, path: str, body: bytes, **kw: Any) -> str:
        self.routes[path] = Route(body=body, **kw)
        return self.url(path)

    def requests_for(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started()

    async def _read_head(self, stream: trio.SocketStream) -> bytes:
        data = b""
        with trio.move_on_after(10):
            while b"\r\n\r\n" not in data and len(data) < 16384:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                data += chunk
        return data

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            head = await self._read_head(stream)
            if len(self.seen) >= self.max_requests or b"\r\n" not in head:
                return
            request_line, *header_lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, path, _version = request_line.split(" ", 2)
            headers = {}
            for line in header_lines:
                name, _sep, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.seen.append(Seen(method, path, headers))
            await self._respond(stream, path, headers)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError):
            pass
        finally:
            await stream.aclose()

    async def _respond(self, stream: trio.SocketStream, path: str, headers: dict[str, str]) -> None:
        route = self.routes.get(path)
        if route is None:
            await self._send(stream, 404, {"Content-Type": "text/plain"}, b"not found")
            return
        route.served += 1
        body = route.body
        if route.status != 200:
            await self._send(stream, route.status, {"Content-Type": "text/plain"}, b"nope")
            return
        extra = {"Content-Type": route.content_type, "ETag": f'"{sha256(body)[:16]}"', "Accept-Ranges": "bytes"}
        start = 0
        rng = headers.get("range", "")
        if rng.startswith("bytes=") and rng.endswith("-") and route.mode != "no-range":
            start = int(rng[len("bytes=") : -1])
            if headers.get("if-range") not in (None, extra["ETag"]):
                start = 0
        if route.mode == "no-range":
            extra.pop("Accept-Ranges")
        if start >= len(body) > 0:
            await self._send(stream, 416, {"Content-Range": f"bytes */{len(body)}"}, b"")
            return
        cut = route.mode == "truncate" or (route.mode in ("drop-once", "no-range") and route.served == 1)
        if start:
            extra["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
            await self._send(stream, 206, extra, body[start:], cut=cut)
        else:
            await self._send(stream, 200, extra, body, cut=cut)

    async def _send(
        self, stream: trio.SocketStream, status: int, headers: dict[str, str], body: bytes, *, cut: bool = False
    ) -> None:
        reason = {200: "OK", 206: "Partial Content", 404: "Not Found", 416: "Range Not Satisfiable"}.get(status, "X")
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        payload = body[: len(body) // 2] if cut else body
        for i in range(0, len(payload), 64 * 1024):
            await stream.send_all(payload[i : i + 64 * 1024])


# ---------------------------------------------------------------------------
# the CLI
# ---------------------------------------------------------------------------


class Result(msgspec.Struct):
    returncode: int
    stdout: str
    stderr: str


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_", "GEMINI_", "GOOGLE_", "ANTIGRAVITY_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
        PWD=str(tmp_path),
    )
    env.update(extra)
    return env


async def run_cli(
    env: Mapping[str, str], *args: str, timeout: float = 120, preexec: Any = None, cwd: Path | None = None
) -> Result:
    with trio.fail_after(timeout):
        proc = await trio.run_process(
            [str(AGY_HOST), *args],
            env=dict(env),
            capture_stdout=True,
            capture_stderr=True,
            stdin=b"",
            check=False,
            preexec_fn=preexec,
            cwd=str(cwd) if cwd else env.get("PWD"),
        )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


class World:
    """One registry entry, its archives, a pin file and the CLI environment."""

    def __init__(self, tmp_path: Path, server: LoopbackServer) -> None:
        self.tmp = tmp_path
        self.server = server
        self.pins: dict[str, tuple[str, str, int]] = {}
        self.pin_file = tmp_path / "pins.toml"
        self.default = BUILD

    def archive(
        self, build: str = BUILD, data: bytes | None = None, *, mode: str = "ok", **kw: object
    ) -> tuple[str, bytes]:
        name = archive_name(build)
        if data is None:
            data = make_archive(self.tmp / name, **kw)  # type: ignore[arg-type]
        url = self.server.add(f"/releases/{name}", data, mode=mode)
        return url, data

    def registry(self, build: str, url: str) -> None:
        self.server.add("/registry/agent.json", registry_entry(build, url), content_type="application/json")

    def pin(self, build: str, url: str, data: bytes, *, sha: str | None = None, size: int | None = None) -> None:
        self.pins[build] = (url, sha or sha256(data), len(data) if size is None else size)
        write_pins(self.pin_file, self.pins, default=self.default)

    def publish(self, build: str = BUILD, *, mode: str = "ok", data: bytes | None = None) -> tuple[str, bytes]:
        """The usual case: the registry offers ``build`` and it is pinned."""
        url, data = self.archive(build, data, mode=mode)
        self.registry(build, url)
        self.pin(build, url, data)
        return url, data

    def env(self, **extra: str) -> dict[str, str]:
        base = {"AGY_ACP_REGISTRY_URL": self.server.url("/registry/agent.json"), "AGY_ACP_PINS": str(self.pin_file)}
        return cli_env(self.tmp, **{**base, **extra})

    @property
    def root(self) -> Path:
        return install_root(self.tmp)


def install_root(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".local/opt/agy-acp"


def tree(root: Path) -> list[str]:
    """Everything under ``root`` except the lock file, for 'nothing was left' checks."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name != ".install.lock")


__all__ = [
    "AGY_HOST",
    "BUILD",
    "World",
    "PLATFORM",
    "LoopbackServer",
    "Result",
    "archive_name",
    "cli_env",
    "damage_member",
    "fake_server_script",
    "install_root",
    "make_archive",
    "registry_entry",
    "run_cli",
    "sha256",
    "symlink_archive",
    "tree",
    "write_pins",
]
