"""``agy-host ask PROMPT``: one-shot delegation, for scripts and other agents.

Unlike ``run`` nothing streams: ``ask`` waits for the turn and reports it in
one piece, the answer text, the duration, a status (``ok``, ``aborted``,
``timeout``, ``error``) and a session you can continue (``run --session``,
``chat --session`` or ``ask --session``), as text (answer on stdout, one
status line on stderr) or as one JSON document (``--format json``). The exit
codes are ``run``'s.

``--mode plan`` runs the turn in the agent's own plan mode when the agent
advertises its modes (an ACP agent such as the Gemini CLI); otherwise it
asks the agy CLI for a review-only plan (``agy -p --mode plan``,
:mod:`agy_host.cli.ask_plan`): Antigravity's ACP server has no plan mode,
and says so when it is the selected engine.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from agy_host.cli import turn_options as opt
from agy_host.cli.ask_report import AskReport, exit_code_of, print_report, status_of
from agy_host.cli.common import fail
from agy_host.cli.exit_codes import ExitCode, epilog
from agy_host.cli.turn_options import TurnOptions

if TYPE_CHECKING:
    from collections.abc import Callable

    from agy_host.cli.state import CliState
    from agy_host.contract.events import HostEvent
    from agy_host.contract.prompt import PromptBlock
    from agy_host.runtime.host import Host
    from agy_host.runtime.turn_layer import TurnResult

ASK_HELP = """Ask the agent once and report the answer, duration, status and session.

Nothing streams: the answer comes at the end, on stdout, with one status
line on stderr (`[ask] ok in 3.2s; session ask-...; continue: agy-host run
--session ask-... "..."`), or as one JSON document with --format json
(status ok, aborted, timeout or error; text; duration_s; session;
conversation_id; exit_code). --session NAME continues that session.

--mode plan: a turn in the agent's own plan mode when it has one (an ACP
agent such as `gemini --acp`); otherwise a review-only plan from the agy
CLI (`agy -p --mode plan`; Antigravity's ACP server has no plan mode).
Files: `@path` in the prompt, --file PATH, --image PATH.
"""


class AskOptions(TurnOptions, kw_only=True):
    prompt: str


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("ask", help=ASK_HELP, epilog=epilog())
    def ask(  # noqa: PLR0917 - typer maps each parameter to a CLI option
        prompt: Annotated[list[str], typer.Argument(help="The question or task.", metavar="PROMPT...")],
        session: opt.Session = None,
        resume: opt.Resume = False,
        no_wait: opt.NoWait = False,
        engine: opt.Engine = None,
        agent: opt.Agent = None,
        model: opt.Model = None,
        effort: opt.Effort = None,
        mode: opt.Mode = None,
        cwd: opt.Cwd = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help="text or json.", metavar="text|json")] = "text",
        timeout: opt.Timeout = None,
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
        files: opt.Files = None,
        images: opt.Images = None,
    ) -> None:
        from agy_host.cli.common import check_format

        check_format(fmt)
        checked = opt.common("ask", locals())
        text = " ".join(prompt).strip()
        if not text:
            fail("the prompt is empty", ExitCode.USAGE)
        raise typer.Exit(ask_command(state, AskOptions(prompt=text, **checked)))


def _resume_hint(opts: AskOptions) -> str:
    """The ``run`` command that continues the conversation (with the same
    engine and agent when they were chosen on the command line)."""
    import shlex

    flags = []
    if opts.engine:
        flags += ["--engine", opts.engine]
    if opts.agent:
        flags += ["--agent", opts.agent]
    return shlex.join(["agy-host", "run", *flags, "--session", opts.session]) + ' "..."'


def ask_command(state: CliState, opts: AskOptions) -> int:
    built: Host | None = None
    if opts.mode == "plan":
        built = opt.command_host(state, opts)
        if not _agent_plans(built):
            from agy_host.cli.ask_plan import ask_plan

            return ask_plan(built, opts)
    try:
        host, engine = opt.open_host(state, opts, built)
        blocks = opt.prompt_blocks(host, engine, opts, opts.prompt)
    except opt.SetupFailed as exc:
        return _early(opts, exc.host, exc.message, exc.code)
    import trio

    from agy_host.builtins.render_exit import Refusals

    refusals = Refusals()  # why an exit 5 is one, for the status line
    started = time.monotonic()
    try:
        result, error, ended_by = trio.run(_ask_async, host, opts, blocks, refusals.see)
    except KeyboardInterrupt:
        result, error, ended_by = None, "interrupted", None
    status = status_of(result) if result is not None else "aborted" if error.startswith("interrupted") else "error"
    report = AskReport(
        status=status,
        text=result.response if result is not None else "",
        duration_s=result.duration_s if result is not None else time.monotonic() - started,
        session=opts.session,
        conversation_id=result.conversation_id if result is not None else None,
        engine=engine.ENGINE_NAME,
        mode=opts.mode,
        exit_code=ended_by or (result.exit_code if result is not None else exit_code_of(status)),
        error=(result.error if result is not None else error) or None,
        usage=result.usage if result is not None else None,
        resume=_resume_hint(opts) if result is not None and result.conversation_id else None,
    )
    print_report(report, opts.fmt, why=refusals.last_why)
    return report.exit_code


def _agent_plans(host: Host) -> bool:
    """Whether the selected agent plans itself: an ACP agent other than
    Antigravity, whose modes are its own (a turn in its ``plan`` mode, or
    the error listing its modes). Otherwise the agy CLI plans (``agy -p
    --mode plan``), as it does for the stream-json engine and Antigravity."""
    from agy_host.engine.base import EngineError

    try:
        return host.load_engine().capabilities.agent_modes
    except EngineError:
        return False  # the plan path says what is missing


def _early(opts: AskOptions, host: Host, message: str, code: int) -> int:
    """Fail before anything ran; JSON callers still get their one document."""
    if opts.fmt == "json":
        print_report(
            AskReport(
                status="error",
                text="",
                duration_s=0.0,
                session=opts.session,
                engine=host.engine_flag or host.config.engine or "",
                mode=opts.mode,
                exit_code=code,
                error=message,
            ),
            "json",
        )
        raise typer.Exit(code)
    fail(message, code)


async def _ask_async(
    host: Host, opts: AskOptions, blocks: list[PromptBlock], sink: Callable[[HostEvent], None]
) -> tuple[TurnResult | None, str, int | None]:
    """The turn's result, the error, and the exit code of the signal that
    ended the command (SIGTERM, SIGHUP), if one did."""
    import trio

    from agy_host.cli.warm_turn import Attached, one_turn
    from agy_host.runtime.session import describe_error
    from agy_host.runtime.signals import CommandSignals

    result: TurnResult | None = None
    error = ""
    refused: int | None = None
    attached = Attached()
    async with trio.open_nursery() as watcher:

        def before_the_turn() -> None:
            """Ctrl-C while the agent starts: give up at once."""
            nonlocal error
            error = "interrupted before the turn started"
            watcher.cancel_scope.cancel()

        signals = CommandSignals(attached, before_the_turn)
        await watcher.start(signals.watch)
        try:
            result, error, refused = await one_turn(host, opts, blocks, attached=attached, signals=signals, sink=sink)
            if result is None and not error:
                error = "interrupted; agy-host stopped waiting for the agent"
        except Exception as exc:
            error = describe_error(exc)
        finally:
            watcher.cancel_scope.cancel()
    ended_by = signals.exit_code(0) if signals.terminated is not None else refused
    return result, error, ended_by


__all__ = ["ASK_HELP", "AskOptions", "AskReport", "ask_command", "exit_code_of", "register", "status_of"]
