"""The keeper's relay sends a turn's end at once, and never out of order
(keeper/relay.py), over a real socket pair."""

from __future__ import annotations

import os
import socket

import trio

from agy_host.contract.events import HostEvent, TextDelta, TurnEnded, TurnStarted
from agy_host.keeper import wire
from agy_host.keeper.relay import Relay

BIG = "x" * (4 << 20)


def _pair(*, small_buffer: bool = False) -> tuple[wire.FrameStream, wire.FrameStream, trio.socket.SocketType]:
    ours, theirs = trio.socket.socketpair()
    if small_buffer:
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return wire.FrameStream(trio.SocketStream(ours)), wire.FrameStream(trio.SocketStream(theirs)), theirs


def _turn(*deltas: str) -> list[HostEvent]:
    return [
        TurnStarted(session="s", engine="acp", agent="a"),
        *(TextDelta(delta=d) for d in deltas),
        TurnEnded(stop_reason="stop", duration_s=1.0, response="".join(deltas)),
    ]


def test_the_turns_end_goes_out_before_the_writer_task_runs() -> None:
    """The keeper's render hooks run right after the event, in the same
    step: what is queued is on the socket by then, as a cold renderer's
    output would be on the terminal."""

    async def main() -> None:
        keeper, _, theirs = _pair()
        relay = Relay(keeper, "test")
        events = _turn("hello", " world")
        for event in events:
            relay.event(event)
        data = os.read(theirs.fileno(), 1 << 20)  # no checkpoint: nothing else ran (raises when empty)
        got = []
        while data:
            size = wire.frame_length(data[: wire.HEADER_SIZE])
            frame = wire.decode_for_client(data[wire.HEADER_SIZE : wire.HEADER_SIZE + size])
            assert isinstance(frame, wire.Event)
            got.append(frame.event)
            data = data[wire.HEADER_SIZE + size :]
        assert got == events

    trio.run(main)


def test_what_the_socket_does_not_take_at_once_follows_in_order() -> None:
    async def main() -> None:
        keeper, client, _ = _pair(small_buffer=True)
        relay = Relay(keeper, "test")
        events = _turn(BIG, "tail")
        for event in events:
            relay.event(event)  # the end's early send writes only what the small buffer takes
        relay.warning("after the end")
        relay.finish()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.writer)
            got: list[object] = []

            async def read() -> None:
                while (raw := await client.receive_raw()) is not None:
                    frame = wire.decode_for_client(raw)
                    got.append(frame.event if isinstance(frame, wire.Event) else frame)
                    if isinstance(frame, wire.Warning_):
                        return

            nursery.start_soon(read)
        assert got == [*events, wire.Warning_(message="after the end")]

    trio.run(main)


def test_a_backlog_the_socket_has_not_taken_goes_before_the_end() -> None:
    """The client reads slowly, so the socket holds part of a long frame:
    the end sent early waits its turn instead of cutting into that frame."""

    async def main() -> None:
        keeper, client, _ = _pair(small_buffer=True)
        relay = Relay(keeper, "test")
        started, delta, ended = _turn(BIG)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.writer)
            relay.event(started)
            relay.event(delta)
            while not relay.backlog:
                await trio.sleep(0)
            relay.event(ended)
            relay.finish()
            got = await _read_all_until_end(client)
        assert got == [started, delta, ended]

    trio.run(main)


async def _read_all_until_end(client: wire.FrameStream) -> list[HostEvent]:
    out: list[HostEvent] = []
    while (raw := await client.receive_raw()) is not None:
        frame = wire.decode_for_client(raw)
        assert isinstance(frame, wire.Event)
        out.append(frame.event)
        if isinstance(frame.event, TurnEnded):
            break
    return out


def test_a_client_gone_before_the_end_closes_the_relay() -> None:
    async def main() -> None:
        keeper, client, _ = _pair()
        await client.aclose()
        relay = Relay(keeper, "test")
        for event in _turn("hi"):
            relay.event(event)
        assert relay.closed and relay.gone.is_set()

    trio.run(main)


def test_the_end_goes_out_whatever_step_the_writer_is_at() -> None:
    """CI found the gap: the writer had taken frames and was parked at a
    checkpoint (taking its lock, or after a send) when the turn ended, so the
    end waited for it, and the keeper's hooks ran first. Every write is one
    synchronous step now: wherever the writer is, the end goes out. (The
    scheduler's order is not fixed: each interleaving is tried, many times.)"""

    async def once(steps: int) -> bytes:
        keeper, _, theirs = _pair()
        relay = Relay(keeper, "test")
        started, delta, ended = _turn("hello")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.writer)
            relay.event(started)
            for _ in range(steps):
                await trio.sleep(0)  # let the writer get somewhere
            relay.event(delta)
            relay.event(ended)
            try:
                got = os.read(theirs.fileno(), 1 << 20)  # no checkpoint since the end
            except BlockingIOError:
                got = b""
            relay.finish()
        return got

    async def main() -> None:
        for attempt in range(300):
            got = await once(attempt % 4)
            assert got.count(b"turn_end") == 1 and got.index(b"hello") < got.index(b"turn_end"), (attempt, got)

    trio.run(main)
