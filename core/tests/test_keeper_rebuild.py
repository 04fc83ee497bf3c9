"""A warm turn's answer goes over the keeper's socket once (keeper/rebuild.py)."""

from __future__ import annotations

import pytest
import trio

from agy_host.contract.answer import answer_slices
from agy_host.contract.events import HostEvent, TextDelta, TurnEnded, TurnStarted
from agy_host.keeper import wire
from agy_host.keeper.rebuild import AnswerRebuilder, same_text
from agy_host.keeper.relay import Relay


def test_same_text_compares_in_place() -> None:
    assert same_text("hello world", ["hel", "lo ", "world"])
    assert same_text("", [])
    assert not same_text("hello world", ["hel", "lo ", "worle"])
    assert not same_text("hello world", ["hello", " world", "!"])
    assert same_text("hello", ["he", "llo", ""])


def _relayed(rebuild: bool, events: list[HostEvent]) -> list[HostEvent]:
    """``events`` through a relay and a real socket pair, as the client reads them."""

    async def main() -> list[HostEvent]:
        ours, theirs = trio.socket.socketpair()
        keeper, client = wire.FrameStream(trio.SocketStream(ours)), wire.FrameStream(trio.SocketStream(theirs))
        relay = Relay(keeper, "test", rebuild_answer=rebuild)
        out: list[HostEvent] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.writer)
            for event in events:
                relay.event(event)
            relay.finish()
        await keeper.aclose()
        while (raw := await client.receive_raw()) is not None:
            frame = wire.decode_for_client(raw)
            assert isinstance(frame, wire.Event)
            out.append(frame.event)
        return out

    return trio.run(main)


def _turn(answer: str, streamed: list[str]) -> list[HostEvent]:
    started = TurnStarted(session="s", engine="acp", agent="a")
    ended = TurnEnded(stop_reason="stop", duration_s=1.0, response=answer)
    return [started, *(TextDelta(delta=d) for d in streamed), ended]


def test_the_keeper_leaves_out_an_answer_the_text_events_carried_whole() -> None:
    [*_, end] = _relayed(True, _turn("hello world", ["hello", " world"]))
    assert isinstance(end, TurnEnded) and (end.response, end.response_elided) == ("", True)


@pytest.mark.parametrize(
    ("rebuild", "answer", "streamed"),
    [
        (False, "hello world", ["hello", " world"]),  # a client that does not rebuild
        (True, "the final answer", ["a draft"]),  # an engine whose answer is not what it streamed
    ],
)
def test_the_keeper_sends_any_other_answer_whole(rebuild: bool, answer: str, streamed: list[str]) -> None:
    [*_, end] = _relayed(rebuild, _turn(answer, streamed))
    assert isinstance(end, TurnEnded) and (end.response, end.response_elided) == (answer, False)


def test_each_turn_is_compared_with_its_own_text() -> None:
    events = _turn("one", ["one"]) + _turn("two", ["two"])
    ends = [e for e in _relayed(True, events) if isinstance(e, TurnEnded)]
    assert [(e.response, e.response_elided) for e in ends] == [("", True), ("", True)]


class _Slices:
    AGY_HOST_RESPONSE_OPTIONAL = True

    def __init__(self) -> None:
        self.answers: list[str] = []

    def handle(self, event: HostEvent) -> None:
        if isinstance(event, TurnEnded):
            self.answers.append("".join(answer_slices(event)) + f"|{event.response_elided}")


class _Plain:
    def __init__(self) -> None:
        self.answers: list[str] = []

    def handle(self, event: HostEvent) -> None:
        if isinstance(event, TurnEnded):
            self.answers.append(f"{event.response}|{event.response_elided}")


@pytest.mark.parametrize(("renderer", "seen"), [(_Slices, "hello world|True"), (_Plain, "hello world|False")])
def test_the_client_puts_the_answer_back_for_its_renderer(renderer: type, seen: str) -> None:
    """A renderer that reads answer_slices gets the text that way; any other
    gets it in ``response``, as a cold turn's event."""
    drawn = renderer()
    draw = AnswerRebuilder(drawn.handle)
    for event in _relayed(True, _turn("hello world", ["hello", " world"]) + _turn("two", ["two"])):
        draw(event)
    assert drawn.answers == [seen, seen.replace("hello world", "two")]


def test_an_answer_sent_whole_reaches_the_renderer_as_it_came() -> None:
    drawn = _Plain()
    draw = AnswerRebuilder(drawn.handle)
    for event in _turn("final", ["draft"]):
        draw(event)
    assert drawn.answers == ["final|False"]
