"""The one harness process of an agy-host process: spawned, bootstrapped,
supervised, shut down.

* Spawned in its own process group (core's :class:`GroupChild`), with its
  HOME moved under agy-host's state dir unless configured: its first start
  writes a helper binary into ``$HOME/.gemini`` otherwise.
* Bootstrapped once (:mod:`.bootstrap`): ``InputConfig`` in, the port and the
  socket key out, bounded by ``start_timeout_seconds``.
* stderr is drained into a bounded ring of meaningful lines: glog's "logging
  before google.Init" preambles are noise, but the real reasons (a config it
  refused, an unknown resume id) are only there.
* Shut down by closing stdin (the harness exits in about 20 ms); killed with
  its group only when it does not. If agy-host dies, the harness sees EOF on
  stdin and exits by itself.
* With a wire trace (``--trace``), the two bootstrap messages are traced as
  their decoded fields (``{"bootstrap": {"InputConfig": {...}}}``, the
  socket key redacted), and every stderr line.
"""

from __future__ import annotations

import collections
import platform
import re
import struct
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec
import trio

from agy_host.engine.process import GroupChild, SpawnError, open_in_own_group
from agy_host_harness import __version__
from agy_host_harness.bootstrap import (
    MAX_OUTPUT,
    BootstrapError,
    ClientInfo,
    InputConfig,
    OutputConfig,
    decode_output,
    encode_input,
    frame,
)

if TYPE_CHECKING:
    from agy_host.engine.trace import TraceTap

#: Meaningful stderr lines kept for errors and doctor.
STDERR_RING = 50
_GLOG_NOISE = re.compile(r"^(ERROR: logging before (flag\.Parse|google\.Init)|WARNING: logging before)")
_GLOG_PREFIX = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] ")


def meaningful(line: str) -> str | None:
    """The line without glog's prefix, or ``None`` for noise."""
    text = line.strip()
    if not text or _GLOG_NOISE.match(text):
        return None
    return _GLOG_PREFIX.sub("", text)


class HarnessProcess(GroupChild):
    def __init__(self, proc: trio.Process, path: str) -> None:
        super().__init__(proc)
        self._p = proc
        self.path = path
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_RING)
        self.output: OutputConfig | None = None
        self.started_at = trio.current_time()
        self.ready_after_s: float | None = None

    @classmethod
    async def start(
        cls,
        nursery: trio.Nursery,
        path: str,
        *,
        env: Mapping[str, str],
        cwd: str,
        storage_dir: str,
        timeout_s: float,
        trace: TraceTap | None = None,
    ) -> HarnessProcess:
        proc = await open_in_own_group([path], cwd=cwd, env=env, what="the harness (localharness)")
        child = cls(proc, path)
        child.trace = trace
        nursery.start_soon(child.drain_stderr)
        nursery.start_soon(child.wait)
        try:
            with trio.fail_after(timeout_s):
                await child._bootstrap(storage_dir)
        except trio.TooSlowError:
            await child.terminate(0.2)
            raise BootstrapError(
                f"the harness did not answer its bootstrap within {timeout_s:g}s{child.reason_suffix()}"
            ) from None
        except BaseException:
            await child.terminate(0.2)
            raise
        child.ready_after_s = trio.current_time() - child.started_at
        return child

    async def _bootstrap(self, storage_dir: str) -> None:
        assert self._p.stdin is not None and self._p.stdout is not None
        info = ClientInfo(
            language="python",
            version=f"agy-host-harness {__version__}",
            language_version=platform.python_version(),
            os=sys.platform,
            os_version=platform.release(),
        )
        config = InputConfig(storage_directory=storage_dir, client_info=info)
        message = encode_input(config)
        if self.trace is not None:
            self.trace.sent({"bootstrap": {"InputConfig": msgspec.to_builtins(config)}})
        try:
            await self._p.stdin.send_all(frame(message))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            await self.exited.wait()
            raise BootstrapError(f"the harness exited before its bootstrap ({exc}){self.reason_suffix()}") from exc
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack("<I", data[:4])[0]:
            chunk = await self._p.stdout.receive_some(4096)
            if not chunk:
                await self.exited.wait()
                code = self.returncode
                raise BootstrapError(
                    f"the harness exited (code {code}) before answering its bootstrap{self.reason_suffix()}"
                )
            data += chunk
            if len(data) >= 4 and struct.unpack("<I", data[:4])[0] > MAX_OUTPUT:
                raise BootstrapError("the harness answered its bootstrap with something that is not an OutputConfig")
        size = struct.unpack("<I", data[:4])[0]
        self.output = decode_output(data[4 : 4 + size])
        if self.trace is not None:
            self.trace.add_secrets([self.output.api_key])
            self.trace.received({"bootstrap": {"OutputConfig": msgspec.to_builtins(self.output)}})

    def on_stderr_line(self, line: str) -> None:
        text = meaningful(line)
        if text is not None:
            self.lines.append(text)

    def reason(self) -> str:
        """The harness's last meaningful stderr lines (its own reasons)."""
        return "\n".join(list(self.lines)[-5:])

    def reason_suffix(self) -> str:
        reason = self.reason()
        return f": {reason}" if reason else ""

    def lines_since(self, mark: int) -> list[str]:
        """Lines logged after ``mark`` (a previous ``len(lines)``, bounded by the ring)."""
        items = list(self.lines)
        return items[max(0, min(mark, len(items))) :]

    async def close(self, grace_s: float = 2.0) -> None:
        """Close stdin (the harness's own shutdown), kill the group if it lingers."""
        await self.end(eof_grace=grace_s)


__all__ = ["STDERR_RING", "HarnessProcess", "SpawnError", "meaningful"]
