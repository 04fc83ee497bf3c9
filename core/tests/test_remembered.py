"""'Always' answers remembered by the broker, per session and tool."""

from __future__ import annotations

from agy_host.contract.events import PermissionOption
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.service.interactions import InteractionBroker
from agy_host.service.terminal_queue import TerminalQueue

ONCE = PermissionOption(option_id="once", name="Allow", kind="allow_once")
ALWAYS = PermissionOption(option_id="always", name="Always allow", kind="allow_always")
NO = PermissionOption(option_id="no", name="Deny", kind="reject_once")
NEVER = PermissionOption(option_id="never", name="Never", kind="reject_always")
ALL = [ONCE, ALWAYS, NO, NEVER]


def request(session: str = "a", tool: str = "run_command", title: str = "Run: ls", **kw: object) -> PermissionRequest:
    return PermissionRequest(
        session=session, call_id="c", title=title, options=kw.pop("options", ALL), tool_name=tool, **kw
    )  # type: ignore[arg-type]


class Scripted:
    """A policy that answers from a list and counts how often it was asked."""

    name = "scripted"
    asks_person = False

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionRequest] = []

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        self.asked.append(request)
        return PermissionDecision(option_id=self.answers.pop(0), policy=self.name)


def broker(policy: Scripted) -> InteractionBroker:
    return InteractionBroker(rules=list, env={"AGY_HOST_TTY": "none"}, policy=lambda: policy)


async def test_allow_always_is_remembered_for_the_session_and_tool() -> None:
    policy = Scripted("always", "once")
    b = broker(policy)
    assert (await b.decide(request())).option_id == "always"
    again = await b.decide(request(title="Run: make"))
    assert again.option_id == "always" and again.policy == "remembered"
    assert "'Always allow' was chosen for run_command earlier in session 'a'" in again.reason
    assert len(policy.asked) == 1
    # another session, another tool: asked as usual
    assert (await b.decide(request(session="b"))).policy == "scripted"
    assert len(policy.asked) == 2


async def test_allow_once_is_not_remembered() -> None:
    policy = Scripted("once", "no")
    b = broker(policy)
    await b.decide(request())
    assert (await b.decide(request())).option_id == "no"
    assert len(policy.asked) == 2


async def test_reject_always_is_remembered_and_falls_back_to_a_reject_of_the_same_family() -> None:
    policy = Scripted("never")
    b = broker(policy)
    await b.decide(request())
    later = await b.decide(request(options=[ONCE, NO]))  # no reject_always offered this time
    assert later.option_id == "no" and later.policy == "remembered"


async def test_a_remembered_family_not_offered_asks_again() -> None:
    policy = Scripted("always", "no")
    b = broker(policy)
    await b.decide(request())
    assert (await b.decide(request(options=[NO]))).policy == "scripted"


async def test_without_a_tool_name_the_title_must_match_too() -> None:
    policy = Scripted("always", "no")
    b = broker(policy)
    await b.decide(request(tool="", title="git status", tool_kind="execute"))
    assert (await b.decide(request(tool="", title="git status", tool_kind="execute"))).policy == "remembered"
    assert (await b.decide(request(tool="", title="rm -rf /", tool_kind="execute"))).option_id == "no"


async def test_a_name_that_is_only_the_kind_again_is_no_name() -> None:
    """ACP engines fall back to the kind for a tool the agent did not name
    (the Gemini CLI's shell requests): "always" stays with the one command."""
    policy = Scripted("always", "no")
    b = broker(policy)
    await b.decide(request(tool="execute", title="git status", tool_kind="execute"))
    assert (await b.decide(request(tool="execute", title="git status", tool_kind="execute"))).policy == "remembered"
    assert (await b.decide(request(tool="execute", title="rm -rf /", tool_kind="execute"))).option_id == "no"


async def test_questions_are_never_remembered() -> None:
    policy = Scripted("always", "once")
    policy.asks_person = True  # a question reaches only a policy that asks the person
    b = broker(policy)
    await b.decide(request(is_question=True))
    assert (await b.decide(request(is_question=True))).policy == "scripted"
    assert len(b.remembered) == 0


async def test_a_choice_the_agent_did_not_offer_is_cancelled_and_not_remembered() -> None:
    policy = Scripted("made-up", "once")
    b = broker(policy)
    first = await b.decide(request())
    assert first.option_id is None and "did not offer" in first.reason
    assert len(b.remembered) == 0


def test_forget_drops_one_session_or_all() -> None:
    b = broker(Scripted())
    b.remembered.note(request(session="a"), PermissionDecision(option_id="always", policy="ask"))
    b.remembered.note(request(session="b"), PermissionDecision(option_id="always", policy="ask"))
    b.remembered.forget("a")
    assert b.remembered.recall(request(session="a")) is None and b.remembered.recall(request(session="b"))
    b.remembered.forget()
    assert len(b.remembered) == 0


async def test_always_answers_the_requests_still_waiting_for_the_same_tool() -> None:
    """Two requests for one tool arrive at once (an agent's parallel calls);
    the second waits behind the first's prompt. "Always" for the first
    answers the second at once, without a second prompt."""
    import trio
    import trio.testing

    shown: list[str] = []
    release = trio.Event()

    class Person:
        """The terminal's queue, one prompt at a time; the person answers "always"."""

        name = "ask"

        def __init__(self) -> None:
            self.queue = TerminalQueue()

        async def decide(self, request: PermissionRequest) -> PermissionDecision:
            async with self.queue.turn(request.session):
                shown.append(request.title)
                await release.wait()
                return PermissionDecision(option_id="always", policy=self.name)

    got: dict[str, PermissionDecision] = {}

    async def ask(title: str) -> None:
        got[title] = await b.decide(request(title=title))

    person = Person()
    b = InteractionBroker(rules=list, env={"AGY_HOST_TTY": "none"}, policy=lambda: person)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "Run: make")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "Run: make test")
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    assert shown == ["Run: make"], "the waiting request was asked anyway"
    assert got["Run: make"].policy == "ask" and got["Run: make test"].policy == "remembered"
    assert got["Run: make test"].option_id == "always"


async def test_a_question_never_reaches_a_policy_that_does_not_ask_the_person() -> None:
    """``auto``, ``deny`` and a program's policy never pick an answer for a
    person: with no rule, no program and no terminal, the question is cancelled."""
    policy = Scripted("always")
    decision = await broker(policy).decide(request(is_question=True))
    assert decision.option_id is None and "AGY_HOST_TTY=none" in decision.reason, decision
    assert policy.asked == []
