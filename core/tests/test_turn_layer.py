"""The turn layer against the in-process echo engine: Activities become
HostEvents, bindings are stored (also for failed and aborted turns), parks
round-trip through a host tool, and outcomes become exit codes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from engines.echo_engine import EchoDriver, EchoPlugin

from agy_host import hookimpl
from agy_host.builtins.transcripts import transcript_path
from agy_host.config import Config, TranscriptsConfig
from agy_host.contract.events import (
    Notice,
    PermissionAnswered,
    PermissionOption,
    TextDelta,
    ThoughtDelta,
    ToolCard,
    ToolUseRequested,
    TurnEnded,
    TurnStarted,
    UsageReport,
)
from agy_host.contract.permissions import PermissionDecision, PermissionRequest
from agy_host.contract.prompt import ResourceBlock, TextBlock
from agy_host.contract.prompt_parts import PromptContext, PromptPart
from agy_host.contract.run_context import RunContext, TurnContext
from agy_host.contract.tools import HostTool, ToolResult
from agy_host.runtime.host import Host
from agy_host.runtime.turn_layer import (
    NO_TURN_RUNNING,
    PROMPT_SEPARATOR,
    TurnLayer,
    TurnResult,
)


class Harness:
    def __init__(self, host: Host, layer: TurnLayer, driver: EchoDriver, events: list[Any]) -> None:
        self.host = host
        self.layer = layer
        self.driver = driver
        self.events = events

    async def run(self, text: str, session: str = "s", **kw: Any) -> TurnResult:
        return await self.layer.run_turn(session, [TextBlock(text=text)], cwd="/work", **kw)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def text(self) -> str:
        return "".join(e.delta for e in self.of(TextDelta))


@pytest.fixture
def make_host(agy_host_home: Any, echo_plugin: EchoPlugin) -> Callable[..., Host]:
    def make(*, plugins: list[object] | None = None, warnings: list[str] | None = None, **kw: Any) -> Host:
        return Host(
            engine="echo",
            extra_plugins=[echo_plugin, *(plugins or [])],
            warn=(warnings if warnings is not None else []).append,
            **kw,
        )

    return make


@contextlib.asynccontextmanager
async def harness(
    host: Host, sink: Callable[[Any], None] | None = None, config: Config | None = None
) -> AsyncIterator[Harness]:
    engine = host.load_engine()
    events: list[Any] = []

    def record(event: Any) -> None:
        events.append(event)
        if sink is not None:
            sink(event)

    async with engine.open_driver() as driver:
        layer = TurnLayer(
            engine=engine,
            driver=driver,
            store=host.store,
            plugins=host.plugins,
            config=config or host.config,
            sink=record,
            warn=host.warn,
            env=host.env,
        )
        assert isinstance(driver, EchoDriver)
        yield Harness(host, layer, driver, events)


async def test_text_streams_and_the_binding_is_stored(make_host: Callable[..., Host]) -> None:
    host = make_host()
    async with harness(host) as h:
        result = await h.run("hi there")
    assert h.text() == "echo: hi there"
    assert isinstance(h.events[0], TurnStarted)
    assert (h.events[0].session, h.events[0].engine, h.events[0].conversation_id) == ("s", "echo", None)
    end = h.events[-1]
    assert isinstance(end, TurnEnded)
    assert (end.stop_reason, end.response, end.usage, end.agent_stop_reason) == (
        "stop",
        "echo: hi there",
        None,
        "end_turn",
    )
    assert (result.exit_code, result.stop_reason) == (0, "stop")
    binding = host.store.get("s@echo")
    assert binding is not None
    assert binding.conversation_id == result.conversation_id == end.conversation_id
    assert (binding.engine, binding.agent, binding.cwd) == ("echo", "echo", "/work")
    assert binding.updated_at.endswith("Z")


async def test_built_in_plugins_follow_the_layers_own_config(make_host: Callable[..., Host]) -> None:
    # A turn layer driven from Python with its own config: the built-ins
    # (transcripts here) read that config during its turns, not the file's.
    host = make_host()
    assert host.config.transcripts.enabled
    quiet = msgspec.structs.replace(host.config, transcripts=TranscriptsConfig(enabled=False))
    async with harness(host, config=quiet) as h:
        assert (await h.run("hi", session="quiet")).exit_code == 0
    async with harness(host) as h:
        assert (await h.run("hi", session="kept")).exit_code == 0
    assert not transcript_path("quiet").exists()
    assert transcript_path("kept").exists()


async def test_a_bound_session_resumes_its_conversation(
    make_host: Callable[..., Host], echo_plugin: EchoPlugin
) -> None:
    async with harness(make_host()) as h:
        first = await h.run("one")
        await h.run("two")
        await h.run("other", session="fresh")
    # A new Host (a later process) reads the binding from disk.
    async with harness(make_host()) as h2:
        again = await h2.run("three")
    ids = [r.conversation_id for r in echo_plugin.recorder]
    assert ids[0] is None
    assert ids[1] == first.conversation_id
    assert ids[2] is None  # another session starts its own conversation
    assert ids[3] == first.conversation_id == again.conversation_id
    assert h2.of(TurnStarted)[0].conversation_id == first.conversation_id


async def test_a_tool_sent_twice_is_one_card_with_its_duration(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock
) -> None:
    async with harness(make_host()) as h:
        await h.run("!tool")
    cards = h.of(ToolCard)
    assert [c.status for c in cards] == ["started", "done"]
    assert {c.call_id for c in cards} == {"t1"}
    done = cards[-1]
    assert (done.title, done.kind, done.output) == ("Read a.txt", "read", "contents")
    assert done.duration_s == pytest.approx(0.5)


async def test_failed_tool_card(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        await h.run("!toolfail")
    cards = h.of(ToolCard)
    assert [(c.status, c.error) for c in cards] == [("started", ""), ("failed", "disk full")]


async def test_thoughts_notices_and_usage(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        result = await h.run("!thought !notice !usage")
    assert [e.delta for e in h.of(ThoughtDelta)] == ["pondering"]
    assert [(n.level, n.message) for n in h.of(Notice)] == [("warning", "echo notice")]
    [usage] = h.of(UsageReport)
    assert usage.turn.output_tokens == 5
    assert h.events[-1].usage == usage.turn
    assert result.usage == usage.turn


async def test_a_silent_turn_still_shows_its_response(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        result = await h.run("!silent")
    assert [type(e) for e in h.events[-2:]] == [TextDelta, TurnEnded]
    assert h.text() == "silent answer" == result.response


async def test_a_failed_turn_keeps_its_binding(make_host: Callable[..., Host]) -> None:
    host = make_host()
    async with harness(host) as h:
        result = await h.run("!fail")
    assert (result.exit_code, result.error, result.error_kind) == (1, "echo: asked to fail", "agent")
    assert h.events[-1].error == "echo: asked to fail"
    assert host.store.get("s@echo") is not None


@pytest.mark.parametrize(
    ("kw", "kind"),
    [({"timeout_s": 30.0, "inactivity_s": 0.0}, "timeout"), ({"timeout_s": 0.0, "inactivity_s": 7.0}, "inactivity")],
)
async def test_timeouts_fail_the_turn_with_exit_3(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock, kw: dict[str, float], kind: str
) -> None:
    async with harness(make_host()) as h:
        start = trio.current_time()
        result = await h.run("!hang", **kw)
    assert (result.exit_code, result.error_kind) == (3, kind)
    assert trio.current_time() - start == pytest.approx(30.0 if kind == "timeout" else 7.0)


async def test_config_turn_timeouts_reach_the_engine(
    make_host: Callable[..., Host], agy_host_home: Any, echo_plugin: EchoPlugin
) -> None:
    agy_host_home.write_config({"turn": {"timeout_minutes": 2, "inactivity_minutes": 0.5}, "model": "m1"})
    async with harness(make_host()) as h:
        await h.run("hi")
        await h.run("hi", timeout_s=5.0, model="m2")
    first, second = echo_plugin.recorder
    assert (first.timeout_s, first.inactivity_s, first.model) == (120.0, 30.0, "m1")
    assert (second.timeout_s, second.model) == (5.0, "m2")


async def test_abort_gives_aborted_exit_130_and_keeps_the_binding(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock
) -> None:
    host = make_host()
    async with harness(host) as h:
        results: list[TurnResult] = []

        async def turn() -> None:
            results.append(await h.run("!hang"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            await trio.sleep(42)
            h.layer.abort("interrupted")
    [result] = results
    assert (result.stop_reason, result.exit_code) == ("aborted", 130)
    assert h.events[-1].stop_reason == "aborted"
    assert host.store.get("s@echo") is not None


async def test_abort_before_the_turn_started_applies_when_it_starts(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        h.layer.abort("interrupted")
        result = await h.run("!hang")
    assert result.stop_reason == "aborted"


class EchoTool:
    @staticmethod
    async def call(args: dict[str, Any]) -> ToolResult:
        assert args == {"x": 1}
        await trio.sleep(100)  # a slow human answering
        return ToolResult(text="pong")


TOOLS = {"host_echo": HostTool(name="host_echo", description="", input_schema={}, call=EchoTool.call)}


async def test_a_bridge_call_parks_and_the_result_resumes_the_same_turn(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock
) -> None:
    async with harness(make_host()) as h:
        parked = await h.run("!bridge", timeout_s=10.0, inactivity_s=5.0)
        assert (parked.stop_reason, parked.exit_code) == ("tool_use", 0)
        assert parked.tool_use == ToolUseRequested(call_id="b1", name="host_echo", args={"x": 1})
        assert h.layer.parked
        assert not h.of(TurnEnded)
        handle = h.layer.handle
        result = await h.layer.resolve_tool_use(TOOLS, [h.driver])
    # 100 s in the tool did not count against the 10 s deadline or 5 s inactivity.
    assert (result.stop_reason, result.exit_code) == ("stop", 0)
    assert "tool said: pong" in h.text()
    assert len(h.of(TurnEnded)) == 1
    assert len(h.of(TurnStarted)) == 1
    assert handle is not None and handle.parks == 1
    assert not h.layer.parked


async def test_a_tool_result_with_no_turn_running_is_an_error(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        result = await h.layer.continue_turn()
        assert (result.stop_reason, result.error, result.exit_code) == ("error", NO_TURN_RUNNING, 1)
        await h.run("hi")
        again = await h.layer.continue_turn()
    assert again.error == NO_TURN_RUNNING


async def test_a_parked_turn_the_engine_lost_is_an_error(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        parked = await h.run("!lose-turn")
        assert parked.stop_reason == "tool_use"
        result = await h.layer.continue_turn()
        assert result.error == NO_TURN_RUNNING
        h.driver.kick_idle()  # let the echo turn finish


async def test_an_undeliverable_tool_result_aborts_the_turn(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        await h.run("!bridge")
        result = await h.layer.resolve_tool_use({}, [])
    assert result.stop_reason == "aborted"
    assert any("could not be delivered" in n.message for n in h.of(Notice))


async def test_a_second_turn_while_parked_is_refused(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock
) -> None:
    from agy_host.runtime.turn_layer import TurnLayerError

    async with harness(make_host()) as h:
        await h.run("!bridge")
        with pytest.raises(TurnLayerError):
            await h.run("again")
        await h.layer.resolve_tool_use(TOOLS, [h.driver])


@pytest.mark.parametrize(
    ("prompt", "policy", "selected", "code"),
    [
        ("!perm", "auto", "yes", 0),
        ("!perm", None, "no", 5),  # the default: nobody to ask here, so it fails closed
        ("!perm", "deny", "no", 5),
        ("!question", "auto", None, 5),
    ],
)
async def test_permission_requests_and_exit_5(
    make_host: Callable[..., Host], prompt: str, policy: str | None, selected: str | None, code: int
) -> None:
    async with harness(make_host(permissions=policy)) as h:
        result = await h.run(prompt)
    [answer] = h.of(PermissionAnswered)
    assert answer.selected == selected
    # a question is never the policy's to answer: the broker asked (nobody was there)
    assert answer.policy == ("host" if prompt == "!question" else policy or "ask")
    assert (result.permission_requests, result.exit_code) == (1, code)
    assert ("To allow: --permissions auto" in result.error) == (policy is None), result.error


class Boom:
    @hookimpl
    def agy_host_render_event(self, event: Any) -> None:
        raise RuntimeError("render hook exploded")


async def test_a_failing_render_hook_is_reported_once_and_the_turn_goes_on(make_host: Callable[..., Host]) -> None:
    warnings: list[str] = []
    host = make_host(plugins=[Boom()], warnings=warnings)
    async with harness(host) as h:
        result = await h.run("hello")
    assert result.exit_code == 0
    assert h.text() == "echo: hello"
    assert len([w for w in warnings if "render hook exploded" in w]) == 1


async def test_a_failing_renderer_is_dropped_and_the_binding_still_stored(make_host: Callable[..., Host]) -> None:
    warnings: list[str] = []
    host = make_host(warnings=warnings)

    def broken(event: Any) -> None:
        if isinstance(event, TextDelta):
            raise BrokenPipeError("stdout closed")

    async with harness(host, sink=broken) as h:
        result = await h.run("hello")
    assert result.exit_code == 0
    assert len([w for w in warnings if "renderer failed" in w]) == 1
    assert host.store.get("s@echo") is not None


class PartsPlugin:
    @hookimpl
    def agy_host_prompt_parts(self, turn: PromptContext) -> list[PromptPart]:
        return [
            PromptPart(text="SYSTEM", where="system"),
            PromptPart(text="DIGEST", where="context"),
            PromptPart(text="BEFORE", where="before"),
            PromptPart(text="AFTER", where="after"),
        ]


@pytest.mark.parametrize("resources", [False, True])
async def test_prompt_parts_reach_the_engine(
    make_host: Callable[..., Host], agy_host_home: Any, echo_plugin: EchoPlugin, resources: bool
) -> None:
    agy_host_home.write_config({"echo": {"resources": resources}})
    async with harness(make_host(plugins=[PartsPlugin()])) as h:
        await h.run("USER")
        await h.run("USER2")
    first, second = (r.prompt for r in echo_plugin.recorder)
    texts = [b.text for b in first if isinstance(b, TextBlock)]
    if resources:
        assert [type(b) for b in first] == [ResourceBlock, TextBlock]
        assert first[0].text == "DIGEST"  # type: ignore[union-attr]
        assert first[0].uri.startswith("urn:agy-host:context/")  # type: ignore[union-attr]
        assert texts == [PROMPT_SEPARATOR.join(["SYSTEM", "BEFORE\n\nUSER\n\nAFTER"])]
    else:
        assert texts == [PROMPT_SEPARATOR.join(["SYSTEM", "DIGEST", "BEFORE\n\nUSER\n\nAFTER"])]
    # The system part is sent once per agent conversation.
    assert "SYSTEM" not in "".join(b.text for b in second if isinstance(b, TextBlock))


async def test_plan_mode_is_refused_by_an_engine_without_it(
    make_host: Callable[..., Host], echo_plugin: EchoPlugin
) -> None:
    async with harness(make_host()) as h:
        result = await h.run("hi", mode="plan")
    assert (result.exit_code, result.error_kind) == (1, "usage")
    assert "no plan mode" in result.error
    assert echo_plugin.recorder == []


async def test_resuming_with_another_agent_warns(make_host: Callable[..., Host]) -> None:
    async with harness(make_host()) as h:
        await h.run("hi")
    async with harness(make_host(agent="other-agent")) as h2:
        await h2.run("hi")
    assert any("was bound to agent 'echo'" in n.message for n in h2.of(Notice))


# -- the permission decider the host hands to engines ---------------------------------------

REQ = PermissionRequest(
    session="s",
    call_id="p1",
    title="t",
    options=[PermissionOption(option_id="ok", name="Allow", kind="allow_once")],
)


class Slow:
    name = "slow"

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        await trio.sleep_forever()
        raise AssertionError


class Broken:
    name = "broken"

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        raise ValueError("policy bug")


class Liar:
    name = "liar"

    async def decide(self, request: PermissionRequest) -> PermissionDecision:
        return PermissionDecision(option_id="made-up", policy=self.name)


class Weird:
    name = "weird"

    async def decide(self, request: PermissionRequest) -> Any:
        return "allow"


class Policies:
    @hookimpl
    def agy_host_register_permission_policies(self, register: Callable[[Any], None]) -> None:
        for policy in (Slow(), Broken(), Liar(), Weird()):
            register(policy)


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        ("slow", "no answer within 5s"),
        ("broken", "policy bug"),
        ("liar", "did not offer"),
        ("weird", "returned str"),
    ],
)
async def test_the_decider_always_answers(
    make_host: Callable[..., Host],
    agy_host_home: Any,
    autojump_clock: trio.testing.MockClock,
    policy: str,
    reason: str,
) -> None:
    agy_host_home.write_config({"turn": {"permission_timeout_seconds": 5}})
    host = make_host(plugins=[Policies()], permissions=policy)
    decision = await host.decide_permission(REQ)
    assert decision.option_id is None
    assert decision.policy == policy
    assert reason in decision.reason


async def test_unknown_policy_warns_and_uses_the_default(make_host: Callable[..., Host]) -> None:
    warnings: list[str] = []
    host = make_host(permissions="nonesuch", warnings=warnings)
    decision = await host.decide_permission(REQ)  # the default, with nobody to ask: never allowed
    assert (decision.option_id, decision.policy) == (None, "ask") and "nobody could be asked" in decision.reason
    assert any("unknown permission policy 'nonesuch'" in w and "using the default, 'ask'" in w for w in warnings)


def test_a_permission_bound_of_zero_is_narrowed(make_host: Callable[..., Host], agy_host_home: Any) -> None:
    agy_host_home.write_config({"turn": {"permission_timeout_seconds": 0}})
    warnings: list[str] = []
    host = make_host(warnings=warnings)
    assert host.config.turn.permission_timeout_seconds == 300
    assert any("permission_timeout_seconds" in w for w in warnings)


class StalledService:
    name = "stalled"

    async def run(self, *, task_status: Any) -> None:
        await trio.sleep_forever()


class StalledPlugin:
    @hookimpl
    def agy_host_services(self, config: Any) -> list[Any]:
        return [StalledService()]


async def test_a_service_that_never_gets_ready_is_skipped(
    make_host: Callable[..., Host], autojump_clock: trio.testing.MockClock
) -> None:
    from agy_host.runtime.host import SERVICE_START_TIMEOUT_S

    warnings: list[str] = []
    host = make_host(plugins=[StalledPlugin()], warnings=warnings)
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        assert await host.start_services(nursery) == []
        assert trio.current_time() - start == pytest.approx(SERVICE_START_TIMEOUT_S)
        nursery.cancel_scope.cancel()
    assert any("'stalled' did not become ready" in w for w in warnings)


class StartWatcher:
    """Records the new hooks: the host's configure call and each turn start."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @hookimpl
    def agy_host_configure(self, run: RunContext) -> None:
        self.calls.append(("configure", run))

    @hookimpl
    def agy_host_turn_started(self, turn: TurnContext) -> None:
        self.calls.append(("turn_started", turn))

    @hookimpl
    def agy_host_prompt_parts(self, turn: PromptContext) -> None:
        self.calls.append(("prompt_parts", turn))


async def test_turn_started_comes_first_with_the_hosts_config_and_env(make_host: Callable[..., Host]) -> None:
    watcher = StartWatcher()
    host = make_host(plugins=[watcher])
    async with harness(host) as h:
        await h.run("hello")
    kinds = [kind for kind, _ in watcher.calls]
    assert kinds == ["configure", "turn_started", "prompt_parts"]
    run, turn, parts = (value for _, value in watcher.calls)
    assert run.config is host.config and run.env is host.env and run.state_dir == host.state_dir
    assert (turn.session, turn.engine, turn.user_text, turn.new_conversation) == ("s", "echo", "hello", True)
    assert turn.config is host.config and turn.diffs_wanted is False
    assert parts.config is host.config


def test_configure_is_historic_for_plugins_registered_later(make_host: Callable[..., Host]) -> None:
    host = make_host()
    late = StartWatcher()
    host.plugins.register(late, name="late")
    [(kind, run)] = late.calls
    assert kind == "configure" and run.config is host.config


async def test_transcripts_follow_the_env_the_host_was_given(make_host: Callable[..., Host], tmp_path: Path) -> None:
    import os

    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "elsewhere")}
    host = make_host(env=env)
    async with harness(host) as h:
        await h.run("hi", session="given-env")
    assert transcript_path("given-env", env).exists()
    assert not transcript_path("given-env").exists(), "written under the process's own state dir"
