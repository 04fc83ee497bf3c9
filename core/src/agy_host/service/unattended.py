"""The default permission policy, and what a request it refused because
nobody could be asked says.

When nobody chose a policy (:func:`chosen_policy`: no ``--permissions``, no
``permissions.policy``, no ``AGY_HOST_PERMISSIONS``, no ``permissions=``)
the policy is ``ask``: it asks the person at the terminal. Where nobody
can be asked (no terminal, CI, stdin not a terminal, a background job, a
Python program without a ``permissions=`` callback) the request fails
closed: it is refused and the turn exits 5. The user did not choose that
refusal, so it must say how to allow next time. Its reason starts with
:data:`NOBODY` and ends with :func:`how_to_allow`, and the turn layer
(:func:`agy_host.runtime.turn_events.closed_error`) makes it the turn's
error: the closing line, ``result.error`` and the ``--format json`` end all
carry it. The reason travels with the decision, so a warm turn, decided in
the command and ended in the keeper, says the same.
"""

from __future__ import annotations

from typing import Literal

#: Who may be asked: a CLI command (its flags) or a Python program (its keywords).
Front = Literal["cli", "python"]

#: The policy when nobody chose one.
DEFAULT_POLICY = "ask"

#: How the reason of such a refusal starts (what the turn layer looks for).
NOBODY = "nobody could be asked"

#: Why a Python program that passed no ``permissions=`` callback is never asked
#: at the terminal by the default policy.
NO_CALLBACK = "the program passed no permissions= callback"

#: Why a CLI command whose stdin is no terminal is not asked by the default
#: policy (a script, a pipe, CI). ``--permissions ask`` asks on ``/dev/tty`` anyway.
NOT_AT_A_TERMINAL = "stdin is not a terminal; --permissions ask asks on /dev/tty even so"


def chosen_policy(flag: str | None, configured: str) -> tuple[str, bool]:
    """The policy a command uses (``flag``: its ``--permissions``, else the
    ``configured`` ``permissions.policy``) and whether anyone chose it;
    nobody did: ``(DEFAULT_POLICY, False)``, which asks only where a person
    is (a command whose stdin is a terminal, never a Python program). One
    rule for the full CLI, the warm thin client and the Python API; a choice
    (``auto``) is never overridden."""
    name = (flag or configured).strip()
    return (name, True) if name else (DEFAULT_POLICY, False)


def how_to_allow(front: Front) -> str:
    """The ways to let the agent run tools without a person, in the words of ``front``."""
    restore = "`agy-host config set permissions.policy auto` to allow by default, as before"
    if front == "python":
        return (
            'To allow: permissions="auto" or a permissions= callback, rules (permissions="rules" with '
            f"[[permissions.rules]]), answers= for questions, or {restore}"
        )
    return (
        "To allow: --permissions auto, rules (--permissions rules with [[permissions.rules]]), "
        f"--answers FILE for questions, or {restore}"
    )


def refused_reason(why: str, outcome: str, front: Front) -> str:
    """The reason of a request refused (``outcome``: the option picked, or
    cancelled) because nobody could be asked (``why``)."""
    return f"{NOBODY} ({why}): {outcome}. {how_to_allow(front)}"


def is_unattended(reason: str) -> bool:
    """The reason is one of :func:`refused_reason`'s (also inside a policy's own words)."""
    return NOBODY in reason


__all__ = [
    "DEFAULT_POLICY",
    "NOBODY",
    "NOT_AT_A_TERMINAL",
    "NO_CALLBACK",
    "Front",
    "chosen_policy",
    "how_to_allow",
    "is_unattended",
    "refused_reason",
]
