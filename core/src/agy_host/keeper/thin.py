"""The warm path's thin client: ``agy-host run --session NAME PROMPT`` on a
warm agent, without the full CLI.

A warm turn costs the keeper about 10 ms; the full command around it cost
about a quarter of a second, mostly imports: typer, trio (about 100 ms
alone), the engine and the plugins. This client does only what a warm turn
needs on the command's side: it reads the command line
(:mod:`~agy_host.keeper.thin_args`) and the config (for
``turn.keep_alive_minutes``), connects to this build's keeper with a
blocking socket, sends the turn with ``warm_only``, draws the events with
the built-in renderers as they come, and ends the way ``run`` ends
(:mod:`agy_host.cli.run_end`): the same output, closing line, ``done``
document and exit code.

It takes a command only when it can do all of it. Otherwise :func:`run`
returns ``None`` before anything was said or ran, and the normal path takes
the command: an unsupported flag or format, a config with something to say,
a permission policy that may refuse to start, tracing, no keeper listening,
or a session the keeper does not hold warm in a way this client can serve
(it answers ``Refused(fallback=True)``: not warm, other settings, no
binding in the store, a plugin that draws or answers on the command's side).

What only the command's host can do is done by building that host when it
is needed: at the first frame this client does not handle itself (a
permission request, a question, a tool call) the connection is handed to
:class:`~agy_host.keeper.client.RemoteRuntime` (trio, the command's broker,
terminal and policy), which follows the turn to its end; an edit card's diff
is drawn through the host's plugins. Signals work as in the full client:
Ctrl-C (SIGTERM, SIGHUP) sends the keeper's ``interrupt`` (abort, then stop
waiting), the third leaves at once; before the turn is sent one ends the
command as interrupted.

``AGY_HOST_THIN=0`` turns it off: the normal path takes every command.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agy_host.keeper import attached, wire
from agy_host.keeper.keep_alive import keep_alive_s
from agy_host.keeper.rebuild import AnswerRebuilder
from agy_host.keeper.thin_args import ThinArgs, parse
from agy_host.service.unattended import chosen_policy

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.events import ToolCard
    from agy_host.contract.rendering import DiffSource, Renderer
    from agy_host.contract.turn_result import TurnResult
    from agy_host.runtime.host import Host

#: The variable that turns the thin client off (``0``).
THIN_ENV = "AGY_HOST_THIN"
#: The signals a command ends on (:mod:`agy_host.runtime.signals`).
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ENDING = (signal.SIGTERM, signal.SIGHUP)
#: Permission policies whose start-up check the thin client knows (``ask``'s
#: may refuse a run without a terminal: then the normal path checks it).
_POLICIES = frozenset({"auto", "deny", "ask", "rules"})
_READ = 1 << 20


def run(args: list[str], env: Mapping[str, str] | None = None) -> int | None:
    """``run``'s exit code when the thin client ran it (``args`` follow the
    word ``run``); ``None``: the normal path takes the command, nothing was
    said or sent."""
    env = os.environ if env is None else env
    if env.get(THIN_ENV, "").strip() == "0" or env.get("AGY_HOST_TRACE", "").strip():
        return None
    if env.get("AGY_HOST_TRACE_HOOKS", "") not in ("", "0"):
        return None
    parsed = parse(args)
    if parsed is None:
        return None
    config = quiet_config(env)
    if config is None:
        return None
    keep = keep_alive_s(parsed.keep_alive_min, config.turn.keep_alive_minutes, named=True)
    if keep <= 0:
        return None
    policy, _ = chosen_policy(parsed.permissions, config.permissions.policy)  # the full CLI's default
    if policy not in _POLICIES or (policy not in {"auto", "deny"} and config.permissions.ask_fallback == "fail"):
        return None
    try:
        request = _request(parsed, env, keep, policy)
    except (KeyError, TypeError, ValueError):  # the wire grew a setting this client does not know
        return None
    return ThinClient(parsed, env, request).run()


def quiet_config(env: Mapping[str, str]) -> Config | None:
    """The command's config, or ``None`` when reading it has something to say
    (a warning, an unreadable or broken file, rules it cannot use): the
    normal path says it, once."""
    import tomllib

    from agy_host import config as config_mod

    path = config_mod.config_path(env)
    try:
        tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None  # left for the normal path, which reports it and moves the file aside
    said: list[str] = []
    loaded = config_mod.load(env, said.append, path)
    if said or loaded.turn.permission_timeout_seconds <= 0:  # the host would warn
        return None
    if loaded.answer or loaded.permissions.rules:
        from agy_host.service.globs import rules_problem

        if rules_problem(loaded, str(path)):
            return None  # the normal path refuses to start (exit 2) and says why
    return loaded


def _request(args: ThinArgs, env: Mapping[str, str], keep_alive_s: float, policy: str) -> wire.RunTurn:
    """The ``run`` frame the full client would send
    (:func:`agy_host.keeper.client.run_request`), asking for a warm agent only;
    ``policy``: the permission policy's name, as the command resolved it."""
    from agy_host.contract.prompt import TextBlock

    settings = args.settings()
    spec = wire.HostSpec(
        env=dict(env),
        engine=args.engine or None,
        agent=args.agent or None,
        permissions=policy,
        system_prompt=args.system_prompt,
        digest=args.digest,
    )
    return wire.RunTurn(
        session=args.session,
        prompt=[TextBlock(text=args.prompt)],
        cwd=args.cwd,
        host=spec,
        settings=wire.Settings(**{name: settings[name] for name in wire.Settings.__struct_fields__}),
        keep_alive_s=keep_alive_s,
        no_wait=args.no_wait,
        warm_only=True,
        result_text=False,  # drawn from the events; ``run`` ends with the rest of the result
        rebuild_answer=True,  # and turn_end's answer too (keeper/rebuild.py)
    )


class _BeforeTheTurn(BaseException):
    """A signal came before the turn was sent: the command ends, interrupted."""


class _Fallback(Exception):
    """The keeper will not serve this command warm: the normal path takes it."""


class ThinClient:
    """One command's warm turn (see the module docstring)."""

    def __init__(self, args: ThinArgs, env: Mapping[str, str], request: wire.RunTurn) -> None:
        self.args = args
        self.env = env
        self.request = request
        self.sock: socket.socket | None = None
        self._buffer = bytearray()
        self._at = 0
        self._wake: tuple[int, int] | None = None
        self._old: dict[signal.Signals, Any] = {}
        #: Signals received and not handled yet (the handler only notes them).
        self._signals: list[int] = []
        self.renderer: Renderer | None = None
        #: What draws each event: the renderer, with turn_end's answer put
        #: back (``keeper/rebuild.py``); handed over with the connection.
        self.draw: AnswerRebuilder | None = None
        #: The renderer's diffs: the keeper renders them (it has the turn's "before" snapshot).
        self.diffs: DiffSource | None = None
        self._host: Host | None = None
        #: The turn was sent: a signal interrupts it (before: it ends the command).
        self.sent = False
        self.interrupts = 0
        #: Waiting for another command's turn on the session (the keeper said so).
        self.queued = False
        self.terminated: signal.Signals | None = None
        self.leaving = False
        self.result: TurnResult | None = None
        self.error = ""
        self.return_code: int | None = None
        self.interrupted = False

    # -- the command ---------------------------------------------------------------------

    def run(self) -> int | None:
        self._watch_signals()
        try:
            if not self._connect():
                self._unwatch_signals()
                return self._ended_before() if self._signals else None
            self.renderer = self._renderer()
            self.draw = AnswerRebuilder(self.renderer.handle)
            try:
                self._send(self.request)
            except OSError as exc:
                self.error = attached.lost(attached.broken(exc))
            else:
                self.sent = True
                self._follow()
        except _Fallback:
            self._close()
            self._unwatch_signals()
            return None
        except _BeforeTheTurn:
            self.interrupted = True
        except Exception as exc:  # a renderer that failed (a closed pipe), as the full client reports it
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._close()
        return self._end()

    def _ended_before(self) -> int:
        """A signal came while connecting and nothing runs: ended, as interrupted."""
        for signum in self._signals:
            if signum in _ENDING and self.terminated is None:
                self.terminated = signal.Signals(signum)
        self.interrupted = True
        return self._end()

    def _end(self) -> int:
        from agy_host.cli.run_end import end_of_run

        self.leaving = True
        for sig in _SIGNALS:
            signal.signal(sig, self._leave_on_signal)
        self._stop_waking()
        if self.renderer is not None:
            try:
                self.renderer.close()
            except Exception as exc:
                _warn(f"the renderer failed while closing: {type(exc).__name__}: {exc}")
        if self._host is not None:
            self._host.close()
        return end_of_run(
            fmt=self.args.fmt,
            session=self.args.session,
            result=self.result,
            error=self.error,
            return_code=self.return_code,
            interrupted=self.interrupted,
            terminated=self.terminated,
        )

    # -- the keeper ------------------------------------------------------------------------

    def _connect(self) -> bool:
        """A greeted connection to this build's keeper; ``False`` when none listens."""
        from agy_host import config as config_mod
        from agy_host.keeper import place

        try:
            directory = place.runtime_dir(self.env, config_mod.state_dir(self.env), create=False)
        except (place.PlaceError, OSError):
            return False
        build = place.build_stamp()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(place.socket_path(directory, build)))
        except OSError:
            sock.close()
            return False
        self.sock = sock
        try:
            self._send(wire.Hello(wire=wire.WIRE_VERSION, build=build, pid=os.getpid(), command=" ".join(sys.argv[:2])))
            got = self._next()
        except (wire.FrameError, OSError):
            return False
        return got is not None and isinstance(got[0], wire.Welcome)

    def _follow(self) -> None:
        """Draw the turn's frames until its end (or hand the connection over)."""
        draw = self.draw
        assert draw is not None
        while True:
            try:
                got = self._next()
            except wire.FrameError as exc:
                self.error = attached.lost(attached.broken(exc))
                return
            except OSError as exc:
                self.error = attached.lost(attached.broken(exc))
                return
            if got is None:
                self.error = attached.lost(attached.KEEPER_ENDED)
                return
            frame, start = got
            if isinstance(frame, wire.Event):
                self.queued = attached.still_queued(self.queued, frame.event)
                draw(frame.event)
            elif isinstance(frame, wire.DiffText):
                if self.diffs is not None:
                    self.diffs.give(frame.call_id, frame.text)
            elif isinstance(frame, wire.Warning_):
                _warn(frame.message)
            elif isinstance(frame, wire.TurnDone):
                if frame.error and frame.result is None:
                    self.error = attached.lost(frame.error)
                else:
                    self.result = frame.result
                    self.interrupted = frame.result is None
                return
            elif isinstance(frame, wire.Refused):
                if frame.fallback and not self.interrupts:
                    raise _Fallback(frame.reason)
                self.error, self.return_code = frame.reason, frame.code
                return
            else:  # a permission request, a question, a tool call: the command's host answers
                self._hand_over(bytes(self._buffer[start:]))
                return

    def _send(self, frame: Any) -> None:
        assert self.sock is not None
        self.sock.sendall(wire.encode(frame))

    def _next(self) -> tuple[wire.ToClient, int] | None:
        """The next frame and where it starts in the buffer; ``None`` at the end of the stream."""
        head = wire.HEADER_SIZE
        while True:
            at = self._at
            if len(self._buffer) - at >= head:
                with memoryview(self._buffer) as view:  # released before the buffer grows
                    end = at + head + wire.frame_length(view[at : at + head])
                    if len(view) >= end:
                        self._at = end
                        return wire.decode_for_client(view[at + head : end]), at
            if not self._fill():
                if len(self._buffer) > self._at:
                    raise wire.FrameError("the keeper closed the connection mid-frame")
                return None

    def _fill(self) -> bool:
        """Read what the keeper sent (handling signals while waiting); ``False`` at its end."""
        sock = self.sock
        assert sock is not None and self._wake is not None
        wake = self._wake[0]
        while True:
            self._handle_signals(self._send)
            ready, _, _ = select.select([sock.fileno(), wake], [], [])
            if wake in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake, 512)
            if sock.fileno() in ready:
                chunk = sock.recv(_READ)
                if not chunk:
                    return False
                if self._at:
                    del self._buffer[: self._at]
                    self._at = 0
                self._buffer += chunk
                return True

    def _close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None

    # -- what needs the command's host ---------------------------------------------------------

    def host(self) -> Host:
        """The host the normal path would have built for this command (made once, when needed)."""
        if self._host is None:
            from agy_host.cli.turn_options import apply_overrides
            from agy_host.runtime.host import Host

            args = self.args
            self._host = Host(env=self.env, engine=args.engine, agent=args.agent, permissions=args.permissions)
            apply_overrides(self._host, args.system_prompt, args.digest)
        return self._host

    def _render_diff(self, card: ToolCard, cwd: str) -> str | None:
        return self.host().plugins.render_diff(card, cwd)

    def _renderer(self) -> Renderer:
        from agy_host.builtins.renderers import agy_host_register_renderers
        from agy_host.contract.rendering import DiffSource, RendererFactory, RenderOptions

        factories: dict[str, RendererFactory] = {}
        agy_host_register_renderers(factories.__setitem__)
        diffs = self.diffs = DiffSource(self._render_diff, self.args.cwd)
        options = RenderOptions(stream=sys.stdout, color=sys.stdout.isatty(), verbose=self.args.verbose, diffs=diffs)
        renderer = factories[self.args.fmt](options)
        # The keeper takes a diff baseline for the turn only when its client draws diffs.
        self.request.host.draws_diffs = diffs.wanted
        return renderer

    def _hand_over(self, pending: bytes) -> None:
        """Follow the rest of the turn with the full client, on this connection:
        ``pending`` (the frame that needs the host, and what came after it) is
        read again there."""
        import trio

        host = self.host()
        self._handle_signals(self._send)  # what came while the host was built
        self._stop_waking()
        sock, self.sock = self.sock, None
        assert sock is not None
        self.result, self.error, self.return_code = trio.run(self._remote, host, sock, pending)
        self.interrupted = self.result is None and not self.error

    async def _remote(
        self, host: Host, sock: socket.socket, pending: bytes
    ) -> tuple[TurnResult | None, str, int | None]:
        import trio

        from agy_host.cli.warm_turn import failure
        from agy_host.keeper.client import KeeperGone, KeeperRefused, RemoteRuntime
        from agy_host.runtime.session import describe_error, say_stderr
        from agy_host.runtime.signals import CommandSignals

        draw = self.draw
        assert draw is not None
        remote = RemoteRuntime(host, sink=draw, say=say_stderr, diffs=self.diffs)
        signals = CommandSignals(lambda: remote)
        frames = wire.FrameStream(trio.SocketStream(trio.socket.from_stdlib_socket(sock)), buffered=pending)
        outcome: tuple[TurnResult | None, str, int | None] = (None, "", None)
        async with trio.open_nursery() as watcher:
            await watcher.start(signals.watch)
            late: list[wire.Interrupt] = []  # signals noted between the hand-over and the watcher's start
            self._handle_signals(late.append)
            signals.terminated = self.terminated
            try:
                for frame in late:
                    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        await frames.send(frame)
                outcome = (await remote.follow(frames, interrupts=self.interrupts), "", None)
            except (KeeperRefused, KeeperGone) as exc:
                outcome = (None, *failure(exc))
            except Exception as exc:
                outcome = (None, describe_error(exc), None)
            finally:
                watcher.cancel_scope.cancel()
        self.terminated = signals.terminated
        return outcome

    # -- signals ---------------------------------------------------------------------------------

    def _watch_signals(self) -> None:
        """Note SIGINT, SIGTERM and SIGHUP (handled between reads, never inside
        a write) and wake the read loop through a pipe."""
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._wake = (read, write)
        for sig in _SIGNALS:
            self._old[sig] = signal.signal(sig, self._note)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def _note(self, signum: int, _frame: object) -> None:
        self._signals.append(signum)

    def _take_signals(self) -> list[int]:
        taken, self._signals = self._signals, []
        return taken

    def _stop_waking(self) -> None:
        if self._wake is not None:
            signal.set_wakeup_fd(-1)
            for fd in self._wake:
                os.close(fd)
            self._wake = None

    def _unwatch_signals(self) -> None:
        self._stop_waking()
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle_signals(self, send: Callable[[wire.Interrupt], None]) -> None:
        """What each noted signal does, as :class:`~agy_host.runtime.signals.CommandSignals`
        and :meth:`RemoteRuntime.interrupt <agy_host.keeper.client.RemoteRuntime.interrupt>`
        do it; ``send`` sends the keeper's ``interrupt``."""
        for signum in self._take_signals():
            sig = signal.Signals(signum)
            ending = sig if sig in _ENDING else None
            if ending is not None and self.terminated is None:
                self.terminated = ending
            if not self.sent:
                raise _BeforeTheTurn
            self.interrupts += 1
            notice = attached.interrupt_notice(self.interrupts, ending, queued=self.queued)
            if notice is None:
                attached.leave_at_once(attached.exit_code_of(ending))
            print(notice, file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                send(wire.Interrupt(signal=ending.name if ending is not None else ""))

    def _leave_on_signal(self, signum: int, _frame: object) -> None:
        """Once the turn is over, a signal leaves at once (``CommandSignals.leave_now``)."""
        sig = signal.Signals(signum)
        if sig in _ENDING and self.terminated is None:
            self.terminated = sig
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(Exception):
            print("agy-host: leaving now", file=sys.stderr, flush=True)
        attached.leave_at_once(attached.exit_code_of(self.terminated or (sig if sig in _ENDING else None)))


def _warn(message: str) -> None:
    """A warning, as the host prints it (:func:`agy_host.runtime.host.stderr_warning`)."""
    print(f"agy-host: warning: {message}", file=sys.stderr, flush=True)


__all__ = ["THIN_ENV", "ThinClient", "quiet_config", "run"]
