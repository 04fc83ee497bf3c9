"""Discovery: pluggy plugins from the ``agy_host`` entry point group (allow and
block lists, load errors reported, never a crash), engines selected by name
from their entry points (an unselected engine is never imported), and the
Host's engine precedence."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engines.distributions import engine_module, make_dist
from processes import python_says

from agy_host import hookimpl
from agy_host.contract.events import TextDelta
from agy_host.contract.prompt_parts import PromptContext, PromptPart
from agy_host.engine.base import EngineError, load_engine_class
from agy_host.plugins import BUILTIN_PLUGINS, Plugins
from agy_host.runtime.host import Host

GOOD = """
from agy_host import hookimpl

@hookimpl
def agy_host_diagnostics(report):
    report.section("good plugin").add("ok", "yes")
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agy_host_home: Any) -> Path:
    """A directory on sys.path for throw-away distributions."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in list(sys.modules):
        if name.startswith(("agyt_", "engt_")):
            del sys.modules[name]


def _names(plugins: Plugins) -> set[str]:
    return {info.name for info in plugins.info()}


def test_builtins_are_registered_as_plugins() -> None:
    plugins = Plugins({}, load_entry_points=False)
    infos = {i.name: i for i in plugins.info()}
    for name in BUILTIN_PLUGINS:
        assert infos[name].builtin
        assert infos[name].distribution == "agy-host"
    assert {"text", "json", "quiet"} <= set(plugins.renderers())
    assert {"auto", "deny"} <= set(plugins.permission_policies())
    assert plugins.errors == []


def test_entry_point_plugins_load_and_broken_ones_are_reported(site: Path) -> None:
    make_dist(site, "agyt-good", entry_points={"agy_host": {"agyt_good": "agyt_good"}}, modules={"agyt_good": GOOD})
    make_dist(site, "agyt-broken", entry_points={"agy_host": {"agyt_broken": "agyt_missing_module"}})
    make_dist(
        site,
        "agyt-raises",
        entry_points={"agy_host": {"agyt_raises": "agyt_raises"}},
        modules={"agyt_raises": "raise RuntimeError('plugin exploded on import')\n"},
    )
    plugins = Plugins({})
    infos = {i.name: i for i in plugins.info()}
    assert infos["agyt_good"].distribution == "agyt-good"
    assert infos["agyt_good"].version == "1.0"
    assert infos["agyt_good"].hooks == ["agy_host_diagnostics"]
    errors = {e.name: e for e in plugins.errors}
    assert "ModuleNotFoundError" in errors["agyt_broken"].error
    assert errors["agyt_broken"].distribution == "agyt-broken"
    assert "plugin exploded on import" in errors["agyt_raises"].error
    assert "agyt_broken" not in infos


def test_allow_and_block_lists(site: Path) -> None:
    for n in ("one", "two", "three"):
        make_dist(site, f"agyt-{n}", entry_points={"agy_host": {f"agyt_{n}": f"agyt_{n}"}}, modules={f"agyt_{n}": GOOD})
    allowed = Plugins({"AGY_HOST_LOAD_PLUGINS": "agyt_one, agyt-two"})
    assert {"agyt_one", "agyt_two"} <= _names(allowed)
    assert "agyt_three" not in _names(allowed)
    assert "agyt_three" in allowed.disabled
    blocked = Plugins({"AGY_HOST_DISABLE_PLUGINS": "agyt_two,agyt-three"})
    assert "agyt_one" in _names(blocked)
    assert not {"agyt_two", "agyt_three"} & _names(blocked)
    assert {"agyt_two", "agyt_three"} <= set(blocked.disabled)


def test_duplicate_plugin_name_is_reported(site: Path) -> None:
    make_dist(site, "agyt-first", entry_points={"agy_host": {"agyt_dup": "agyt_dup_a"}}, modules={"agyt_dup_a": GOOD})
    make_dist(site, "agyt-second", entry_points={"agy_host": {"agyt_dup": "agyt_dup_b"}}, modules={"agyt_dup_b": GOOD})
    plugins = Plugins({})
    assert any(e.name == "agyt_dup" and "duplicate" in e.error for e in plugins.errors)


class Typos:
    @hookimpl
    def agy_host_diagnostic(self, report: Any) -> None: ...

    @hookimpl
    def agy_host_render_evnt(self, event: Any) -> None: ...


def test_check_reports_every_unknown_hook_once() -> None:
    plugins = Plugins({}, load_entry_points=False)
    plugins.register(Typos(), name="typos")
    plugins.check()
    plugins.check()
    unknown = sorted(e.error for e in plugins.errors if e.name == "typos")
    assert len(unknown) == 2
    assert "agy_host_diagnostic" in unknown[0]
    assert "agy_host_render_evnt" in unknown[1]


class BadSignature:
    @hookimpl
    def agy_host_render_event(self, event: Any, nonsense: Any) -> None: ...


def test_bad_hook_signature_is_reported_not_raised() -> None:
    plugins = Plugins({}, load_entry_points=False)
    plugins.register(BadSignature(), name="bad-sig")
    assert "bad-sig" not in _names(plugins)
    assert any(e.name == "bad-sig" and "nonsense" in e.error for e in plugins.errors)


class Parts:
    def __init__(self, text: str, fail: bool = False) -> None:
        self.text = text
        self.fail = fail
        self.calls = 0

    @hookimpl
    def agy_host_prompt_parts(self, turn: PromptContext) -> list[PromptPart]:
        self.calls += 1
        if self.fail:
            raise ValueError("parts exploded")
        return [PromptPart(text=self.text, order=len(self.text))]

    @hookimpl
    def agy_host_render_event(self, event: Any) -> None:
        self.calls += 1
        if self.fail:
            raise ValueError("render exploded")


CTX = PromptContext(session="s", engine="e", cwd="/", new_conversation=True, user_text="hi")


def test_one_failing_implementation_does_not_stop_the_others() -> None:
    plugins = Plugins({}, load_entry_points=False)
    plugins.register(Parts("long text"), name="a")
    plugins.register(Parts("x", fail=True), name="b")
    plugins.register(Parts("mid"), name="c")
    failures: list[str] = []
    parts = plugins.prompt_parts(CTX, on_error=lambda name, exc: failures.append(name))
    assert [p.text for p in parts] == ["mid", "long text"]  # ordered by ``order``
    plugins.prompt_parts(CTX)
    assert failures == ["b"]
    assert [e.name for e in plugins.errors] == ["b"]  # recorded once


def test_render_event_skips_a_plugin_after_it_failed() -> None:
    plugins = Plugins({}, load_entry_points=False)
    bad, good = Parts("x", fail=True), Parts("y")
    plugins.register(bad, name="bad")
    plugins.register(good, name="good")
    skip: set[str] = set()
    for _ in range(3):
        plugins.render_event(TextDelta(delta="d"), skip=skip)
    assert bad.calls == 1
    assert good.calls == 3
    assert skip == {"bad"}


class Policy:
    name = "auto"

    async def decide(self, request: Any) -> Any:
        raise NotImplementedError


class PolicyPlugin:
    @hookimpl
    def agy_host_register_permission_policies(self, register: Callable[[Any], None]) -> None:
        register(Policy())


def test_plugin_policy_overrides_the_builtin_of_the_same_name() -> None:
    plugins = Plugins({}, load_entry_points=False)
    plugins.register(PolicyPlugin(), name="pp")
    assert isinstance(plugins.permission_policies()["auto"], Policy)


class Wrapper:
    @hookimpl(wrapper=True)
    def agy_host_prompt_parts(self, turn: PromptContext) -> Any:
        result = yield
        return [*result, [PromptPart(text="wrapped")]]


def test_hookwrappers_keep_pluggy_semantics() -> None:
    plugins = Plugins({}, load_entry_points=False)
    plugins.register(Parts("plain"), name="plain")
    plugins.register(Wrapper(), name="wrapper")
    assert [p.text for p in plugins.prompt_parts(CTX)] == ["wrapped", "plain"]  # by order: 0, then 5


def test_trace_hooks_prints_calls(capsys: pytest.CaptureFixture[str]) -> None:
    plugins = Plugins({"AGY_HOST_TRACE_HOOKS": "1"}, load_entry_points=False)
    plugins.register(Parts("p"), name="traced")
    plugins.prompt_parts(CTX)
    err = capsys.readouterr().err
    assert "[hook] agy_host_prompt_parts(turn) -> ['traced'" in err


def test_duplicate_tools_keep_the_first() -> None:
    from agy_host.contract.tools import HostTool, ToolResult

    async def call(_args: dict[str, Any]) -> ToolResult:
        return ToolResult(text="")

    class ToolPlugin:
        def __init__(self, desc: str) -> None:
            self.desc = desc

        @hookimpl
        def agy_host_register_tools(self, register: Callable[[HostTool], None]) -> None:
            register(HostTool(name="t", description=self.desc, input_schema={}, call=call))

    plugins = Plugins({}, load_entry_points=False)
    plugins.register(ToolPlugin("first"), name="one")
    plugins.register(ToolPlugin("second"), name="two")
    tools = plugins.tools()
    assert [t.description for t in tools] == ["first"]
    assert any("duplicate host tool" in e.error for e in plugins.errors)


# -- engines ------------------------------------------------------------------------


def _engine_dists(site: Path) -> None:
    for n in ("alpha", "beta"):
        make_dist(
            site,
            f"engt-{n}",
            entry_points={"agy_host.engines": {f"engt_{n}": f"engt_{n}_mod:engt_{n}_engine"}},
            modules={f"engt_{n}_mod": engine_module(f"engt_{n}")},
        )
    make_dist(site, "engt-broken", entry_points={"agy_host.engines": {"engt_broken": "engt_missing_mod:Nope"}})


def test_selected_engine_is_the_only_one_imported(site: Path) -> None:
    _engine_dists(site)
    factory = load_engine_class("engt_alpha")
    assert factory.ENGINE_NAME == "engt_alpha"  # type: ignore[attr-defined]
    assert "engt_alpha_mod" in sys.modules
    assert "engt_beta_mod" not in sys.modules


def test_unknown_engine_lists_the_installed_ones(site: Path) -> None:
    _engine_dists(site)
    with pytest.raises(EngineError) as err:
        load_engine_class("nope", extra={"inproc": lambda ctx: None})  # type: ignore[arg-type,return-value]
    message = str(err.value)
    assert "unknown engine 'nope'" in message
    for name in ("engt_alpha", "engt_beta", "engt_broken", "inproc"):
        assert name in message


def test_engine_that_fails_to_import_is_a_clear_error(site: Path) -> None:
    _engine_dists(site)
    with pytest.raises(EngineError, match=r"engt_broken.*failed to import"):
        load_engine_class("engt_broken")


def test_two_distributions_claiming_one_engine_name_is_a_clear_error(site: Path) -> None:
    for n in ("one", "two"):
        make_dist(site, f"engt-twin-{n}", entry_points={"agy_host.engines": {"engt_twin": f"engt_twin_{n}:E"}})
    with pytest.raises(EngineError, match=r"several distributions claim it \(engt-twin-one, engt-twin-two\)"):
        load_engine_class("engt_twin")
    assert not any(name.startswith("engt_twin_") for name in sys.modules)


def test_loading_an_engine_imports_neither_stevedore_nor_importlib_metadata() -> None:
    # Both were about 20 ms of every turn's start (docs/performance.md, "Cold path").
    code = (
        "import sys; from agy_host.engine.base import installed_engines, load_engine_class;"
        "names = [e.name for e in installed_engines()]; [load_engine_class(n) for n in names];"
        "print(bool(names), sorted(m for m in ('stevedore', 'importlib.metadata') if m in sys.modules))"
    )
    assert python_says(code) == "True []"


def test_loading_an_engine_does_not_look_for_libpthread_with_ldconfig() -> None:
    # ctypes.util.find_library runs `/sbin/ldconfig -p` (a fork, ~10 ms); trio
    # asks it for libpthread at import, to name its worker threads.
    code = (
        "import ctypes.util, sys; asked = []; real = ctypes.util.find_library;"
        "ctypes.util.find_library = lambda name: asked.append(name) or real(name);"
        "from agy_host.engine.base import installed_engines, load_engine_class;"
        "[load_engine_class(e.name) for e in installed_engines()];"
        "from trio._core import _thread_cache;"
        "print('trio' in sys.modules, asked, _thread_cache.set_os_thread_name is not None)"
    )
    assert python_says(code) == "True [] True"


def _host(env: dict[str, str], *, engine: str | None = None, plugins: list[object] | None = None) -> Host:
    return Host(env=env, engine=engine, extra_plugins=plugins or [], warn=lambda _m: None)


def test_engine_precedence(site: Path, agy_host_home: Any, echo_plugin: Any) -> None:
    _engine_dists(site)
    base = {"XDG_CONFIG_HOME": str(agy_host_home.config_home), "XDG_STATE_HOME": str(agy_host_home.state_home)}
    agy_host_home.write_config({"engine": "engt_beta"})
    choice = _host({**base, "AGY_HOST_ENGINE": "engt_alpha"}, engine="echo", plugins=[echo_plugin]).engine_choice()
    assert (choice.name, choice.source) == ("echo", "flag")
    choice = _host({**base, "AGY_HOST_ENGINE": "engt_alpha"}, plugins=[echo_plugin]).engine_choice()
    assert (choice.name, choice.source) == ("engt_alpha", "env")
    choice = _host(base, plugins=[echo_plugin]).engine_choice()
    assert (choice.name, choice.source) == ("engt_beta", "config")
    assert "config.toml" in choice.reason
    agy_host_home.config_path.unlink()
    choice = _host(base, plugins=[echo_plugin]).engine_choice()
    installed = choice.installed
    assert {"echo", "engt_alpha", "engt_beta"} <= set(installed)
    if "stream-json" in installed:
        assert (choice.name, choice.source) == ("stream-json", "default")
    else:
        assert (choice.name, choice.source) == (sorted(installed)[0], "first")


def test_the_only_installed_engine_is_chosen(
    agy_host_home: Any, echo_plugin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agy_host.runtime.host as host_mod

    monkeypatch.setattr(host_mod, "installed_engines", list)  # no entry point engines in this environment
    choice = _host({}, plugins=[echo_plugin]).engine_choice()
    assert (choice.name, choice.source, choice.reason) == ("echo", "only", "the only engine installed")


def test_no_engine_installed_is_an_error_saying_what_to_install(
    agy_host_home: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agy_host.runtime.host as host_mod

    monkeypatch.setattr(host_mod, "installed_engines", list)
    with pytest.raises(EngineError, match=r"pip install .*plugins/acp_engine"):
        _host({}).engine_choice()


def test_engine_hooks_are_registered_after_selection(agy_host_home: Any, echo_plugin: Any) -> None:
    host = _host({}, engine="echo", plugins=[echo_plugin])
    assert "engine:echo" not in _names(host.plugins)
    engine = host.load_engine()
    assert host.load_engine() is engine
    assert "engine:echo" in _names(host.plugins)
    assert host.plugins.errors == []


class McpPlugin:
    @hookimpl
    def agy_host_mcp_servers(self, engine_name: str) -> list[Any]:
        from agy_host.engine.base import McpServerSpec

        return [McpServerSpec(name=f"bridge-for-{engine_name}", url="http://127.0.0.1:1/mcp")]


def test_engine_context_carries_the_hosts_wiring(agy_host_home: Any, echo_plugin: Any) -> None:
    host = Host(engine="echo", agent="my agent", extra_plugins=[echo_plugin, McpPlugin()], warn=lambda _m: None)
    engine = host.load_engine()
    ctx = engine.ctx
    assert [s.name for s in ctx.mcp_servers()] == ["bridge-for-echo"]
    assert ctx.agent == "my agent"
    assert ctx.state_dir == agy_host_home.state_dir
    assert ctx.decide_permission == host.decide_permission
    ctx.warn("from the engine")
    assert host.warnings == ["from the engine"]


def test_an_engine_without_a_store_suffix_gets_its_own_keys() -> None:
    """Third-party engines must never share store keys with stream-json (whose
    keys carry no suffix): they would resume each other's conversation ids."""
    import contextlib

    from agy_host.engine.base import Engine

    class Quiet(Engine):
        ENGINE_NAME = "quiet"

        def open_driver(self) -> contextlib.AbstractAsyncContextManager[Any]:
            raise NotImplementedError

    class Legacy(Quiet):
        STORE_SUFFIX = ""

    ctx: Any = None
    assert Quiet(ctx).store_key("work") == "work@quiet"
    assert Legacy(ctx).store_key("work") == "work"


STATEFUL = """
from agy_host import hookimpl


class Counter:
    def __init__(self):
        self.turns = []

    @hookimpl
    def agy_host_turn_started(self, turn):
        self.turns.append(turn.session)


def make_plugin():
    return Counter()
"""


def test_a_plugin_module_with_make_plugin_gets_one_object_per_host(site: Path) -> None:
    from agy_host.config import Config
    from agy_host.contract.run_context import TurnContext

    make_dist(
        site,
        "agyt-stateful",
        entry_points={"agy_host": {"agyt_stateful": "agyt_stateful"}},
        modules={"agyt_stateful": STATEFUL},
    )
    first, second = Plugins({}), Plugins({})
    one, two = first.pm.get_plugin("agyt_stateful"), second.pm.get_plugin("agyt_stateful")
    assert type(one).__name__ == "Counter" and one is not two

    def turn(session: str) -> TurnContext:
        return TurnContext(
            session=session, engine="e", cwd="/", user_text="", new_conversation=True, config=Config(), env={}
        )

    first.turn_started(turn("a"))
    second.turn_started(turn("b"))
    assert (one.turns, two.turns) == (["a"], ["b"])


def test_the_built_in_plugins_with_state_are_objects_per_manager() -> None:
    first, second = Plugins({}, load_entry_points=False), Plugins({}, load_entry_points=False)
    for name in ("agy_host.builtins.transcripts", "agy_host.builtins.prompt_assembly"):
        a, b = first.pm.get_plugin(name), second.pm.get_plugin(name)
        assert a is not None and b is not None and a is not b, name


def test_doctor_shows_the_paths_of_the_env_the_host_was_given(tmp_path: Path) -> None:
    from agy_host.contract.diagnostics import DiagnosticReport

    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    host = Host(env=env, warn=lambda _m: None)
    report = DiagnosticReport()
    host.plugins.diagnostics(report)
    rows = {row.label: str(row.value) for row in report.section("host").rows}
    assert rows["state"] == str(tmp_path / "state" / "agy-host")
    assert rows["config"].startswith(str(tmp_path / "config" / "agy-host" / "config.toml"))
