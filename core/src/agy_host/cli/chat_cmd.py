"""``agy-host chat``: many turns in one agent conversation, at a prompt.

The agent (its process, its connection) stays up between turns, so a turn
costs what the agent takes, not a start-up. The prompt has history and
line editing (:mod:`agy_host.cli.line_editor`); slash commands change the
model, mode or engine for the next turn, start a new session, list
sessions, show doctor rows and help (:mod:`agy_host.cli.chat_slash`).
Ctrl-C during a turn aborts that turn (the chat goes on); at the prompt it
clears the line; Ctrl-D or ``/exit`` leaves. ``@path`` in a message attaches
the file; a pasted path to an image attaches the image.

With stdin not a terminal, each line is one message (scripts, tests).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli import turn_options as opt
from agy_host.cli.chat_repl import Chat, ChatOptions
from agy_host.cli.common import fail
from agy_host.cli.exit_codes import ExitCode, epilog

if TYPE_CHECKING:
    from agy_host.cli.line_editor import LineEditor, PipeReader
    from agy_host.cli.state import CliState
    from agy_host.cli.warm_turn import WarmRuntime
    from agy_host.contract.rendering import DiffSource, Renderer, RendererFactory
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import SessionRuntime

CHAT_HELP = """Chat with the agent: many turns, one agent conversation.

Type a message and press Enter; the answer streams below it. Up/Down walk
the history, the usual editing keys work, `@path` attaches a file, a pasted
image path attaches the image. Ctrl-C during a turn aborts that turn (not
the chat); Ctrl-D or /exit leaves. /help lists the slash commands (/model,
/mode, /engine, /new, /sessions, /doctor, ...) and the agent's own (an
ACP agent's /compact, ...), which are sent to the agent as typed; the
chat's own win a clash, and `//text` sends `/text` to the agent. Tab
completes a /name.

Without --session a new session is named chat-YYYYMMDD-HHMMSS-xxxx; with
--session NAME the chat continues that session's agent conversation
(--resume: fail with exit 4 unless it exists).
"""


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("chat", help=CHAT_HELP, epilog=epilog())
    def chat(  # noqa: PLR0917 - typer maps each parameter to a CLI option
        session: opt.Session = None,
        resume: opt.Resume = False,
        no_wait: opt.NoWait = False,
        engine: opt.Engine = None,
        agent: opt.Agent = None,
        model: opt.Model = None,
        effort: opt.Effort = None,
        mode: opt.Mode = None,
        cwd: opt.Cwd = None,
        fmt: Annotated[
            str, typer.Option("--format", "-f", help="text, plain or rich (or a plugin's).", metavar="FORMAT")
        ] = "text",
        timeout: opt.Timeout = None,
        inactivity: opt.Inactivity = None,
        permissions: opt.Permissions = None,
        skip_permissions: opt.SkipPermissions = None,
        system_prompt: opt.SystemPrompt = None,
        digest: opt.Digest = None,
        answers: opt.Answers = None,
        allow_tool: opt.AllowTool = None,
        deny_tool: opt.DenyTool = None,
        add_dir: opt.AddDirs = None,
        max_tokens: opt.MaxTokens = None,
        max_cost: opt.MaxCost = None,
        trace: opt.Trace = None,
        keep_alive: opt.KeepAlive = None,
        verbose: opt.Verbose = False,
    ) -> None:
        checked = opt.common("chat", locals())
        raise typer.Exit(chat_command(state, ChatOptions(**checked)))


def chat_command(state: CliState, opts: ChatOptions) -> int:
    try:
        host, _engine = opt.open_host(state, opts)
    except opt.SetupFailed as exc:
        fail(exc.message, exc.code)
    factory = opt.renderer_factory(host, opts.fmt)
    import trio

    try:
        return trio.run(_chat_async, state, host, opts, factory)
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
    except KeyboardInterrupt:
        pass
    print("agy-host: chat interrupted", file=sys.stderr, flush=True)
    return ExitCode.INTERRUPTED


def _editor(host: Host) -> LineEditor | PipeReader:
    from agy_host.cli.line_editor import History, LineEditor, PipeReader

    if sys.stdin.isatty() and sys.stdout.isatty():
        return LineEditor(history=History(host.state_dir / "chat-history"))
    return PipeReader()


async def _chat_async(state: CliState, host: Host, opts: ChatOptions, factory: RendererFactory) -> int:
    import functools

    import trio

    from agy_host.cli.chat_slash import dispatch, slash_names
    from agy_host.cli.line_editor import LineEditor
    from agy_host.runtime.session import SessionRuntime, describe_error
    from agy_host.runtime.signals import CommandSignals

    renderer, diffs = opt.build_renderer(host, opts, factory)
    editor = _editor(host)
    chat = Chat(state, host, opts, renderer, editor, slash=dispatch)
    if isinstance(editor, LineEditor):
        editor.completions = functools.partial(slash_names, chat)
    code: int = ExitCode.OK
    try:
        async with trio.open_nursery() as watcher:
            signals = chat.signals = CommandSignals(lambda: chat.runtime, chat.on_idle_interrupt, chat.on_terminate)
            await watcher.start(signals.watch)
            try:
                warm = await _warm(host, opts, renderer, diffs)
                if warm is not None:
                    chat.runtime = warm
                    code = await _chat_on(chat, warm)
                else:
                    if not opts.generated_session:
                        from agy_host.keeper.client import end_warm

                        await end_warm(host, opts.session)  # the session's warm agent (if any) ends first
                    async with SessionRuntime.open(
                        host, cwd=opts.cwd, sink=renderer.handle, diffs=diffs, start=False, exit_on_third_interrupt=True
                    ) as runtime:
                        chat.runtime = runtime
                        code = await _chat_on(chat, runtime)
            except Exception as exc:
                print(f"agy-host: error: {describe_error(exc)}", file=sys.stderr, flush=True)
                code = ExitCode.ERROR
            finally:
                watcher.cancel_scope.cancel()
    finally:
        editor.restore()
        try:
            renderer.close()
        except Exception as exc:
            host.warn(f"the renderer failed while closing: {describe_error(exc)}")
    if signals.terminated is not None:
        print(f"agy-host: ended by {signals.terminated.name}", file=sys.stderr, flush=True)
    return signals.exit_code(code)


async def _chat_on(chat: Chat, runtime: SessionRuntime | WarmRuntime) -> int:
    """The chat on ``runtime``: started, greeted, looped; doctor's last run written at the end."""
    assert chat.signals is not None
    code: int = ExitCode.OK
    try:
        with chat.reading:
            await runtime.start()
            chat.banner()
            code = await chat.loop()
    finally:
        chat.signals.leaving = True
        runtime.write_last_run(chat.session, chat.last_result)
    return code


async def _warm(host: Host, opts: ChatOptions, renderer: Renderer, diffs: DiffSource) -> WarmRuntime | None:
    """The session's warm agent for this chat (it stays warm after it);
    ``None`` when the chat keeps none (``--keep-alive 0``, an unnamed chat)
    or no keeper can be had (said as a warning): the chat runs its own."""
    from agy_host.cli.warm_turn import WarmRuntime, keep_alive_s, unavailable
    from agy_host.keeper.client import KeeperUnavailable
    from agy_host.runtime.session import say_stderr

    keep = keep_alive_s(host, opts)
    if keep <= 0:
        return None
    warm = WarmRuntime(host, opts, sink=renderer.handle, say=say_stderr, keep_alive_s=keep, diffs=diffs)
    try:
        await warm.start()
    except KeeperUnavailable as exc:
        host.warn(unavailable(exc))
        return None
    return warm


__all__ = ["CHAT_HELP", "chat_command", "register"]
