"""``agy-host run PROMPT``: one agent turn, streamed.

The turn runs on a :class:`~agy_host.runtime.session.SessionRuntime` (round-trips,
services, the engine's driver, host tools and late results, all there); this
module turns options into it and its result into output and an exit code.
Ctrl-C asks the engine to abort the turn and waits for its outcome, so the
session binding is saved and the exit code is 130; a second Ctrl-C stops
waiting; a third exits the process at once. Ctrl-C while the agent is still
starting gives up at once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import msgspec
import typer

from agy_host.cli import turn_options as opt
from agy_host.cli.common import fail
from agy_host.cli.exit_codes import ExitCode, epilog
from agy_host.cli.turn_options import TurnOptions
from agy_host.contract.prompt import PromptBlock, TextBlock

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.contract.rendering import RendererFactory
    from agy_host.engine.base import Engine
    from agy_host.runtime.host import Host
    from agy_host.runtime.turn_layer import TurnResult

RUN_HELP = """Run one agent turn and stream the answer.

PROMPT is the text to send (several words are joined with spaces); `-` or
no PROMPT with a pipe on stdin reads the prompt from stdin.

Without --session the turn starts a fresh agent conversation and records it
under a generated name (run-YYYYMMDD-HHMMSS-xxxx), printed at the end, so you
can continue it with --session NAME. With --session NAME, the first use
creates the session and later uses resume its agent conversation; --resume
requires that it exists (exit 4 otherwise).

The answer goes to stdout; tool lines, notices and the closing line (stop
reason, duration, usage, session) go to stderr. --format json prints one JSON
event per line, ending with a {"type": "done", ...} object; --format quiet
prints only the final answer.
"""


class RunOptions(TurnOptions, kw_only=True):
    prompt: str
    #: The prompt's blocks (text, ``@path`` and ``--file`` resources, images), built by ``run_command``.
    blocks: list[PromptBlock] = msgspec.field(default_factory=list)


def _read_prompt(words: list[str] | None) -> str:
    if words and words != ["-"]:
        return " ".join(words)
    if words == ["-"] or not sys.stdin.isatty():
        text = sys.stdin.read()
        if text.strip():
            return text.strip("\n")
        fail("the prompt read from stdin is empty", ExitCode.USAGE)
    fail("missing PROMPT (or pipe it on stdin); see `agy-host run --help`", ExitCode.USAGE)


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("run", help=RUN_HELP, epilog=epilog())
    def run(  # noqa: PLR0917 - typer maps each parameter to a CLI option
        prompt: Annotated[
            list[str] | None,
            typer.Argument(help="The prompt; `-` reads stdin.", show_default=False, metavar="PROMPT..."),
        ] = None,
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
            str, typer.Option("--format", "-f", help="text, json or quiet (or a plugin's format).", metavar="FORMAT")
        ] = "text",
        timeout: opt.Timeout = None,
        inactivity: opt.Inactivity = None,
        permissions: opt.Permissions = None,
        skip_permissions: opt.SkipPermissions = None,
        verbose: opt.Verbose = False,
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
        checked = opt.common("run", locals())
        raise typer.Exit(run_command(state, RunOptions(prompt=_read_prompt(prompt), **checked)))


def run_command(state: CliState, opts: RunOptions) -> int:
    """Everything up to the trio loop: host, renderer, engine, resume check."""
    from agy_host.cli.sessions_cmd import resume_note

    try:
        host, engine = opt.open_host(state, opts)
        opts.blocks = opt.prompt_blocks(host, engine, opts, opts.prompt)
    except opt.SetupFailed as exc:
        _early_exit(opts, exc.message, exc.code)
    factory = opt.renderer_factory(host, opts.fmt)
    note = None if opts.generated_session else resume_note(host, engine, opts.session)
    if note:
        host.warn(note)
    problem = host.policy_problem()
    if problem:
        _early_exit(opts, problem, ExitCode.USAGE)

    import trio

    try:
        return trio.run(_run_async, host, engine, opts, factory)
    except BaseExceptionGroup as group:
        # Ctrl-C before the signal watcher was installed (agent start-up)
        # arrives as KeyboardInterrupt, possibly inside trio's groups.
        if group.subgroup(KeyboardInterrupt) is None:
            raise
    except KeyboardInterrupt:
        pass
    print("agy-host: interrupted", file=sys.stderr, flush=True)
    if opts.fmt == "json":
        _print_done(opts, None, ExitCode.INTERRUPTED, "")
    return ExitCode.INTERRUPTED


def _early_exit(opts: RunOptions, message: str, code: int) -> NoReturn:
    """Fail before any turn started; JSON consumers still get their ``done``."""
    if opts.fmt == "json":
        _print_done(opts, None, code, message)
    fail(message, code)


async def _run_async(host: Host, engine: Engine, opts: RunOptions, factory: RendererFactory) -> int:
    import trio

    from agy_host.cli.warm_turn import Attached, one_turn
    from agy_host.runtime.session import describe_error
    from agy_host.runtime.signals import CommandSignals

    renderer, diffs = opt.build_renderer(host, opts, factory)
    result: TurnResult | None = None
    error = ""
    return_code: int | None = None
    interrupted = False
    attached = Attached()
    async with trio.open_nursery() as watcher:

        def before_the_turn() -> None:
            nonlocal interrupted
            interrupted = True
            watcher.cancel_scope.cancel()

        signals = CommandSignals(attached, before_the_turn)
        await watcher.start(signals.watch)
        blocks = opts.blocks or [TextBlock(text=opts.prompt)]
        try:
            result, error, return_code = await one_turn(
                host,
                opts,
                blocks,
                attached=attached,
                signals=signals,
                sink=renderer.handle,
                diffs=diffs,
                keep_answer=False,  # drawn as it streamed; the transcript and turn_end read it back
            )
        except Exception as exc:
            error = describe_error(exc)
        finally:
            watcher.cancel_scope.cancel()
    try:
        renderer.close()
    except Exception as exc:
        host.warn(f"the renderer failed while closing: {describe_error(exc)}")
    from agy_host.cli.run_end import end_of_run

    return end_of_run(
        fmt=opts.fmt,
        session=opts.session,
        result=result,
        error=error,
        return_code=return_code,
        interrupted=interrupted,
        terminated=signals.terminated,
    )


def _print_done(opts: RunOptions, result: TurnResult | None, code: int, error: str) -> None:
    from agy_host.cli.run_end import print_done

    print_done(opts.session, result, code, error)


__all__ = ["RUN_HELP", "RunOptions", "register", "run_command"]
