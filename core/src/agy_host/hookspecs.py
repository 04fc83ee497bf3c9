"""Hook specifications: the points where plugins extend agy-host.

Every hook is synchronous (pluggy has no async). Work that waits (talking to
an agent, serving HTTP, asking a human) lives on the *objects* a hook
registers (engines, policies, services, tools), which the host runs on its
trio loop. Hook implementations may accept any subset of a hook's arguments,
so hooks can grow new arguments without breaking plugins.

Plugins import the implementation marker from the package root::

    from agy_host import hookimpl

    @hookimpl
    def agy_host_register_permission_policies(register):
        register(MyPolicy())

and are found through the ``agy_host`` entry point group. Engines are found
through ``agy_host.engines`` instead (see :mod:`agy_host.engine.base`), so that an
engine that is not selected is never imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.events import HostEvent
    from agy_host.contract.permissions import PermissionPolicy
    from agy_host.contract.prompt_parts import PromptContext, PromptPart
    from agy_host.contract.rendering import RendererFactory
    from agy_host.contract.run_context import RunContext, TurnContext
    from agy_host.contract.tools import HostTool
    from agy_host.engine.base import EngineFactory, McpServerSpec
    from agy_host.service.base import Service

PROJECT = "agy_host"

hookspec = pluggy.HookspecMarker(PROJECT)


# -------------------------------------------------------------------------
# registration hooks: called once, when the plugin manager is set up
# -------------------------------------------------------------------------


@hookspec
def agy_host_register_engines(register: Callable[[str, EngineFactory], None]) -> None:
    """Register engines in-process, in addition to the ``agy_host.engines``
    entry point group.

    :param register: call ``register(name, factory)``; ``factory`` takes an
        :class:`~agy_host.engine.base.EngineContext` and returns an
        :class:`~agy_host.engine.base.Engine`.

    Entry points win when both name the same engine. Prefer the entry point
    group for installable engines: an engine registered here is imported even
    when it is not selected.

    **Use in plugins:** test suites and one-off engines.
    """


@hookspec
def agy_host_register_permission_policies(register: Callable[[PermissionPolicy], None]) -> None:
    """Register permission policies (``auto``, ``deny``, ``ask``, ``rules``...).

    :param register: call ``register(policy)`` with an object satisfying
        :class:`~agy_host.contract.permissions.PermissionPolicy`; its ``name`` is what
        users select with ``permissions.policy`` or ``--permissions``.

    A later registration with the same name replaces an earlier one, so a
    plugin can override a built-in. A policy must always answer and never
    hang; the engine bounds ``decide`` with ``turn.permission_timeout_seconds``
    and cancels the request when it expires.

    **Use in plugins:** team policies, interactive prompts.
    """


@hookspec
def agy_host_register_renderers(register: Callable[[str, RendererFactory], None]) -> None:
    """Register output formats for ``--format NAME``.

    :param register: call ``register(name, factory)``; ``factory`` takes
        :class:`~agy_host.contract.rendering.RenderOptions` and returns a
        :class:`~agy_host.contract.rendering.Renderer`.

    **Use in plugins:** alternative terminal UIs, machine formats.
    """


@hookspec
def agy_host_register_tools(register: Callable[[HostTool], None]) -> None:
    """Register host tools the agent may call through the bridge.

    :param register: call ``register(tool)`` with a :class:`~agy_host.contract.tools.HostTool`.

    Called when the bridge builds its catalog. Tool names must be unique; a
    duplicate is reported and the first registration kept.

    **Use in plugins:** give the agent access to host-side capabilities.
    """


@hookspec
def agy_host_register_commands(app: typer.Typer) -> None:
    """Add sub-commands to the ``agy-host`` CLI.

    :param app: the root :class:`typer.Typer`; call ``app.command()(fn)`` or
        ``app.add_typer(sub, name=...)``.

    Keep imports inside the command functions: this hook runs on every CLI
    start, including ``agy-host --help``.

    **Use in plugins:** engine-specific commands such as ``acp-auth``.
    """


@hookspec
def agy_host_services(config: Any) -> list[Service] | None:
    """Return long-lived services to run in the host's nursery for the length
    of a command that runs turns (``run``, ``chat``).

    :param config: the effective :class:`~agy_host.config.Config`.
    :returns: services (see :class:`~agy_host.service.base.Service`) or ``None``.

    Each service's ``run(task_status)`` is started with ``nursery.start`` and
    must call ``task_status.started()`` once it is ready; it is cancelled when
    the command ends.

    **Use in plugins:** the MCP bridge server, watchers, exporters.
    """


# -------------------------------------------------------------------------
# command hooks: called once a host knows its config
# -------------------------------------------------------------------------


@hookspec(historic=True)
def agy_host_configure(run: RunContext) -> None:
    """The command's effective config and environment are known.

    :param run: the config (file, environment and command-line overrides
        applied), the environment the host was given, its state directory.

    Historic, like ``pytest_configure``: a plugin registered after the call
    (an engine's ``hooks`` object, a plugin handed to a Python session) is
    called at registration. A process may run several hosts (``chat``'s
    ``/engine``, a program with two sessions): each call is one host's.

    **Use in plugins:** read your own config section once; derive paths
    from ``run.env``, never from ``os.environ``, so a program that passes
    its own environment gets one consistent state directory.
    """


# -------------------------------------------------------------------------
# turn hooks: called for every turn
# -------------------------------------------------------------------------


@hookspec
def agy_host_turn_started(turn: TurnContext) -> None:
    """A turn is about to be sent to the agent.

    :param turn: session, engine, cwd, the user's text, whether the agent
        conversation is new, the config and environment of the host running
        it, whether anyone in this command draws diffs, and ``warn`` to show
        the user a warning.

    Called before ``agy_host_prompt_parts``, so the agent cannot have acted
    on the turn yet. Must be quick: it runs on the host's loop. Disk work of
    unknown size (a directory walk, ``git``) goes to a worker thread, as the
    diff plugin's snapshot does; call ``turn.warn`` from a hook, not from
    that thread.

    **Use in plugins:** note the turn's start (a transcript, a diff
    baseline) instead of inferring it from another hook.
    """


@hookspec
def agy_host_prompt_parts(turn: PromptContext) -> list[PromptPart] | None:
    """Contribute fragments to the prompt of a turn.

    :param turn: what the turn layer knows: session, engine, whether the agent
        conversation is new, cwd, the user's prompt text, whether that text is
        a slash command, the bound conversation.
    :returns: :class:`~agy_host.contract.prompt_parts.PromptPart` fragments or ``None``.

    Results of all implementations are collected; fragments are ordered by
    their ``order`` then by plugin order (use ``tryfirst``/``trylast`` to
    influence the latter). ``system`` fragments are sent only on the first turn
    of an agent conversation; ``context`` fragments become an embedded resource
    where the engine supports it and inline text otherwise. A slash command
    (``/compact``) is sent alone and verbatim: no fragment goes with it, and
    ``system`` fragments wait for the conversation's first plain prompt.

    **Use in plugins:** system prompts, context digests, project rules.
    """


@hookspec
def agy_host_mcp_servers(engine_name: str) -> list[McpServerSpec] | None:
    """MCP servers the agent should connect to for this session.

    :param engine_name: the selected engine.
    :returns: :class:`~agy_host.engine.base.McpServerSpec` entries or ``None``.

    ACP engines pass them as ``mcpServers`` on ``session/new`` and
    ``session/load``.

    **Use in plugins:** the bridge, or a team's shared MCP servers.
    """


@hookspec
def agy_host_render_event(event: HostEvent) -> None:
    """Observe every host event of every turn (after the selected renderer).

    :param event: the :data:`~agy_host.contract.events.HostEvent`.

    Must be quick; it runs on the host loop between chunks. An exception is
    reported once and the plugin's further calls are skipped for the turn.

    ``TurnEnded.response`` is the whole answer, unless the plugin sets
    ``AGY_HOST_RESPONSE_OPTIONAL = True`` on itself: then ``agy-host run``
    may leave a long answer out of memory (``response_elided``), and the
    plugin reads it with :func:`agy_host.contract.answer.answer_slices`.

    **Use in plugins:** transcripts, metrics, notifications.
    """


# -------------------------------------------------------------------------
# diagnostics
# -------------------------------------------------------------------------


@hookspec
def agy_host_diagnostics(report: DiagnosticReport) -> None:
    """Add rows to ``agy-host doctor``.

    :param report: call ``report.section("my plugin").add(label, value, status)``.

    Must not spend tokens or start long work; doctor runs the engine's own
    probe separately.

    **Use in plugins:** show what the plugin found (config, binaries, ports).
    """


# -------------------------------------------------------------------------
# rendering helpers: asked by renderers while they draw a turn
# -------------------------------------------------------------------------

if TYPE_CHECKING:
    from agy_host.contract.events import ToolCard


@hookspec(firstresult=True)
def agy_host_render_diff(card: ToolCard, cwd: str) -> str | None:
    """Render the change an edit tool card made, as a unified diff.

    :param card: a finished :class:`~agy_host.contract.events.ToolCard` of an edit
        (``kind == "edit"`` or a ``diff`` is set). ``card.diff`` carries the
        agent's own old and new text when the engine has it (ACP); otherwise
        the file named in ``card.args`` is on disk, already changed.
    :param cwd: the directory relative paths in the card are resolved
        against, and shown relative to.
    :returns: plain text (no colour codes; renderers colour ``+``/``-``/``@@``
        lines themselves), ``""`` when there is nothing to show (the file is
        unchanged), or ``None`` to let the next implementation answer.

    Stops at the first non-``None`` result (``firstresult``). With no
    implementation installed, renderers show the label ``[edit: PATH]``.
    Called on the host loop while the card is drawn: keep it quick (read a
    file, ask git), never wait on the agent.

    **Use in plugins:** the diff renderer (``agy-host-diff-render``), or a
    renderer of your own (side-by-side, a pager).
    """
