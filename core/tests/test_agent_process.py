"""What every engine's agent child is built on: the line framing
(:class:`agy_host.engine.process.LineSplitter`) and the process-group child
(:class:`~agy_host.engine.process.GroupChild`), with real subprocesses."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

from agy_host.engine.process import MAX_LINE_BYTES, GroupChild, LineSplitter, SpawnError, open_in_own_group


def test_splitter_reassembles_frames_split_at_every_byte() -> None:
    frames = [
        json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"text": "é" * i}}).encode()
        for i in range(5)
    ]
    stream = b"\n".join(frames) + b"\n"
    for cut in range(1, len(stream)):
        buf = LineSplitter()
        a, _ = buf.feed(stream[:cut])
        b, _ = buf.feed(stream[cut:])
        assert a + b == frames


def test_splitter_refuses_oversized_line_and_recovers() -> None:
    buf = LineSplitter(max_line=10)
    lines, dropped = buf.feed(b"x" * 8)
    assert (lines, dropped) == ([], 0)
    lines, dropped = buf.feed(b"y" * 8)  # now 16 bytes without newline: refused at once, discard mode
    assert (lines, dropped) == ([], 1)
    lines, dropped = buf.feed(b"zz\nok\n")
    assert (lines, dropped) == ([b"ok"], 0)  # the rest of the refused line is skipped, counted once


def test_splitter_drops_long_complete_line() -> None:
    buf = LineSplitter(max_line=4)
    lines, dropped = buf.feed(b"abcdefgh\nabc\n")
    assert lines == [b"abc"]
    assert dropped == 1


def test_splitter_accepts_a_line_of_exactly_the_limit_in_pieces() -> None:
    buf = LineSplitter(max_line=6)
    assert buf.feed(b"abc") == ([], 0)
    assert buf.feed(b"def\nnext") == ([b"abcdef"], 0)
    assert buf.pending == b"next"


def test_splitter_never_lets_the_rest_of_a_refused_line_through() -> None:
    buf = LineSplitter(max_line=4)
    assert buf.feed(b"xxxxx") == ([], 1)  # refused as soon as it is too long
    assert buf.feed(b"yyyy") == ([], 0)  # still the refused line: skipped, not counted again
    assert buf.feed(b"yyAFTER\nok\n") == ([b"ok"], 0)


def test_splitter_flush_returns_the_unterminated_line_once() -> None:
    buf = LineSplitter()
    assert buf.max_line == MAX_LINE_BYTES
    buf.feed(b'{"a": 1}\n{"b"')
    buf.feed(b": 2}")
    assert buf.flush() == b'{"b": 2}'
    assert buf.flush() == b""
    assert buf.feed(b"fresh\n") == ([b"fresh"], 0)


# -- the process-group child ------------------------------------------------------------


class Recorder(GroupChild):
    def __init__(self, proc: trio.Process) -> None:
        super().__init__(proc)
        self.lines: list[str] = []
        self.exits = 0

    def on_stderr_line(self, line: str) -> None:
        if line == "boom":
            raise RuntimeError("a bug in the engine's callback")
        self.lines.append(line)

    def on_exited(self) -> None:
        self.exits += 1


async def test_spawn_errors_name_the_command_and_the_cwd(tmp_path: Path) -> None:
    script = tmp_path / "agent"
    script.write_text("#!/bin/sh\n")  # not executable
    cases = [
        ([str(tmp_path / "nope")], None, "my agent not found: "),
        ([str(script)], None, "my agent is not executable: "),
        ([sys.executable], str(tmp_path / "gone"), "the working directory does not exist: "),
        ([], None, "empty my agent"),
    ]
    for argv, cwd, message in cases:
        with pytest.raises(SpawnError, match=message):
            await open_in_own_group(argv, cwd=cwd, env=None, what="my agent")


async def test_stderr_is_drained_into_a_bounded_tail_and_lines_survive_a_bad_callback() -> None:
    code = "import sys\nsys.stderr.write('first\\r\\nboom\\n' + 'x' * 20000 + '\\nlast')\n"
    proc = await open_in_own_group([sys.executable, "-c", code], cwd=None, env=None, what="agent")
    child = Recorder(proc)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(child.drain_stderr)
        nursery.start_soon(child.wait)
        with trio.fail_after(30):
            await child.exited.wait()
            await child.stderr_done.wait()
    assert child.lines == ["first", "x" * 20000, "last"], "a raising callback must not stop the draining"
    assert child.returncode == 0 and child.exits == 1 and not child.alive
    assert len(child.stderr_tail()) == 8192 and child.stderr_tail().endswith("x\nlast")


async def test_terminate_kills_the_whole_group_even_when_sigterm_is_ignored(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild"
    # a wrapper that ignores SIGTERM, with a grandchild that would outlive it
    script = f"trap '' TERM; sleep 300 & echo $! > {pidfile}; wait"
    proc = await open_in_own_group(["sh", "-c", script], cwd=str(tmp_path), env=None, what="agent")
    child = Recorder(proc)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(child.drain_stderr)
        nursery.start_soon(child.wait)
        with trio.fail_after(30):
            while not pidfile.exists() or not pidfile.read_text().strip():
                await trio.sleep(0.02)
            grandchild = int(pidfile.read_text())
            await child.terminate(grace=0.2)
    assert not child.alive and child.returncode is not None
    for _ in range(100):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        await trio.sleep(0.02)
    else:
        raise AssertionError(f"the grandchild {grandchild} outlived the group kill")


async def test_terminate_and_end_do_not_need_the_exit_watcher(tmp_path: Path) -> None:
    """A command that is ending cancels its tasks, the exit watcher among
    them; the kill still sees the exit at once (it used to wait out the
    grace and a 5 s bound), and ``on_exited`` still runs once."""
    ignores_all = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)\n"
    proc = await open_in_own_group([sys.executable, "-c", ignores_all], cwd=None, env=None, what="agent")
    child = Recorder(proc)
    await trio.sleep(0.3)  # the handler is installed
    start = trio.current_time()
    with trio.fail_after(30):
        await child.end(eof_grace=0.1, kill_grace=0.2)  # no watcher was ever started
    took = trio.current_time() - start
    assert not child.alive and child.returncode == -9 and child.exits == 1
    assert took < 4.0, f"{took:.2f}s: a bound was waited out"  # eof 0.1 + grace 0.2 + the reaping


async def test_kill_every_group_reaches_every_live_child_of_the_process(tmp_path: Path) -> None:
    from agy_host.engine.process import kill_every_group

    ignores_term = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)"
    sleeper = [sys.executable, "-c", ignores_term]
    children = [Recorder(await open_in_own_group(sleeper, cwd=None, env=None, what="agent")) for _ in range(2)]
    assert kill_every_group() >= 2
    with trio.fail_after(30):
        for child in children:
            assert await child.exited_within(10)
    assert [c.returncode for c in children] == [-9, -9]
