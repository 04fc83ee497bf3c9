"""The turn options ``run``, ``chat`` and ``ask`` share, declared once.

Each command's signature names these typer annotations, so a flag means the
same and reads the same in every ``--help``; :func:`common` checks them the
same way (``--resume`` needs ``--session``, session names, ``--cwd``,
``--system-prompt @FILE``) and :class:`TurnOptions` carries them to the
command, which hands :meth:`TurnOptions.settings` to the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import typer

from agy_host.cli.common import fail
from agy_host.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from agy_host.cli.state import CliState
    from agy_host.contract.prompt import PromptBlock
    from agy_host.contract.rendering import DiffSource, Renderer, RendererFactory
    from agy_host.engine.base import Engine as EngineT
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import TurnSettings

SESSION_HELP = "Host session to create or continue (letters, digits, . _ - : only)."

Session = Annotated[str | None, typer.Option("--session", "-s", help=SESSION_HELP, metavar="NAME")]
Resume = Annotated[
    bool,
    typer.Option("--resume", help="Fail (exit 4) unless --session exists and the agent continues its conversation."),
]
NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        help="Fail at once (exit 7) when another command is running a turn on --session, "
        "instead of waiting for it to end.",
    ),
]
Engine = Annotated[
    str | None, typer.Option("--engine", "-e", help="Engine to use (see `agy-host engine`).", metavar="NAME")
]
Agent = Annotated[
    str | None,
    typer.Option("--agent", help='Agent command line or profile name, e.g. "gemini --acp".', metavar="CMD"),
]
Model = Annotated[str | None, typer.Option("--model", "-m", help="Model id (see `agy-host models`).", metavar="ID")]
Effort = Annotated[
    str | None, typer.Option("--effort", help="Reasoning effort tier (low, medium, high).", metavar="TIER")
]
Mode = Annotated[
    str | None,
    typer.Option(
        "--mode",
        help="The agent's mode, by the agent's own name (`chat`'s /mode lists them; e.g. plan on `gemini --acp`).",
        metavar="MODE",
    ),
]
Cwd = Annotated[
    Path | None,
    typer.Option(
        "--cwd", help="Working directory of the agent [default: here].", file_okay=False, exists=True, metavar="DIR"
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option("--timeout", help="Deadline of each turn in minutes; 0 disables.", min=0, metavar="MINUTES"),
]
Inactivity = Annotated[
    float | None,
    typer.Option(
        "--inactivity", help="Fail when the agent is silent this many minutes; 0 disables.", min=0, metavar="MINUTES"
    ),
]
Permissions = Annotated[
    str | None,
    typer.Option(
        "--permissions",
        help="Permission policy: auto, deny, ask, rules, or a plugin's. Default: ask at a terminal; "
        "with nobody to ask (a script, CI), a request is refused and the turn exits 5. "
        "skip: the agent runs its tools without asking (and auto answers what it still asks).",
        metavar="POLICY",
    ),
]
#: ``--permissions skip``: the agent's own run-without-asking mode (:func:`_skip`).
SKIP = "skip"
SkipPermissions = Annotated[
    bool | None,
    typer.Option(
        "--skip-permissions/--ask-permissions",
        help="Deprecated: --permissions skip.",
        show_default=False,
        hidden=True,
    ),
]
SystemPrompt = Annotated[
    str | None,
    typer.Option("--system-prompt", help="System prompt (TEXT or @FILE) for a new conversation.", metavar="S"),
]
Digest = Annotated[
    bool | None,
    typer.Option("--digest/--no-digest", help="Send the context digest (this session on other engines)."),
]
AddDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--add-dir",
        help="Another workspace root the agent may use besides the working directory (repeatable).",
        metavar="DIR",
    ),
]
MaxTokens = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=0,
        help="Stop a turn whose tokens (as the agent reports them) cross N; exit 6. 0: no limit.",
        metavar="N",
    ),
]
MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0.0,
        help="Stop a turn when the cost the agent reports crosses X (its currency); exit 6. 0: no limit.",
        metavar="X",
    ),
]
Answers = Annotated[
    Path | None,
    typer.Option(
        "--answers",
        help="Answer rules (TOML or JSON, [[answer]] field/title/kind -> value) for questions the agent asks "
        "when nobody is there to ask; an unmatched question fails the turn (exit 5).",
        metavar="FILE",
    ),
]
AllowTool = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-tool",
        help="Allow tools whose name matches GLOB without asking the permission policy "
        "(kind:GLOB matches the tool's kind, e.g. kind:read; repeatable).",
        metavar="GLOB",
    ),
]
DenyTool = Annotated[
    list[str] | None,
    typer.Option(
        "--deny-tool",
        help="Deny tools whose name matches GLOB, whatever the policy says; wins over --allow-tool "
        "(kind:GLOB matches the tool's kind, e.g. kind:execute; repeatable).",
        metavar="GLOB",
    ),
]
Trace = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        help="Append every frame to and from the agent to FILE, one JSON line each, secrets redacted "
        "(for a bug report; also AGY_HOST_TRACE=FILE).",
        dir_okay=False,
        metavar="FILE",
    ),
]
KeepAlive = Annotated[
    float | None,
    typer.Option(
        "--keep-alive",
        help="Keep the session's agent alive MINUTES after the turn, so the next command on it runs warm "
        "(default: turn.keep_alive_minutes, 5, for a named --session; 0: the agent ends with the command).",
        metavar="MINUTES",
        min=0,
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show the agent's thinking.")]
Files = Annotated[list[str] | None, typer.Option("--file", help="Attach a file (repeatable).", metavar="PATH")]
Images = Annotated[list[str] | None, typer.Option("--image", help="Attach an image (repeatable).", metavar="PATH")]


class TurnOptions(msgspec.Struct, kw_only=True):
    """What the three commands were asked, checked; ``None`` means the config decides."""

    session: str
    generated_session: bool = False
    resume: bool = False
    #: ``--no-wait``: a session busy in another command fails the turn (exit 7).
    no_wait: bool = False
    #: ``--keep-alive MINUTES``; ``None``: the config's for a named session, none for a generated one.
    keep_alive_min: float | None = None
    engine: str | None = None
    agent: str | None = None
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    cwd: str
    fmt: str = "text"
    timeout_min: float | None = None
    inactivity_min: float | None = None
    permissions: str | None = None
    skip_permissions: bool | None = None
    verbose: bool = False
    system_prompt: str | None = None
    digest: bool | None = None
    answers: str | None = None
    #: ``--allow-tool`` and ``--deny-tool`` patterns (the config's lists apply too).
    allow_tools: list[str] = msgspec.field(default_factory=list)
    deny_tools: list[str] = msgspec.field(default_factory=list)
    add_dirs: list[str] = msgspec.field(default_factory=list)
    max_tokens: int | None = None
    max_cost: float | None = None
    #: ``--trace FILE``, absolute; ``None`` leaves it to ``AGY_HOST_TRACE``.
    trace: str | None = None
    files: list[str] = msgspec.field(default_factory=list)
    images: list[str] = msgspec.field(default_factory=list)

    def settings(self) -> TurnSettings:
        from agy_host.runtime.session import TurnSettings

        return TurnSettings(
            model=self.model,
            effort=self.effort,
            mode=self.mode,
            skip_permissions=self.skip_permissions,
            timeout_s=self.timeout_min * 60 if self.timeout_min is not None else None,
            inactivity_s=self.inactivity_min * 60 if self.inactivity_min is not None else None,
            additional_directories=self.add_dirs,
            max_tokens=self.max_tokens,
            max_cost=self.max_cost,
            resume=self.resume,
            wait=not self.no_wait,
        )


def common(prefix: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The checked keyword arguments of a :class:`TurnOptions` from a
    command's own parameters (``locals()`` of the typer command: its names
    are this module's); a new session is named ``PREFIX-YYYYMMDD-HHMMSS-xxxx``.
    Exits 2 on a bad option."""
    from agy_host.runtime.naming import generate_session_name, session_name_problem
    from agy_host.runtime.prompt_input import PromptInputError, read_system_prompt

    session, resume = given.get("session"), bool(given.get("resume"))
    if resume and not session:
        fail("--resume needs --session NAME", ExitCode.USAGE)
    if session:
        problem = session_name_problem(session)
        if problem:
            fail(problem, ExitCode.USAGE)
    cwd = given.get("cwd")
    where = str((cwd or Path.cwd()).resolve())
    try:
        system = read_system_prompt(given.get("system_prompt"), where)
    except PromptInputError as exc:
        fail(str(exc), ExitCode.USAGE)
    passed = {name: given[name] for name in _PASSED if name in given}
    passed.update(_skip(given.get("permissions"), given.get("skip_permissions")))
    return {
        **passed,
        "session": session or generate_session_name(prefix),
        "generated_session": session is None,
        "resume": resume,
        "cwd": where,
        "system_prompt": system,
        "files": given.get("files") or [],
        "images": given.get("images") or [],
        "timeout_min": given.get("timeout"),
        "inactivity_min": given.get("inactivity"),
        "answers": str(given["answers"]) if given.get("answers") else None,
        "add_dirs": _dirs(given.get("add_dir") or []),
        "trace": _trace(given.get("trace")),
        "keep_alive_min": given.get("keep_alive"),
        "allow_tools": list(given.get("allow_tool") or []),
        "deny_tools": list(given.get("deny_tool") or []),
    }


def _skip(permissions: str | None, switch: bool | None) -> dict[str, Any]:
    """``--permissions skip`` as the turn takes it: the agent's own
    run-without-asking mode (``skip_permissions``), and ``auto`` for what an
    agent without one still asks. The old switches work as they did, with a
    notice saying what replaces them."""
    if switch:
        typer.echo(f"agy-host: warning: --skip-permissions is deprecated; use --permissions {SKIP}", err=True)
    elif switch is not None:
        typer.echo(
            "agy-host: warning: --ask-permissions is deprecated; the agent asks unless --permissions skip "
            "(or the config's skip_permissions) says otherwise",
            err=True,
        )
    if permissions == SKIP:
        return {"permissions": "auto", "skip_permissions": True}
    return {}


def _dirs(given: list[Path]) -> list[str]:
    """``--add-dir`` values, absolute; exit 2 for one that is not a directory."""
    out: list[str] = []
    for path in given:
        resolved = path.expanduser().resolve()
        if not resolved.is_dir():
            fail(f"--add-dir {str(path)!r} is not a directory", ExitCode.USAGE)
        if str(resolved) not in out:
            out.append(str(resolved))
    return out


def _trace(given: Path | None) -> str | None:
    """``--trace FILE``, absolute; exit 2 when its folder does not exist."""
    if given is None:
        return None
    path = given.expanduser().absolute()
    if not path.parent.is_dir():
        fail(f"--trace {str(given)!r}: the folder {str(path.parent)!r} does not exist", ExitCode.USAGE)
    return str(path)


class SetupFailed(Exception):
    """The command cannot start a turn: ``message`` for the user, ``code`` to exit with."""

    def __init__(self, message: str, code: int, host: Host) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.host = host


def apply_overrides(host: Host, system_prompt: str | None, digest: bool | None) -> None:
    """Command-line prompt switches win over the config (for this command only)."""
    if system_prompt is not None:
        host.config.system_prompt = system_prompt
    if digest is not None:
        host.config.prompt.digest = digest


def command_host(state: CliState, opts: TurnOptions) -> Host:
    """The host of the command line's engine, agent, permissions and trace."""
    return state.host(engine=opts.engine, agent=opts.agent, permissions=opts.permissions, trace=opts.trace)


def open_host(state: CliState, opts: TurnOptions, host: Host | None = None) -> tuple[Host, EngineT]:
    """The host with the command line's overrides and its engine loaded; rules
    that cannot be used (exit 2) and a ``--resume`` of a session the engine
    does not know (exit 4) are refused.
    Raises :class:`SetupFailed`; each command reports it its own way (a JSON
    consumer still gets its closing document). ``host``: one the command
    built already (:func:`command_host`)."""
    from agy_host.engine.base import EngineError

    host = host or command_host(state, opts)
    apply_overrides(host, opts.system_prompt, opts.digest)
    if opts.answers:
        from agy_host.service.answer_rules import AnswersFileError, load_answers

        try:
            host.answer_rules = load_answers(Path(opts.answers))
        except AnswersFileError as exc:
            raise SetupFailed(str(exc), ExitCode.USAGE, host) from exc
    from agy_host.service.tool_lists import entries

    host.allowed_tools = entries(opts.allow_tools, "--allow-tool")
    host.disallowed_tools = entries(opts.deny_tools, "--deny-tool")
    problem = host.rules_problem()
    if problem:
        raise SetupFailed(problem, ExitCode.USAGE, host)
    try:
        engine = host.load_engine()
    except EngineError as exc:
        raise SetupFailed(str(exc), ExitCode.ERROR, host) from exc
    if opts.resume and host.store.get(engine.store_key(opts.session)) is None:
        listing = ", ".join(host.session_names(engine)) or "none"
        message = f"no such session {opts.session!r} on engine {engine.ENGINE_NAME!r} (known: {listing})"
        raise SetupFailed(message, ExitCode.NO_SUCH_SESSION, host)
    from agy_host.runtime.tool_reach import tools_problem

    unreachable = tools_problem(host, engine)  # host tools no agent would see (exit 1)
    if unreachable:
        raise SetupFailed(unreachable, ExitCode.ERROR, host)
    return host, engine


def prompt_blocks(host: Host, engine: EngineT, opts: TurnOptions, prompt: str) -> list[PromptBlock]:
    """The prompt's blocks: its text, ``@path`` and ``--file`` resources,
    ``--image`` images, checked against what the engine takes (exit 2).
    Each attached file is told on stderr (not with ``--format quiet``), and
    an ``@path`` sent as text is warned about."""
    from agy_host.runtime.prompt_input import PromptInputError, prepare

    def note(level: str, message: str) -> None:
        if level == "warning":
            host.warn(message)
        elif opts.fmt != "quiet":
            typer.echo(f"agy-host: {message}", err=True)

    try:
        return prepare(
            prompt,
            engine,
            cwd=opts.cwd,
            files=opts.files,
            images=opts.images,
            max_bytes=host.config.prompt.max_attachment_bytes,
            note=note,
        )
    except PromptInputError as exc:
        raise SetupFailed(str(exc), ExitCode.USAGE, host) from exc


def renderer_factory(host: Host, fmt: str) -> RendererFactory:
    """The ``--format`` renderer, or exit 2 naming the ones there are."""
    renderers = host.plugins.renderers()
    factory = renderers.get(fmt)
    if factory is None:
        fail(f"unknown --format {fmt!r}; available: {', '.join(sorted(renderers))}", ExitCode.USAGE)
    return factory


def build_renderer(host: Host, opts: TurnOptions, factory: RendererFactory) -> tuple[Renderer, DiffSource]:
    """A renderer on stdout that may draw diffs of edits (through the
    command's plugins, against the agent's working directory), and the
    diff source the runtime asks whether anyone draws them."""
    import sys

    from agy_host.contract.rendering import DiffSource, RenderOptions

    diffs = DiffSource(host.plugins.render_diff, opts.cwd)
    options = RenderOptions(stream=sys.stdout, color=sys.stdout.isatty(), verbose=opts.verbose, diffs=diffs)
    return factory(options), diffs


#: Parameters that reach :class:`TurnOptions` under their own name, unchanged.
_PASSED = (
    "no_wait",
    "engine",
    "agent",
    "model",
    "effort",
    "mode",
    "fmt",
    "permissions",
    "skip_permissions",
    "verbose",
    "digest",
    "max_tokens",
    "max_cost",
)


__all__ = [
    "SESSION_HELP",
    "AddDirs",
    "AllowTool",
    "DenyTool",
    "MaxCost",
    "MaxTokens",
    "NoWait",
    "Agent",
    "Answers",
    "Cwd",
    "Digest",
    "Effort",
    "Engine",
    "Files",
    "Images",
    "KeepAlive",
    "Inactivity",
    "Mode",
    "Model",
    "Permissions",
    "Resume",
    "Session",
    "SetupFailed",
    "SkipPermissions",
    "SystemPrompt",
    "Timeout",
    "Trace",
    "TurnOptions",
    "Verbose",
    "build_renderer",
    "command_host",
    "common",
    "open_host",
    "prompt_blocks",
    "renderer_factory",
]
