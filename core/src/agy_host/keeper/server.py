"""The keeper process: warm sessions served to commands over a Unix socket.

One keeper per user and build. It accepts a connection, checks that the peer
runs as the same user (``SO_PEERCRED``), reads a :class:`~wire.Hello` (a
client of another build is refused, never served), then one request:

* ``run``: the session's turn, on its warm session (started when there is
  none, replaced when the command's profile differs or its agent died).
  A new warm session joins the agent of others with equal settings where
  the engine runs several conversations in one process (the harness), else
  gets an agent of its own (:mod:`agy_host.keeper.shared`).
  One turn at a time per session: a second command waits, told so, or is
  refused at once with ``no_wait`` (exit 7). The turn's events, permission
  requests and questions go to this client; its ``interrupt`` aborts the
  turn. A client that goes away mid-turn gets its turn aborted (the agent
  gets its cancel now, not when the turn would have ended) and the session
  stays warm.
* ``status``, ``stop``, ``cancel``: for ``agy-host sessions``.

A warm session ends when it has been idle for its keep-alive (the last
command's ``keep_alive_s``); the keeper ends when it has no warm session and
no client for :data:`EXIT_WHEN_EMPTY_S`. A garbage or hostile client gets an
error and is dropped; the keeper goes on.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

from agy_host.contract.events import Notice
from agy_host.exit_codes import ExitCode
from agy_host.keeper import wire
from agy_host.keeper.profile import differences, profile_of
from agy_host.keeper.relay import Relay
from agy_host.keeper.shared import Agent, share_key
from agy_host.keeper.warm import WarmSession

#: With no warm session and no client for this long, the keeper exits.
EXIT_WHEN_EMPTY_S = 10.0
#: A client must say hello within this (a silent connection is dropped).
HELLO_TIMEOUT_S = 5.0
#: After its client left mid-turn, the turn gets this long to end after the
#: abort before the keeper stops waiting for it (the agent is then restarted).
ABANDONED_GRACE_S = 3.0
#: How often idle sessions are looked at.
REAP_EVERY_S = 0.5
#: How often the keeper looks whether agy-host was upgraded under it.
RECHECK_BUILD_S = 5.0
#: The exit code of ``--no-wait`` on a busy session (the turn lock's, docs/usage.md).
SESSION_BUSY = 7


class Keeper:
    def __init__(self, build: str) -> None:
        self.build = build
        self.sessions: dict[str, WarmSession] = {}
        #: Agents other sessions may join, by their share key.
        self.agents: dict[str, Agent] = {}
        self.clients = 0
        self.started = time.time()
        self._empty_since = time.monotonic()
        self._nursery: trio.Nursery | None = None
        self._starting = trio.Lock()

    # -- the loop ------------------------------------------------------------------------

    async def serve(self, listener: trio.SocketListener) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._reap, nursery.cancel_scope)
            nursery.start_soon(self._signals, nursery.cancel_scope)
            await trio.serve_listeners(self._connection, [listener], handler_nursery=nursery)

    async def _signals(self, scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as received:
            async for _ in received:
                await self.stop_all()
                scope.cancel()
                return

    async def _reap(self, scope: trio.CancelScope) -> None:
        next_look = time.monotonic() + RECHECK_BUILD_S
        while True:
            await trio.sleep(REAP_EVERY_S)
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + RECHECK_BUILD_S
                if await self._replaced(scope):
                    return
            for name, warm in list(self.sessions.items()):
                if warm.expired:
                    log(f"session {name!r}: idle {warm.idle_s:.0f}s, ending its agent")
                    self.sessions.pop(name, None)
                    await warm.close()
            if self.sessions or self.clients:
                self._empty_since = time.monotonic()
            elif time.monotonic() - self._empty_since >= EXIT_WHEN_EMPTY_S:
                log("nothing warm and no client: exiting")
                scope.cancel()
                return

    async def _replaced(self, scope: trio.CancelScope) -> bool:
        """agy-host was upgraded (or its code changed) under this keeper: a
        newer command never talks to it (another build, another socket), so
        once none of its sessions runs a turn it ends its agents and exits."""
        from agy_host.keeper.place import build_stamp

        try:
            current = build_stamp()  # a stat of core's files: a millisecond
        except Exception:
            return False
        if current == self.build or any(w.running for w in self.sessions.values()):
            return False
        log(f"the installed code is build {current} now, not {self.build}: ending warm agents and exiting")
        await self.stop_all()
        scope.cancel()
        return True

    async def stop_all(self) -> int:
        count = 0
        for name in list(self.sessions):
            count += await self.stop(name)
        return count

    async def stop(self, name: str, *, only_idle: bool = False) -> int:
        warm = self.sessions.get(name)
        if warm is None or (only_idle and warm.running):
            return 0
        if warm.running and warm.runtime is not None:
            warm.runtime.abort("stopped")
        async with warm.turn_lock:
            if self.sessions.get(name) is warm:
                del self.sessions[name]
            await warm.close()
        return 1

    # -- one connection --------------------------------------------------------------------

    async def _connection(self, stream: trio.SocketStream) -> None:
        self.clients += 1
        frames = wire.FrameStream(stream)
        try:
            await self._serve_client(stream, frames)
        except (wire.FrameError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log(f"dropped a client: {exc}")
        except Exception as exc:  # a bug in one connection must not end the warm agents of all
            log(f"a client's request failed: {type(exc).__name__}: {exc!r}")
        finally:
            self.clients -= 1
            self._empty_since = time.monotonic()
            await frames.aclose()

    async def _serve_client(self, stream: trio.SocketStream, frames: wire.FrameStream) -> None:
        uid = peer_uid(stream)
        if uid is not None and uid != os.getuid():
            log(f"refused a client of uid {uid}")
            return
        with trio.move_on_after(HELLO_TIMEOUT_S):
            first = await frames.receive_raw()
        if first is None:
            return
        hello = wire.decode_for_keeper(first)
        if not isinstance(hello, wire.Hello):
            raise wire.FrameError(f"expected hello, got {type(hello).__name__}")
        if hello.wire != wire.WIRE_VERSION or hello.build != self.build:
            await frames.send(
                wire.Refused(reason=f"this keeper serves build {self.build}, not {hello.build}", code=ExitCode.ERROR)
            )
            return
        await frames.send(wire.Welcome(wire=wire.WIRE_VERSION, build=self.build, pid=os.getpid()))
        raw = await frames.receive_raw()
        if raw is None:
            return
        request = wire.decode_for_keeper(raw)
        label = f"pid {hello.pid}" + (f" ({hello.command})" if hello.command else "")
        if isinstance(request, wire.RunTurn):
            await self._turn(frames, request, label)
        elif isinstance(request, wire.Status):
            await frames.send(self.status(request.session))
        elif isinstance(request, wire.Stop):
            if request.session:
                count = await self.stop(request.session, only_idle=request.only_idle)
            else:
                count = await self.stop_all()
            if request.session and not count:
                message = f"no warm agent for session {request.session!r}; nothing to stop"
            else:
                message = f"stopped {count} warm agent(s)"
            await frames.send(wire.Done(message=message, count=count))
        elif isinstance(request, wire.Cancel):
            warm = self.sessions.get(request.session)
            if warm is not None and warm.running and warm.runtime is not None:
                warm.runtime.abort("cancelled from another command")
                await frames.send(wire.Done(message=f"cancelled the turn of session {request.session!r}", count=1))
            elif warm is not None:
                message = f"no turn is running on session {request.session!r}; nothing to cancel"
                await frames.send(wire.Done(message=message, count=0))
            else:
                await frames.send(
                    wire.Refused(reason=f"no warm session {request.session!r}", code=ExitCode.NO_SUCH_SESSION)
                )
        else:
            raise wire.FrameError(f"unexpected {type(request).__name__} as a request")

    def status(self, only: str | None) -> wire.StatusReply:
        found = []
        for name, warm in sorted(self.sessions.items()):
            if only is not None and name != only:
                continue
            engine = warm.runtime.engine if warm.runtime is not None else None
            found.append(
                wire.WarmInfo(
                    session=name,
                    warm=warm.alive,
                    engine=engine.ENGINE_NAME if engine is not None else "",
                    agent=engine.agent_label() if engine is not None else "",
                    model=warm.model,
                    agent_pid=warm.agent_pid(),
                    idle_s=round(warm.idle_s, 1),
                    keep_alive_s=warm.keep_alive_s,
                    turn_running=warm.running,
                    turns=warm.turns,
                    attached=warm.relay.label if warm.relay is not None else "",
                    cwd=warm.cwd,
                    shared_with=sorted(n for n in warm.agent.lanes if n != name),
                )
            )
        return wire.StatusReply(keeper_pid=os.getpid(), build=self.build, started_s=self.started, sessions=found)

    # -- a turn ------------------------------------------------------------------------------

    async def _warm_for(self, request: wire.RunTurn, tell: Callable[[str], None] | None = None) -> WarmSession:
        """The session's warm session if it fits this command, else a new one
        (the old one ended: another engine, agent, cwd or environment, or its
        agent died). A session running a turn is returned as it is: the
        caller waits for it, and replaces it afterwards when it does not fit.
        ``tell``: how the command learns why its warm agent was replaced."""
        assert self._nursery is not None
        async with self._starting:
            warm = self.sessions.get(request.session)
            if request.warm_only:
                return _served_thin(warm, request)
            if warm is not None and not warm.running and _stale(warm, request):
                if warm.profile != _profile(request):
                    differ = differences(warm, request.cwd, request.host)
                    why = f"its warm agent was started with other settings: {differ}"
                    if tell is not None:
                        tell(f"session {request.session!r}: {why}; that agent ends and a new one starts")
                elif warm.outdated():
                    why = "another process ran a turn on it since"
                else:
                    why = "its agent is gone"
                log(f"session {request.session!r}: {why}; starting cold")
                self.sessions.pop(request.session, None)
                await warm.close()
                warm = None
            if warm is None:
                agent = await self._agent_for(request)
                warm = WarmSession(request.session, request.cwd, request.host, request.keep_alive_s, agent)
                await self._nursery.start(warm.hold)
                self.sessions[request.session] = warm
            return warm

    async def _agent_for(self, request: wire.RunTurn) -> Agent:
        """The agent a new warm session runs on: the live one of sessions
        with equal settings where its engine runs several conversations,
        else a new one (shared from then on where the engine allows)."""
        assert self._nursery is not None
        key = share_key(request.cwd, request.host)
        agent = self.agents.get(key) if key is not None else None
        if agent is not None and agent.usable:
            log(f"session {request.session!r}: joins the agent of {', '.join(sorted(agent.lanes)) or 'no session'}")
            return agent
        agent = Agent(request.cwd, request.host, key, log)
        await self._nursery.start(agent.hold)
        if key is not None and agent.shares:
            self.agents[key] = agent  # a dead or closing one it replaces ends with its last session
        return agent

    async def _turn(self, frames: wire.FrameStream, request: wire.RunTurn, label: str) -> None:
        told = False
        notes: list[str] = []
        while True:
            try:
                warm = await self._warm_for(request, notes.append)
            except NotWarm as exc:
                await frames.send(wire.Refused(reason=str(exc), fallback=True))
                return
            except Exception as exc:
                error = f"the keeper could not open the session: {type(exc).__name__}: {exc}"
                await frames.send(wire.TurnDone(error=error))
                return
            for note in notes:
                await frames.send(wire.Event(event=Notice(level="info", message=note, code="warm-replaced")))
            notes.clear()
            if warm.running:
                holder = warm.relay.label if warm.relay is not None else "another command"
                if request.no_wait:
                    reason = f"session {request.session!r} is running a turn for {holder}"
                    await frames.send(wire.Refused(reason=reason, code=SESSION_BUSY))
                    return
                if not told:
                    told = True
                    waiting = Notice(
                        level="info",
                        message=f"waiting for session {request.session!r}: a turn is running for {holder} "
                        "(Ctrl-C to stop waiting, --no-wait to fail instead)",
                        code="session-busy",
                    )
                    await frames.send(wire.Event(event=waiting))
            if not await self._take_turn(frames, request, warm):
                return  # the client left, or stopped waiting: nothing was sent
            try:
                if self.sessions.get(request.session) is not warm or warm.runtime is None or _stale(warm, request):
                    continue  # replaced, ended or unfit while this command waited: look again
                await self._run_attached(frames, request, label, warm)
                if warm.keeps_always:
                    log(f"session {request.session!r}: its agent keeps an 'always' answer; not kept warm")
                    if self.sessions.get(request.session) is warm:
                        del self.sessions[request.session]
                    await warm.close()
                return
            finally:
                warm.turn_lock.release()

    async def _take_turn(self, frames: wire.FrameStream, request: wire.RunTurn, warm: WarmSession) -> bool:
        """Take ``warm``'s turn lock for this client; ``False`` (not taken) when
        the client left or interrupted while it waited, so nothing is sent on
        its behalf: an interrupt is answered as a cold command that stops
        waiting ends (aborted, exit 130, nothing sent)."""
        from agy_host.runtime.unstarted_turns import gave_up_waiting

        lock = warm.turn_lock
        started = time.monotonic()
        taken = False
        with trio.CancelScope() as waiting:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_when_readable, frames, waiting)
                await lock.acquire()
                taken = True
                nursery.cancel_scope.cancel()
        if taken:
            return True
        raw = await frames.receive_raw()
        if raw is None:
            log(f"session {request.session!r}: a client left while it waited; nothing was sent")
            return False
        frame = wire.decode_for_keeper(raw)
        if not isinstance(frame, wire.Interrupt):
            raise wire.FrameError(f"unexpected {type(frame).__name__} while the turn waits")
        result = gave_up_waiting(request.session, time.monotonic() - started)
        await frames.send(wire.TurnDone(result=result))
        return False

    async def _run_attached(
        self, frames: wire.FrameStream, request: wire.RunTurn, label: str, warm: WarmSession
    ) -> None:
        from agy_host.runtime.session import TurnSettings

        settings = TurnSettings(**{f: getattr(request.settings, f) for f in request.settings.__struct_fields__})
        relay = Relay(frames, label, rebuild_answer=request.rebuild_answer)
        result = None
        was_warm = False
        error = ""
        reader = trio.CancelScope()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.writer)
            nursery.start_soon(self._client_side, reader, frames, relay, warm)
            try:
                result, was_warm = await warm.run(relay, request, settings)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                log(f"session {request.session!r}: the turn failed: {error}")
            finally:
                relay.finish()  # the writer sends the rest, then ends
                reader.cancel()
        if not relay.gone.is_set():
            if result is not None and not request.result_text:
                result = msgspec.structs.replace(result, response="")
            await frames.send(wire.TurnDone(result=result, error=error, warm=was_warm))
        relay.close()

    async def _client_side(
        self, scope: trio.CancelScope, frames: wire.FrameStream, relay: Relay, warm: WarmSession
    ) -> None:
        """What the client sends during its turn: answers and interrupts. Its
        going away aborts the turn (and then stops waiting for it)."""
        with scope:
            await self._read_client(frames, relay, warm)

    async def _read_client(self, frames: wire.FrameStream, relay: Relay, warm: WarmSession) -> None:
        runtime = warm.runtime
        try:
            while True:
                raw = await frames.receive_raw()
                if raw is None:
                    break
                frame = wire.decode_for_keeper(raw)
                if isinstance(frame, wire.PermissionAnswer):
                    relay.answered(frame.id, frame.decision)
                elif isinstance(frame, wire.QuestionAnswer):
                    relay.answered(frame.id, frame.answer)
                elif isinstance(frame, wire.ToolAnswer):
                    relay.answered(frame.id, frame.result)
                elif isinstance(frame, wire.ToolChecked):
                    relay.answered(frame.id, frame.verdict)
                elif isinstance(frame, wire.Interrupt) and runtime is not None:
                    sig = getattr(signal.Signals, frame.signal, None) if frame.signal else None
                    runtime.interrupt(sig)
        except (wire.FrameError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log(f"session {warm.name!r}: the client's side failed: {exc}")
        relay.close()
        if runtime is not None and runtime.running:
            log(f"session {warm.name!r}: its client left mid-turn; aborting the turn")
            runtime.abort("the command went away")
            await trio.sleep(ABANDONED_GRACE_S)
            if runtime.running:
                runtime.stop_waiting()


async def _cancel_when_readable(frames: wire.FrameStream, scope: trio.CancelScope) -> None:
    await frames.wait_readable()
    scope.cancel()


def _profile(request: wire.RunTurn) -> str:
    return profile_of(request.session, request.cwd, request.host)


class NotWarm(Exception):
    """A ``warm_only`` request (the thin client's) this keeper does not serve;
    the command takes its normal path, which may start the agent."""


def _served_thin(warm: WarmSession | None, request: wire.RunTurn) -> WarmSession:
    """The warm session a ``warm_only`` request runs on, else :class:`NotWarm`
    saying why. Served only when the command's normal path would have had
    nothing more to say or do on its own side: the agent is warm and fits,
    the session's binding is in the store (else the normal path may note that
    a new conversation starts), and no installed plugin registers renderers or
    permission policies (the thin client draws and answers with the built-in
    ones). A session busy with another command's turn is returned as it is:
    the caller waits for it and asks again."""
    from agy_host.plugins import BUILTIN_PLUGINS

    if warm is None:
        raise NotWarm(f"session {request.session!r} has no warm agent")
    if warm.running:
        return warm
    runtime, host = warm.runtime, warm.host
    if runtime is None or host is None or runtime.layer is None or _stale(warm, request):
        raise NotWarm(f"session {request.session!r} has no warm agent that fits this command")
    try:
        bound = host.store.get(runtime.engine.store_key(request.session)) is not None
    except Exception as exc:  # the normal path reports a store it cannot read
        raise NotWarm(f"the session store cannot be read: {exc}") from exc
    if not bound:
        raise NotWarm(f"session {request.session!r} has no conversation binding in the store")
    hook = host.plugins.pm.hook
    for caller in (hook.agy_host_register_renderers, hook.agy_host_register_permission_policies):
        for impl in caller.get_hookimpls():
            if impl.plugin_name not in BUILTIN_PLUGINS:
                raise NotWarm(f"plugin {impl.plugin_name!r} draws or answers on the command's side")
    return warm


def _stale(warm: WarmSession, request: wire.RunTurn) -> bool:
    """The warm session no longer fits: other settings, or its agent died."""
    started = warm.runtime is not None and warm.runtime.layer is not None
    return warm.profile != _profile(request) or (started and not warm.alive) or warm.outdated()


def peer_uid(stream: trio.SocketStream) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``);
    ``None`` where the platform does not say."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        raw = stream.socket.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


def log(message: str) -> None:
    """One line to the keeper's log (its stderr)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} keeper[{os.getpid()}]: {message}", flush=True)


async def listen(path: Path) -> trio.SocketListener:
    """A listening socket at ``path`` (0600; a stale file there is replaced)."""
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)  # stale: the caller holds the build's lock, so no keeper listens there
    except FileNotFoundError:
        pass
    old = os.umask(0o177)
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    return trio.SocketListener(sock)


__all__ = ["EXIT_WHEN_EMPTY_S", "Keeper", "listen", "log", "peer_uid"]
