"""``chat``'s slash commands.

Each command is a small async function taking the :class:`~agy_host.cli.chat_repl.Chat`
and the rest of the line; ``/help`` is generated from their one-line docs,
so a command cannot exist without being listed. Settings changed here
(model, effort, mode, digest) apply from the next turn on; ``/engine``
starts the other engine's agent before it lets the current one go, so a
failed switch leaves the chat where it was.

The agent's own slash commands (ACP ``available_commands_update``: Claude's
``/compact``, the Gemini CLI's ``/memory``) are listed by ``/help`` too, and
a ``/name`` the agent advertised is sent to it as the prompt. The chat's
own commands keep priority: when both have ``/model``, the chat's runs and
``//model`` sends the agent's. A ``/name`` nobody advertised is refused here,
never sent by accident.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from agy_host.cli.chat_repl import Chat
    from agy_host.contract.events import AgentCommand
    from agy_host.engine.base import ModeCatalog

Command = Callable[["Chat", str], Awaitable[None]]
COMMANDS: dict[str, tuple[str, Command]] = {}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help", "/h": "/help"}
#: ``/model`` with no argument asks the engine; it may start an agent.
MODELS_TIMEOUT_S = 30.0


def command(name: str, usage: str = "") -> Callable[[Command], Command]:
    def add(fn: Command) -> Command:
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        COMMANDS[name] = (f"{name}{' ' + usage if usage else ''}  {doc}", fn)
        return fn

    return add


def is_own(name: str) -> bool:
    """``/name`` is one of the chat's commands (or an alias of one)."""
    name = name.lower()
    return ALIASES.get(name, name) in COMMANDS


def agent_command(chat: Chat, name: str) -> AgentCommand | None:
    """The agent's command typed as ``name`` (``/compact``), if it advertised one."""
    wanted = name.removeprefix("/").lower()
    commands = chat.runtime.agent_commands if chat.runtime is not None else []
    return next((c for c in commands if c.name.split(" ")[0].lower() == wanted), None)


def slash_names(chat: Chat) -> list[str]:
    """What Tab completes after ``/``: the chat's commands, then the agent's."""
    agent = [f"/{c.name.split(' ')[0]}" for c in chat.runtime.agent_commands] if chat.runtime is not None else []
    return [*COMMANDS, *dict.fromkeys(n for n in agent if not is_own(n))]


async def dispatch(chat: Chat, line: str) -> None:
    name, _, rest = line.strip().partition(" ")
    name = ALIASES.get(name.lower(), name.lower())
    entry = COMMANDS.get(name)
    if entry is None:
        if agent_command(chat, name) is not None:
            await chat.send(line.strip())  # the agent's own command: its prompt, as typed
            return
        chat.say(f"unknown command {name}; /help lists them (//text sends /text to the agent)", "yellow")
        return
    await entry[1](chat, rest.strip())


@command("/help")
async def _help(chat: Chat, rest: str) -> None:
    """This list."""
    width = max(len(text.split("  ")[0]) for text, _ in COMMANDS.values())
    for text, _ in COMMANDS.values():
        head, _, doc = text.partition("  ")
        chat.say(f"  {head.ljust(width)}  {doc}")
    chat.say("  //text  send /text to the agent · @path attaches a file · Ctrl-C stops a turn", "dim")
    _agent_help(chat)


def _agent_help(chat: Chat) -> None:
    """The agent's commands; one the chat also has is reached with ``//``."""
    from agy_host.builtins.render_common import command_usage

    commands = chat.runtime.agent_commands if chat.runtime is not None else []
    if not commands:
        chat.say("  the agent has advertised no commands (ACP agents do once a session starts)", "dim")
        return
    chat.say("the agent's commands (sent to the agent as typed):")
    width = max(len(command_usage(c)) for c in commands)
    for command in commands:
        shadowed = is_own(f"/{command.name.split(' ')[0]}")
        note = f"  (the chat's own runs; //{command.name} sends this one)" if shadowed else ""
        chat.say(f"  {command_usage(command).ljust(width)}  {command.description}{note}")


@command("/exit")
async def _exit(chat: Chat, rest: str) -> None:
    """Leave the chat (Ctrl-D too)."""
    chat.leaving = True


def _current(chat: Chat, value: str | None, configured: str) -> str:
    return value or configured or "(the agent's default)"


@command("/model", "[ID]")
async def _model(chat: Chat, rest: str) -> None:
    """Show the model and the ones available, or use ID from the next turn on."""
    import trio

    assert chat.runtime is not None
    if rest:
        chat.settings.model = None if rest in {"default", "-"} else rest
        chat.say(f"model: {_current(chat, chat.settings.model, chat.host.config.model)} (from the next turn)")
        return
    chat.say(f"model: {_current(chat, chat.settings.model, chat.host.config.model)}")
    catalog = None
    with trio.move_on_after(MODELS_TIMEOUT_S):
        try:
            catalog = await chat.runtime.engine.list_models()
        except Exception as exc:
            chat.say(f"the {chat.runtime.engine.ENGINE_NAME} engine could not list models: {exc}", "yellow")
            return
    if catalog is None:
        chat.say(f"the engine did not list its models within {MODELS_TIMEOUT_S:g}s", "yellow")
        return
    for model in catalog.models:
        mark = "*" if model.current or model.id == catalog.current else " "
        efforts = f"  efforts: {', '.join(model.efforts)}" if model.efforts else ""
        chat.say(f"  {mark} {model.id}{'  ' + model.name if model.name and model.name != model.id else ''}{efforts}")
    if not catalog.models:
        chat.say(f"  no models reported (source: {catalog.source})", "dim")


@command("/effort", "[TIER]")
async def _effort(chat: Chat, rest: str) -> None:
    """Show or set the reasoning effort (low, medium, high)."""
    if rest:
        chat.settings.effort = None if rest in {"default", "-"} else rest
    chat.say(f"effort: {_current(chat, chat.settings.effort, chat.host.config.effort)}")


@command("/mode", "[MODE]")
async def _mode(chat: Chat, rest: str) -> None:
    """Show the mode and the ones the agent offers, or use MODE from the next turn on."""
    from agy_host.runtime.modes import no_plan_mode, plans

    assert chat.runtime is not None
    engine = chat.runtime.engine
    if rest:
        if rest == "plan" and not plans(engine):
            chat.say(no_plan_mode(engine), "yellow")
            return
        if rest != "-":
            # A mode the agent does not list would fail every later turn (and
            # /mode would go on showing it): refused here, the mode unchanged.
            offered = await _modes(chat, quiet=True)
            if offered is not None and offered.modes and not offered.offers(rest):
                chat.say(f"{engine.agent_label()} has no mode {rest!r}; it offers: {offered.names()}", "yellow")
                chat.say(f"mode: {_current(chat, chat.settings.mode, chat.host.config.mode)} (unchanged)")
                return
        chat.settings.mode = None if rest == "-" else rest
        chat.say(f"mode: {_current(chat, chat.settings.mode, chat.host.config.mode)} (from the next turn)")
        return
    chat.say(f"mode: {_current(chat, chat.settings.mode, chat.host.config.mode)}")
    catalog = await _modes(chat)
    if catalog is None:
        return
    if not catalog.modes:
        chat.say(f"  {engine.agent_label()} offers no modes", "dim")
    for line in catalog.lines():
        chat.say(f"  {line}")


async def _modes(chat: Chat, *, quiet: bool = False) -> ModeCatalog | None:
    """The agent's modes, asked within :data:`MODELS_TIMEOUT_S`; ``None``
    (said, unless ``quiet``) when the engine could not tell."""
    import trio

    assert chat.runtime is not None
    engine = chat.runtime.engine
    with trio.move_on_after(MODELS_TIMEOUT_S):
        try:
            return await engine.list_modes()
        except Exception as exc:
            if not quiet:
                chat.say(f"the {engine.ENGINE_NAME} engine could not list the agent's modes: {exc}", "yellow")
            return None
    if not quiet:
        chat.say(f"the engine did not list its modes within {MODELS_TIMEOUT_S:g}s", "yellow")
    return None


@command("/engine", "[NAME]")
async def _engine(chat: Chat, rest: str) -> None:
    """Show the engine, or continue this session on engine NAME."""
    from agy_host.cli.sessions_cmd import resume_note
    from agy_host.cli.turn_options import apply_overrides

    assert chat.runtime is not None
    current = chat.runtime.engine.ENGINE_NAME
    installed = chat.host.installed_engines()
    if not rest:
        chat.say(f"engine: {current} ({chat.runtime.engine.agent_label()})")
        for name, origin in installed.items():
            chat.say(f"  {'*' if name == current else ' '} {name}  {origin}")
        return
    if rest == current:
        chat.say(f"already on {current}")
        return
    if rest not in installed:
        chat.say(f"unknown engine {rest!r}; installed: {', '.join(installed) or 'none'}", "red")
        return
    opts = chat.opts
    agent = opts.agent if rest == "acp" else None
    host = chat.state.host(engine=rest, agent=agent, permissions=opts.permissions, trace=opts.trace)
    apply_overrides(host, chat.host.config.system_prompt, chat.host.config.prompt.digest)
    if not await chat.switch(host):
        return
    assert chat.runtime is not None
    engine = chat.runtime.engine
    bound = chat.host.store.get(engine.store_key(chat.session))
    state = f"continues conversation {bound.conversation_id}" if bound else "starts a new conversation"
    chat.say(f"engine: {engine.ENGINE_NAME} ({engine.agent_label()}); session {chat.session} {state}")
    note = resume_note(chat.host, engine, chat.session)
    if note:
        chat.say(note, "yellow")


@command("/new", "[NAME]")
async def _new(chat: Chat, rest: str) -> None:
    """Start a new session (a new agent conversation), named NAME or generated."""
    from agy_host.runtime.naming import generate_session_name, session_name_problem

    name = rest or generate_session_name("chat")
    problem = session_name_problem(name)
    if problem:
        chat.say(problem, "red")
        return
    chat.session = name
    assert chat.runtime is not None
    bound = chat.host.store.get(chat.runtime.engine.store_key(name))
    chat.say(f"session {name}" + (f" (continues conversation {bound.conversation_id})" if bound else " (new)"))


@command("/session")
async def _session(chat: Chat, rest: str) -> None:
    """Show this session's bindings and turn count."""
    from agy_host.runtime.sessions_view import lookup

    info = lookup(chat.host, chat.session)
    if info is None:
        chat.say(f"session {chat.session}: no turns yet")
        return
    chat.say(f"session {chat.session}: {info.turns} turn(s), last used {info.last_used or '-'}")
    for key, binding in info.bindings.items():
        chat.say(f"  {key}: conversation {binding.conversation_id} ({binding.updated_at})")


@command("/sessions")
async def _sessions(chat: Chat, rest: str) -> None:
    """List host sessions: the named ones and the latest unnamed runs (newest last)."""
    from agy_host.runtime.sessions_view import listing

    shown = listing(chat.host)
    if not shown.sessions:
        chat.say("no sessions yet")
    for info in shown.sessions[-20:]:
        mark = "*" if info.name == chat.session else " "
        engines = ", ".join(info.engines) or "-"
        chat.say(f"  {mark} {info.name}  {engines}  {info.turns} turn(s)  {info.last_used or '-'}")
    if shown.hidden:
        chat.say(f"  ({shown.hidden} older unnamed run(s): `agy-host sessions list --all`)", "dim")


@command("/always", "[forget]")
async def _always(chat: Chat, rest: str) -> None:
    """Show the "always" answers remembered for this session, or forget them."""
    remembered = chat.host.broker.remembered
    if rest.lower() in {"forget", "clear", "reset"}:
        count = len(remembered.of_session(chat.session))
        remembered.forget(chat.session)
        chat.say(f"forgot {count} remembered answer(s) of session {chat.session}: the agent's requests are asked again")
        return
    if rest:
        chat.say("usage: /always [forget]", "yellow")
        return
    found = remembered.of_session(chat.session)
    if not found:
        chat.say(f"nothing remembered for session {chat.session} (pick an agent's 'always' option to remember one)")
    for tool, answer in found:
        chat.say(f"  {tool}: {answer.family} ({answer.chosen!r})")


@command("/doctor")
async def _doctor(chat: Chat, rest: str) -> None:
    """Engine, agent, live driver state (a warm agent's: the keeper's account), session, stats, lifecycle."""
    from agy_host.cli.doctor_cmd import command_rows, rendering_rows, snapshot_rows, warm_line
    from agy_host.cli.warm_turn import WarmRuntime
    from agy_host.contract.diagnostics import DiagnosticReport

    assert chat.runtime is not None
    report = DiagnosticReport()
    engine = chat.runtime.engine
    sec = report.section("chat")
    sec.add("engine", f"{engine.ENGINE_NAME} ({engine.agent_label()})")
    sec.add("session", chat.session)
    sec.add("settings", msgspec.json.encode(chat.settings).decode())
    snapshot = chat.runtime.snapshot()
    if snapshot is not None:
        snapshot_rows(report.section("driver"), snapshot)
    elif isinstance(chat.runtime, WarmRuntime):
        # the agent lives in the keeper: its account, not a driver snapshot
        reply = await chat.runtime.status(chat.session)
        sec = report.section("warm agent")
        if reply is not None:
            sec.add("keeper", f"pid {reply.keeper_pid}")
        for info in reply.sessions if reply is not None else []:
            sec.add(info.session, warm_line(info))
        if reply is None or not reply.sessions:
            sec.add("agent", "not warm now: the next turn starts it")
    command_rows(report.section("driver"), chat.runtime.agent_commands)
    rendering_rows(chat.host, report)
    for err in chat.host.plugins.errors:
        report.section("plugins").add(err.name, f"failed: {err.error}", "error")
    for message in chat.host.warnings[-5:]:
        report.section("warnings").add("warning", message, "warn")
    chat.say(report.format())


@command("/thinking")
async def _thinking(chat: Chat, rest: str) -> None:
    """Show the agent's last thinking in full."""
    text = getattr(chat.renderer, "last_thinking", "")
    chat.say(text if text else "no thinking seen yet", "dim")


@command("/digest", "[on|off]")
async def _digest(chat: Chat, rest: str) -> None:
    """Show or switch the context digest for the next turns."""
    if rest:
        words = shlex.split(rest)
        if words[0] not in {"on", "off"}:
            chat.say("usage: /digest on|off", "yellow")
            return
        chat.host.config.prompt.digest = words[0] == "on"
        chat.opts.digest = chat.host.config.prompt.digest  # a warm agent's host gets it with the next turn
    chat.say(f"digest: {'on' if chat.host.config.prompt.digest else 'off'}")


__all__ = ["ALIASES", "COMMANDS", "agent_command", "dispatch", "is_own", "slash_names"]
