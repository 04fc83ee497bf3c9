"""The engine contract suite: what every engine must do, as tests an engine
runs against itself.

The turn layer, the renderers and the CLI rely on a handful of behaviours
that no single engine test states: text streams and then exactly one
outcome arrives; turns on one session never overlap; an abort ends in
``aborted`` and the driver is still usable; a deadline or a silent agent
fails the turn *visibly* (``error_kind``), never by hanging; a parked turn
(a host tool call) does not burn its deadline; resuming a conversation
keeps its id; a driver can be inspected; an agent that cannot start is an
error, never an empty reply. This module holds those behaviours once, as
:class:`EngineContract`, so every engine (ours and third parties') is held
to the same ones.

An engine's test suite provides one fixture, ``engine_harness``: an
:class:`EngineHarness` that builds the engine pointed at the engine's own
fake agent for each abstract scenario the suite names. Then::

    # tests/conftest.py
    import pytest
    from agy_host.testing.contract import EngineHarness

    class MyHarness(EngineHarness):
        engine_name = "mine"
        scenarios = {"happy": ..., "hang": ..., "endless": ..., "park": ...,
                     "crash": ..., "spawn-failure": ...}

        def make_engine(self, scenario, **knobs):
            return MyEngine(self.context(agent=...))

    @pytest.fixture
    def engine_harness(tmp_path):
        return MyHarness(tmp_path)

    # tests/test_contract.py
    from agy_host.testing.contract import EngineContract

    class TestMyEngineContract(EngineContract):
        pass

The scenarios (:data:`SCENARIOS`; a harness may leave one out, and its tests
are then skipped with a reason, never passed):

``happy``
    A turn streams its answer in at least one text chunk (better two, a few
    milliseconds apart) and ends normally. A later turn that names the
    conversation continues it, also from a new driver (a new agent process).
``hang``
    A turn produces no output and never ends on its own.
``endless``
    The first turn streams text at least every 0.25 s and never ends on its
    own (only an abort or a timer ends it); later turns answer like ``happy``.
``park``
    A turn streams one chunk, is silent for ``knobs["pause_s"]`` seconds,
    streams another chunk and ends normally.
``crash``
    The first turn streams a chunk, then the agent process dies without
    answering; once the engine starts the agent again it answers like
    ``happy``.
``spawn-failure``
    The agent cannot be started (its command does not exist).

The suite needs pytest-trio (``pip install pytest-trio``); its tests are
marked ``trio`` themselves, so ``trio_mode`` is not required.
"""

from __future__ import annotations

import abc
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import msgspec
import pytest
import trio

from agy_host.contract.events import (
    Activity,
    BridgeCallActivity,
    ErrorKind,
    OutcomeActivity,
    TextActivity,
)
from agy_host.engine.driver import DriverSnapshot, TurnDriver, TurnHandle, TurnRequest

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.permissions import PermissionDecision, PermissionRequest
    from agy_host.engine.base import Engine, EngineContext

#: The abstract scenarios the suite asks a harness for.
SCENARIOS = ("happy", "hang", "endless", "park", "crash", "spawn-failure")

#: Seconds the ``park`` scenario pauses at scale 1 (the suite passes it as ``pause_s``).
PARK_PAUSE_S = 1.0


async def allow_once(request: PermissionRequest) -> PermissionDecision:
    """The permission decider harnesses use by default: allow once when an
    allow option is offered, cancel otherwise (and always for questions)."""
    from agy_host.contract.permissions import PermissionDecision, choose_allow

    option = None if request.is_question else choose_allow(request.options)
    if option is None:
        return PermissionDecision(option_id=None, policy="contract", reason="nothing to allow")
    return PermissionDecision(option_id=option.option_id, policy="contract")


class EngineHarness(abc.ABC):
    """What the contract suite needs from an engine's own test suite.

    Subclass it, set :attr:`engine_name` and :attr:`scenarios`, implement
    :meth:`make_engine`, and return an instance from an ``engine_harness``
    fixture.
    """

    #: ``ENGINE_NAME`` of the engine under test.
    engine_name: ClassVar[str] = ""
    #: Abstract scenario name (see :data:`SCENARIOS`) -> whatever tells the
    #: engine's fake agent to behave that way (a scenario name, a file, a
    #: command). Scenarios left out are skipped, with the reason.
    scenarios: ClassVar[Mapping[str, Any]] = {}
    #: The exact answer of a ``happy`` turn, when the fake answers a fixed text.
    happy_text: ClassVar[str | None] = None
    #: The ``error_kind`` values a ``crash`` turn may end with.
    crash_error_kinds: ClassVar[tuple[ErrorKind, ...]] = ("exited",)
    #: Factor on the suite's timings and bounds, for engines whose agents
    #: start slowly (a JVM, a container).
    time_scale: ClassVar[float] = 1.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)

    @abc.abstractmethod
    def make_engine(self, scenario: str, **knobs: Any) -> Engine:
        """A fresh engine whose agent plays ``scenario``.

        ``knobs`` carry the suite's parameters of a scenario (``pause_s`` for
        ``park``); ignore the ones you do not need.
        """

    # -- helpers for harnesses and the suite ------------------------------------

    def scenario(self, name: str) -> Any:
        """The engine-specific form of ``name``; skips the test when the
        harness does not provide it."""
        if name not in self.scenarios:
            pytest.skip(f"the {self.engine_name or 'engine'} engine's contract kit offers no {name!r} scenario")
        return self.scenarios[name]

    def context(
        self,
        *,
        config: Config | None = None,
        agent: str | None = None,
        env: Mapping[str, str] | None = None,
        decide: Callable[[PermissionRequest], Any] | None = None,
    ) -> EngineContext:
        """An :class:`~agy_host.engine.base.EngineContext` for a test: default
        config, a state dir under :attr:`workdir`, :func:`allow_once` as the
        permission decider, the environment without ``AGY_*`` variables."""
        from agy_host.config import Config
        from agy_host.engine.base import EngineContext

        state = self.workdir / "state"
        state.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AGY_")}
        base.update(env or {})
        return EngineContext(
            config=config if config is not None else Config(),
            state_dir=state,
            decide_permission=decide or allow_once,
            agent=agent,
            env=base,
        )

    def request(self, text: str = "hello", **fields: Any) -> TurnRequest:
        """A turn request on session ``contract`` in :attr:`workdir`;
        ``fields`` override any :class:`~agy_host.engine.driver.TurnRequest` field."""
        from agy_host.contract.prompt import TextBlock

        values: dict[str, Any] = {
            "session": "contract",
            "prompt": [TextBlock(text=text)],
            "cwd": str(self.workdir),
            "timeout_s": 30.0 * self.time_scale,
            "inactivity_s": 15.0 * self.time_scale,
        }
        values.update(fields)
        return TurnRequest(**values)

    def seconds(self, value: float) -> float:
        """``value`` scaled by :attr:`time_scale`."""
        return value * self.time_scale


# ---------------------------------------------------------------------------
# helpers of the suite
# ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def open_driver(engine: Engine) -> AsyncIterator[TurnDriver]:
    """``engine.open_driver()``, checked to yield a :class:`TurnDriver`."""
    async with engine.open_driver() as driver:
        assert isinstance(driver, TurnDriver), f"{type(driver).__name__} does not satisfy TurnDriver"
        yield driver


async def collect(
    handle: TurnHandle, *, seconds: float = 60.0, on: Callable[[Activity], None] | None = None
) -> list[Activity]:
    """Every activity of the turn, in order; fails when the turn does not
    settle within ``seconds`` (an engine must never hang a turn)."""
    out: list[Activity] = []
    with trio.fail_after(seconds):
        async for activity in handle:
            out.append(activity)
            if on is not None:
                on(activity)
    return out


def text_of(activities: list[Activity]) -> str:
    return "".join(a.delta for a in activities if isinstance(a, TextActivity))


def outcome_of(activities: list[Activity]) -> OutcomeActivity:
    """The outcome, checked to be the last activity and the only one."""
    assert activities, "the turn produced no activity at all (not even an outcome)"
    last = activities[-1]
    assert isinstance(last, OutcomeActivity), f"the last activity is not the outcome: {activities!r}"
    outcomes = [a for a in activities if isinstance(a, OutcomeActivity)]
    assert len(outcomes) == 1, f"more than one outcome: {outcomes!r}"
    return last


def assert_failed_visibly(outcome: OutcomeActivity, kind: ErrorKind) -> None:
    assert outcome.status == "error", f"expected an error ({kind}), got {outcome!r}"
    assert outcome.stop_reason == "error", outcome
    assert outcome.error_kind == kind, f"expected error_kind {kind!r}, got {outcome.error_kind!r}: {outcome.error}"
    assert outcome.error.strip(), f"an error outcome must say what happened: {outcome!r}"
    assert not outcome.aborted, outcome


def assert_ok(outcome: OutcomeActivity, activities: list[Activity]) -> None:
    assert outcome.status == "ok", f"expected an ok outcome, got {outcome!r}"
    assert outcome.stop_reason == "stop", outcome
    assert outcome.error_kind is None and not outcome.error, outcome
    assert not outcome.aborted, outcome
    assert outcome.response == text_of(activities), "the outcome's response must be the streamed text"


_F = TypeVar("_F", bound=Callable[..., Any])


def requires(*names: str) -> Callable[[_F], _F]:
    """Mark a contract test as needing these scenarios; it is skipped (with
    the reason) when the harness does not provide one of them."""

    def mark(fn: _F) -> _F:
        fn._contract_scenarios = names  # type: ignore[attr-defined]
        return fn

    return mark


# ---------------------------------------------------------------------------
# the suite
# ---------------------------------------------------------------------------


class EngineContract:
    """The engine conformance tests. Subclass as ``Test<Engine>Contract`` in
    the engine's tests and provide an ``engine_harness`` fixture."""

    @pytest.fixture(autouse=True)
    def _skip_without_scenarios(self, request: pytest.FixtureRequest, engine_harness: EngineHarness) -> None:
        # Synchronous on purpose: a skip raised inside a trio test loses its reason.
        for name in getattr(request.function, "_contract_scenarios", ("happy",)):
            if name not in engine_harness.scenarios:
                pytest.skip(
                    f"the {engine_harness.engine_name or 'engine'} engine's contract kit offers no {name!r} scenario"
                )

    # -- shape ----------------------------------------------------------------

    @pytest.mark.trio
    async def test_engine_and_driver_are_well_formed(self, engine_harness: EngineHarness) -> None:
        engine = engine_harness.make_engine("happy")
        assert engine.ENGINE_NAME, "ENGINE_NAME must name the engine"
        assert engine_harness.engine_name == engine.ENGINE_NAME, "the harness names the engine it builds"
        key = engine.store_key("contract")
        assert isinstance(key, str) and key.startswith("contract"), key
        assert isinstance(engine.agent_label(), str)
        async with open_driver(engine) as driver:
            assert driver.engine_name == engine.ENGINE_NAME
            assert driver.reentry() is None, "no turn is parked before any turn ran"
            driver.kick_idle()  # nothing parked: a no-op, never an error

    # -- streaming --------------------------------------------------------------

    @pytest.mark.trio
    async def test_text_is_streamed_then_one_outcome(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("happy")) as driver:
            handle = await driver.run(h.request())
            acts = await collect(handle, seconds=h.seconds(30))
            assert await handle.next_batch() == [], "nothing may follow the outcome"
        outcome = outcome_of(acts)
        assert any(isinstance(a, TextActivity) for a in acts[:-1]), f"no text was streamed: {acts!r}"
        assert_ok(outcome, acts)
        if h.happy_text is not None:
            assert outcome.response == h.happy_text
        assert outcome.conversation_id, "a finished turn names its agent conversation"
        assert handle.settled.is_set() and handle.closed and handle.outcome is outcome

    @pytest.mark.trio
    async def test_turns_on_one_session_are_serialized(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        order: list[str] = []
        outcomes: dict[str, OutcomeActivity] = {}
        async with open_driver(h.make_engine("happy")) as driver:

            async def one(tag: str) -> None:
                handle = await driver.run(h.request(tag))
                acts = await collect(handle, seconds=h.seconds(30))
                for act in acts:
                    if isinstance(act, (TextActivity, OutcomeActivity)):
                        order.append(f"{tag}:{type(act).__name__}")
                outcomes[tag] = outcome_of(acts)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, "a")
                await trio.sleep(0.01)
                nursery.start_soon(one, "b")
        assert outcomes["a"].status == "ok" and outcomes["b"].status == "ok", outcomes
        assert "b:TextActivity" in order, order
        assert order.index("a:OutcomeActivity") < order.index("b:TextActivity"), (
            f"the second turn streamed before the first settled: {order}"
        )

    # -- abort ------------------------------------------------------------------

    @pytest.mark.trio
    @requires("endless")
    async def test_abort_gives_aborted_and_the_next_turn_works(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("endless")) as driver:
            handle = await driver.run(h.request())

            def abort_on_text(act: Activity) -> None:
                if isinstance(act, TextActivity):
                    handle.abort("contract")

            acts = await collect(handle, seconds=h.seconds(20), on=abort_on_text)
            outcome = outcome_of(acts)
            assert outcome.aborted and outcome.stop_reason == "aborted", outcome
            assert outcome.error_kind is None, f"an abort is not an error: {outcome!r}"
            nxt = await driver.run(h.request(conversation_id=outcome.conversation_id))
            after = await collect(nxt, seconds=h.seconds(30))
        assert_ok(outcome_of(after), after)
        assert text_of(after), "the turn after an abort must answer"

    @pytest.mark.trio
    async def test_abort_before_any_output_settles_aborted(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("happy")) as driver:
            handle = await driver.run(h.request())
            handle.abort("early")
            outcome = outcome_of(await collect(handle, seconds=h.seconds(20)))
        assert outcome.aborted and outcome.stop_reason == "aborted", outcome

    # -- timers -----------------------------------------------------------------

    @pytest.mark.trio
    @requires("endless")
    async def test_overall_deadline_fails_visibly(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("endless")) as driver:
            request = h.request(timeout_s=h.seconds(0.8), inactivity_s=h.seconds(10))
            outcome = outcome_of(await collect(await driver.run(request), seconds=h.seconds(15)))
        assert_failed_visibly(outcome, "timeout")

    @pytest.mark.trio
    @requires("hang")
    async def test_inactivity_fails_visibly(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("hang")) as driver:
            request = h.request(timeout_s=h.seconds(20), inactivity_s=h.seconds(0.5))
            outcome = outcome_of(await collect(await driver.run(request), seconds=h.seconds(15)))
        assert_failed_visibly(outcome, "inactivity")

    # -- parks (host tool calls) ---------------------------------------------------

    @pytest.mark.trio
    @requires("park")
    async def test_without_a_park_the_park_scenario_times_out(self, engine_harness: EngineHarness) -> None:
        """The control for the next test: the pause is longer than the deadline."""
        h = engine_harness
        pause = h.seconds(PARK_PAUSE_S)
        async with open_driver(h.make_engine("park", pause_s=pause)) as driver:
            request = h.request(timeout_s=pause * 0.7, inactivity_s=pause * 5)
            outcome = outcome_of(await collect(await driver.run(request), seconds=h.seconds(15)))
        assert_failed_visibly(outcome, "timeout")

    @pytest.mark.trio
    @requires("park")
    async def test_a_park_suspends_the_deadline_and_reentry_resumes(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        pause = h.seconds(PARK_PAUSE_S)
        async with open_driver(h.make_engine("park", pause_s=pause)) as driver:
            handle = await driver.run(h.request(timeout_s=pause * 0.7, inactivity_s=pause * 5))
            seen: list[Activity] = []
            parked = False
            with trio.fail_after(h.seconds(15)):
                async for act in handle:
                    seen.append(act)
                    if isinstance(act, TextActivity) and not parked:
                        parked = True
                        assert handle.push_external(BridgeCallActivity(call_id="contract-1", name="host_tool"))
                    elif isinstance(act, BridgeCallActivity):
                        assert driver.reentry() is handle, "reentry() must hand back the parked turn's handle"
                        await trio.sleep(pause * 0.9)  # the host tool runs; the deadline must not
                        driver.kick_idle()
                        assert driver.reentry() is None, "kick_idle() resolved the only park"
            outcome = outcome_of(seen)
            assert outcome.status == "ok", f"the parked time counted against the deadline: {outcome!r}"
            assert outcome.response == text_of(seen)
            assert handle.parks == 1
            assert not handle.push_external(BridgeCallActivity(call_id="contract-2", name="host_tool")), (
                "a settled turn cannot be parked"
            )

    # -- conversations --------------------------------------------------------------

    @pytest.mark.trio
    async def test_resume_returns_the_same_conversation_id(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        engine = h.make_engine("happy")
        async with open_driver(engine) as driver:
            first = outcome_of(await collect(await driver.run(h.request("one")), seconds=h.seconds(30)))
            assert first.status == "ok" and first.conversation_id, first
            again = await driver.run(h.request("two", conversation_id=first.conversation_id))
            second = outcome_of(await collect(again, seconds=h.seconds(30)))
        assert second.status == "ok" and second.conversation_id == first.conversation_id, second
        async with open_driver(engine) as driver:  # a new driver: a new agent process
            third = outcome_of(
                await collect(
                    await driver.run(h.request("three", conversation_id=first.conversation_id)),
                    seconds=h.seconds(30),
                )
            )
        assert third.status == "ok" and third.conversation_id == first.conversation_id, third

    # -- inspection ----------------------------------------------------------------

    @pytest.mark.trio
    async def test_snapshot_has_state_stats_and_lifecycle(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("happy")) as driver:
            before = driver.snapshot()
            assert isinstance(before, DriverSnapshot) and before.engine == h.engine_name, before
            assert isinstance(before.state, str) and before.state, before
            outcome = outcome_of(await collect(await driver.run(h.request()), seconds=h.seconds(30)))
            assert outcome.status == "ok", outcome
            after = driver.snapshot()
        assert after.engine == h.engine_name and after.state, after
        assert after.stats and all(isinstance(v, int) for v in after.stats.values()), after.stats
        assert after.lifecycle, "the lifecycle ring records what happened to the agent"
        # doctor stores the last snapshot as JSON: it must encode and decode
        data = msgspec.json.encode(after)
        assert msgspec.json.decode(data, type=DriverSnapshot).engine == h.engine_name

    @pytest.mark.trio
    @requires("endless")
    async def test_aclose_settles_an_open_turn(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("endless")) as driver:
            handle = await driver.run(h.request())
            with trio.fail_after(h.seconds(15)):
                while not any(isinstance(a, TextActivity) for a in await handle.next_batch()):
                    pass
            with trio.fail_after(h.seconds(15)):
                await driver.aclose()
            with trio.fail_after(h.seconds(5)):
                await handle.settled.wait()
        outcome = handle.outcome
        assert outcome is not None, "aclose() must settle the open turn"
        assert outcome.status == "error" or outcome.aborted, f"a turn cut by aclose() is not a success: {outcome!r}"

    # -- failures ------------------------------------------------------------------

    @pytest.mark.trio
    @requires("crash")
    async def test_crash_mid_turn_is_visible_and_the_next_turn_recovers(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("crash")) as driver:
            acts = await collect(await driver.run(h.request()), seconds=h.seconds(20))
            outcome = outcome_of(acts)
            assert outcome.status == "error" and outcome.stop_reason == "error", outcome
            assert outcome.error_kind in h.crash_error_kinds, outcome
            assert outcome.error.strip(), outcome
            assert outcome.response == text_of(acts), "the text streamed before the crash is kept"
            nxt = await driver.run(h.request(conversation_id=outcome.conversation_id))
            after = await collect(nxt, seconds=h.seconds(30))
        assert_ok(outcome_of(after), after)

    @pytest.mark.trio
    @requires("spawn-failure")
    async def test_spawn_failure_is_a_visible_error_never_an_empty_reply(self, engine_harness: EngineHarness) -> None:
        h = engine_harness
        async with open_driver(h.make_engine("spawn-failure")) as driver:
            acts = await collect(await driver.run(h.request()), seconds=h.seconds(20))
        outcome = outcome_of(acts)
        assert_failed_visibly(outcome, "spawn")
        assert not text_of(acts) and not outcome.response, outcome


__all__ = [
    "PARK_PAUSE_S",
    "SCENARIOS",
    "EngineContract",
    "EngineHarness",
    "allow_once",
    "assert_failed_visibly",
    "assert_ok",
    "collect",
    "open_driver",
    "outcome_of",
    "requires",
    "text_of",
]
