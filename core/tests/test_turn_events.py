"""Activities to tool cards (``runtime/turn_events``): a card follows its
call's title, as sent with a new start or with the call's end."""

from __future__ import annotations

from agy_host.contract.events import (
    HostEvent,
    ToolCard,
    ToolDoneActivity,
    ToolErrorActivity,
    ToolStartActivity,
)
from agy_host.runtime.turn_events import TurnState, map_activity


def cards(*activities: ToolStartActivity | ToolDoneActivity | ToolErrorActivity) -> list[ToolCard]:
    turn = TurnState(session="s", key="s", cwd="/w", binding=None, started_at=0.0)
    out: list[HostEvent] = []
    for i, activity in enumerate(activities):
        map_activity(turn, activity, out.append, now=float(i))
    assert all(isinstance(e, ToolCard) for e in out)
    return [e for e in out if isinstance(e, ToolCard)]


def test_a_start_with_a_new_title_updates_the_card_in_place() -> None:
    shown = cards(
        ToolStartActivity(call_id="e", name="edit", kind="edit", title="Preparing file…"),
        ToolStartActivity(call_id="e", name="edit", kind="edit", title="Edit src/app.ts"),
        ToolDoneActivity(call_id="e", name="edit", kind="edit"),
    )
    assert [(c.status, c.title) for c in shown] == [
        ("started", "Preparing file…"),
        ("started", "Edit src/app.ts"),
        ("done", "Edit src/app.ts"),
    ]
    assert shown[-1].duration_s == 2.0, "the card keeps its first start's clock"


def test_the_end_carries_the_latest_title() -> None:
    shown = cards(
        ToolStartActivity(call_id="a", name="other", title="Preparing file…"),
        ToolDoneActivity(call_id="a", name="other", title="Write notes.md"),
        ToolErrorActivity(call_id="b", name="execute", message="boom", title="make build"),
        ToolErrorActivity(call_id="c", name="execute", message="boom"),
    )
    assert [(c.call_id, c.status, c.title) for c in shown] == [
        ("a", "started", "Preparing file…"),
        ("a", "done", "Write notes.md"),
        ("b", "failed", "make build"),
        ("c", "failed", ""),
    ]
