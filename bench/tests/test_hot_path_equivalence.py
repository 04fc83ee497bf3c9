"""The batched hot path (one call per pipe read) says exactly what the
per-line path says: same text, same order, same fallbacks.

These guard the fast paths the benchmarks exposed (``CumulativeGuard.feed_many``,
``UpdateMapper.map_many``, ``FastPath.batch_handler``); they assert on
content, never on time.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from agy_host.contract.events import TextActivity, ThoughtActivity
from agy_host.engine.textguard import CumulativeGuard
from agy_host_acp import schema as s
from agy_host_acp.events import UpdateMapper
from agy_host_acp.jsonrpc import FastPath, JsonRpcConnection

chunks = st.lists(st.text(alphabet="ab c", max_size=50), max_size=40)


@given(st.lists(chunks, max_size=6))
def test_feed_many_equals_feed_one_by_one(batches: list[list[str]]) -> None:
    one, many = CumulativeGuard(), CumulativeGuard()
    for batch in batches:
        expected = "".join(one.feed(c) for c in batch)
        assert many.feed_many(batch) == expected
        assert many.text == one.text
        assert many.cumulative == one.cumulative


def test_feed_many_handles_a_cumulative_resend_in_a_batch() -> None:
    guard = CumulativeGuard()
    first = "x" * 40
    assert guard.feed_many([first]) == first
    assert guard.feed_many([first + "yy", first + "yyzz"]) == "yyzz"
    assert guard.cumulative


def _update(obj: dict[str, Any]) -> s.Update:
    return s.decode_session_update(json.dumps({"sessionId": "x", "update": obj}).encode())[1]


def _msg(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def _thought(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}


def _merged(activities: list[Any]) -> list[tuple[str, str]]:
    """Consecutive text (and thought) deltas joined, as the turn handle does."""
    out: list[tuple[str, str]] = []
    for a in activities:
        kind = type(a).__name__
        if isinstance(a, (TextActivity, ThoughtActivity)) and out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + a.delta)
        else:
            out.append((kind, getattr(a, "delta", getattr(a, "call_id", ""))))
    return out


@pytest.mark.parametrize(
    "updates",
    [
        [_msg("a"), _msg("b"), _msg("")],
        [_msg("a"), _thought("t1"), _thought("t2"), _msg("b"), {"sessionUpdate": "tool_call", "toolCallId": "c1"}],
        [{"sessionUpdate": "tool_call", "toolCallId": "c1"}, _msg("x" * 40), _msg("x" * 40 + "y")],
        [{"sessionUpdate": "who_knows"}, _msg("z")],
    ],
)
def test_map_many_says_what_map_says(updates: list[dict[str, Any]]) -> None:
    decoded = [_update(u) for u in updates]
    one, many = UpdateMapper(), UpdateMapper()
    singles = [a for a in (one.map(u) for u in decoded) if a is not None]
    assert _merged(many.map_many(decoded)) == _merged(singles)
    assert many.response == one.response


class _Receive(trio.abc.ReceiveStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        return self.pieces.pop(0) if self.pieces else b""

    async def aclose(self) -> None:
        return None


class _Send(trio.abc.SendStream):
    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        return None

    async def wait_send_all_might_not_block(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def _line(obj: dict[str, Any]) -> bytes:
    return msgspec.json.encode(obj) + b"\n"


def _note(sid: str, text: str) -> bytes:
    return _line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": _msg(text)}})


async def _read_all(pieces: list[bytes], *, batched: bool) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def fast_one(m: s.UpdateNotification) -> None:
        seen.append(("update", (m.params.session_id, m.params.update.content.text)))  # type: ignore[union-attr]

    def fast_many(ms: list[s.UpdateNotification]) -> None:
        for m in ms:
            fast_one(m)

    async def no_request(method: str, params: msgspec.Raw) -> Any:
        return None

    conn = JsonRpcConnection(
        _Send(),
        _Receive(pieces),
        on_notification=lambda method, params: seen.append(("notification", method)),
        on_request=no_request,
        on_protocol_error=lambda message, line: seen.append(("error", line)),
        fast_path=FastPath(
            marker=s.UPDATE_MARKER,
            decoder=s.update_line_decoder,
            handler=fast_one,
            batch_handler=fast_many if batched else None,
        ),
    )
    await conn._read_loop()
    seen.append(("received", conn.received))
    return seen


async def test_batched_read_keeps_order_and_fallbacks() -> None:
    stream = (
        _note("s1", "a")
        + _note("s1", "b")
        + b"not json at all\n\n"
        + _line(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "s1", "update": {"sessionUpdate": "new_kind"}},
            }
        )
        + _note("s2", "c")
        + _line({"jsonrpc": "2.0", "method": "other/note", "params": {}})
        + _note("s1", "d")
    )
    pieces = [stream[i : i + 37] for i in range(0, len(stream), 37)] + [_note("s1", "e") * 3]
    assert await _read_all(pieces, batched=True) == await _read_all(pieces, batched=False)
