"""The chat's REPL: the :class:`Chat` that reads messages, runs turns and
hands slash commands to :mod:`agy_host.cli.chat_slash`; ``agy-host chat``
(:mod:`agy_host.cli.chat_cmd`) builds it, with the slash commands' dispatcher,
so the commands can see the chat without the chat importing them.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import IO, TYPE_CHECKING

from agy_host.cli.exit_codes import ExitCode
from agy_host.cli.turn_options import TurnOptions

if TYPE_CHECKING:
    from agy_host.cli.line_editor import LineEditor, PipeReader
    from agy_host.cli.state import CliState
    from agy_host.cli.warm_turn import WarmRuntime
    from agy_host.contract.rendering import Renderer
    from agy_host.runtime.host import Host
    from agy_host.runtime.session import SessionRuntime, TurnSettings
    from agy_host.runtime.signals import CommandSignals
    from agy_host.runtime.turn_layer import TurnResult


class ChatOptions(TurnOptions, kw_only=True):
    """``chat``'s options: the shared turn options (files are attached per message)."""


class Chat:
    """The REPL: reads messages, runs turns, dispatches slash commands."""

    def __init__(
        self,
        state: CliState,
        host: Host,
        opts: ChatOptions,
        renderer: Renderer,
        editor: LineEditor | PipeReader,
        *,
        slash: Callable[[Chat, str], Awaitable[None]],
        out: IO[str] | None = None,
    ) -> None:
        import trio  # the CLI imports trio only for commands that run turns

        self.state = state
        self.host = host
        self.opts = opts
        self.renderer = renderer
        self.editor = editor
        #: Runs a slash command (:func:`agy_host.cli.chat_slash.dispatch`, given by the command).
        self.slash = slash
        self.out = out or sys.stdout
        self.session = opts.session
        self.cwd = opts.cwd
        self.settings: TurnSettings = opts.settings()
        #: The command's own runtime, or the session's warm agent in the keeper.
        self.runtime: SessionRuntime | WarmRuntime | None = None
        self.last_result: TurnResult | None = None
        self.leaving = False
        #: The chat's reading and turns; SIGTERM/SIGHUP between turns cancel it.
        self.reading = trio.CancelScope()
        self.signals: CommandSignals | None = None
        self.color = bool(getattr(self.out, "isatty", lambda: False)()) and not host.env.get("NO_COLOR")

    # -- output ------------------------------------------------------------------

    def say(self, text: str = "", style: str = "") -> None:
        codes = {"dim": "2", "bold": "1", "red": "31", "yellow": "33", "green": "32", "cyan": "36"}
        if style and self.color:
            text = "\n".join(f"\x1b[{codes[style]}m{line}\x1b[0m" for line in text.split("\n"))
        self.out.write(text + "\n")
        self.out.flush()

    def prompt(self) -> str:
        engine = self.runtime.engine.ENGINE_NAME if self.runtime is not None else "?"
        if self.color:
            return f"\x1b[2m{engine}\x1b[0m \x1b[1;36m›\x1b[0m "
        return f"{engine} › "

    def banner(self) -> None:
        from agy_host.cli.sessions_cmd import resume_note

        assert self.runtime is not None
        engine = self.runtime.engine
        bound = self.host.store.get(engine.store_key(self.session)) is not None
        label = engine.agent_label()
        agent = f" ({label})" if label != engine.ENGINE_NAME else ""
        self.say(
            f"agy-host chat · {engine.ENGINE_NAME}{agent} · session {self.session}"
            f"{' (continued)' if bound else ' (new)'} · {self.cwd}",
            "bold",
        )
        self.say("/help lists commands · Ctrl-C stops a turn · Ctrl-D leaves", "dim")
        note = resume_note(self.host, engine, self.session)
        if note:
            self.say(note, "yellow")

    # -- the loop ----------------------------------------------------------------

    async def loop(self) -> int:
        while not self.leaving and (self.signals is None or self.signals.terminated is None):
            line = await self.editor.read_line(self.prompt())
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/") and not text.startswith("//"):
                await self.slash(self, text)
                continue
            await self.send(line[1:] if text.startswith("//") else line)
        return ExitCode.OK

    async def send(self, text: str) -> None:
        from agy_host.cli.warm_turn import failure
        from agy_host.keeper.client import KeeperGone, KeeperRefused, KeeperUnavailable
        from agy_host.runtime.prompt_input import PromptInputError, prepare

        assert self.runtime is not None
        try:
            blocks = prepare(
                text,
                self.runtime.engine,
                cwd=self.cwd,
                detect_pasted=True,
                max_bytes=self.host.config.prompt.max_attachment_bytes,
                note=lambda level, message: self.say(message, "yellow" if level == "warning" else "dim"),
            )
        except PromptInputError as exc:
            self.say(f"not sent: {exc}", "red")
            return
        with self.editor.turn_mode():
            try:
                self.last_result = await self.runtime.turn(self.session, blocks, cwd=self.cwd, settings=self.settings)
            except (KeeperGone, KeeperRefused, KeeperUnavailable) as exc:
                # the warm agent's keeper: said here, and the chat goes on
                self.say(f"not answered: {failure(exc)[0]}", "red")
                return
            if self.last_result is None:
                self.say("the agent did not stop; it is restarted for the next turn", "yellow")

    def on_terminate(self) -> None:
        """SIGTERM or SIGHUP between turns: leave the way ``/exit`` does
        (the agent is closed, the binding is already stored)."""
        self.leaving = True
        self.reading.cancel()

    def on_idle_interrupt(self) -> None:
        """SIGINT with no turn running: only a piped chat or agent start-up
        gets one (at the terminal prompt Ctrl-C is a key); leave."""
        self.leaving = True
        raise KeyboardInterrupt

    async def switch(self, host: Host) -> bool:
        """Continue on another engine (its own agent conversation for this
        session); the current one stays up until the new one started."""
        from agy_host.runtime.session import describe_error

        assert self.runtime is not None
        try:
            await self.runtime.switch(host)
        except Exception as exc:
            self.say(f"cannot switch: {describe_error(exc)}", "red")
            return False
        self.host = host
        return True


__all__ = ["Chat", "ChatOptions"]
