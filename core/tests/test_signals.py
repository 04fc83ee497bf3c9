"""CommandSignals: which signal goes where. Pure unit tests (the session is a
stand-in, and ``leave_now``'s ``os._exit`` is replaced); the real
processes are in ``tests/reliability/test_signals.py``."""

from __future__ import annotations

import signal

import pytest

from agy_host.runtime import signals as signals_module
from agy_host.runtime.signals import CommandSignals, signal_exit_code


class FakeRuntime:
    def __init__(self, running: bool) -> None:
        self.running = running
        self.got: list[signal.Signals | None] = []

    def interrupt(self, sig: signal.Signals | None = None) -> bool:
        self.got.append(sig)
        return self.running


class Left(Exception):
    pass


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What leaving did, in order: ``"kill"`` (every agent group), then the exit code."""
    done: list[object] = []

    def fake_exit(code: int) -> None:
        done.append(code)
        raise Left

    def fake_kill() -> int:
        done.append("kill")
        return 1

    monkeypatch.setattr(signals_module.os, "_exit", fake_exit)
    monkeypatch.setattr("agy_host.engine.process.kill_every_group", fake_kill)
    return done


def test_exit_codes_are_the_signals_as_a_shell_gives_them() -> None:
    assert signal_exit_code(signal.SIGTERM) == 143
    assert signal_exit_code(signal.SIGHUP) == 129
    assert signal_exit_code(None) == 130
    watch = CommandSignals(lambda: None)
    assert watch.exit_code(0) == 0
    watch.terminated = signal.SIGHUP
    assert watch.exit_code(0) == 129


def test_a_running_turn_gets_the_signal_and_sigterm_is_remembered(exits: list[object]) -> None:
    runtime = FakeRuntime(running=True)
    idle: list[str] = []
    watch = CommandSignals(lambda: runtime, lambda: idle.append("idle"))  # type: ignore[arg-type,return-value]
    watch.deliver(signal.SIGINT)
    watch.deliver(signal.SIGTERM)
    watch.deliver(signal.SIGHUP)
    assert runtime.got == [None, signal.SIGTERM, signal.SIGHUP]
    assert watch.terminated is signal.SIGTERM  # the first ending signal decides the exit code
    assert idle == [] and not watch.leaving and exits == []


def test_between_turns_sigterm_calls_on_terminate_and_the_next_signal_leaves_now(exits: list[object]) -> None:
    runtime = FakeRuntime(running=False)
    calls: list[str] = []
    watch = CommandSignals(
        lambda: runtime,  # type: ignore[arg-type,return-value]
        lambda: calls.append("idle"),
        lambda: calls.append("terminate"),
    )
    watch.deliver(signal.SIGTERM)
    assert calls == ["terminate"] and watch.leaving
    with pytest.raises(Left):
        watch.deliver(signal.SIGINT)
    assert exits == ["kill", 143]  # groups killed first; SIGTERM came first: its code


def test_sigint_between_turns_calls_on_idle_and_defaults_stand_in_for_on_terminate(exits: list[object]) -> None:
    calls: list[str] = []
    watch = CommandSignals(lambda: None, lambda: calls.append("idle"))
    watch.deliver(signal.SIGINT)
    assert calls == ["idle"]
    other = CommandSignals(lambda: None, lambda: calls.append("idle-2"))
    other.deliver(signal.SIGHUP)
    assert calls == ["idle", "idle-2"] and other.terminated is signal.SIGHUP


def test_a_command_that_is_leaving_leaves_at_once_on_any_signal(exits: list[object]) -> None:
    watch = CommandSignals(lambda: FakeRuntime(running=True))  # type: ignore[arg-type,return-value]
    watch.leaving = True  # the turn is over; the teardown runs
    with pytest.raises(Left):
        watch.deliver(signal.SIGINT)
    assert exits == ["kill", 130]
