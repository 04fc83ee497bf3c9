"""Answers given "always": remembered by the host, per session and tool.

When a person (or a policy) picks an agent's ``allow_always`` or
``reject_always`` option, some agents remember it and never ask again;
others ask again at the next call, and the harness's dynamic policy rules
have no memory at all. Remembering here makes "always" mean the same on
every engine: the next request of the same session for the same tool is
answered with the same kind of option, without asking, and the permission
card says so (policy ``remembered``).

What "the same tool" means is deliberately narrow. A request that names its
tool (``run_command``, an MCP tool) is keyed by that name; one that does not
(an ACP agent that sends only a kind and a title, like the Gemini CLI's
shell requests) is keyed by kind *and* title, so "always" for ``git status``
never allows ``rm -rf``. Questions
(``interaction_`` requests) are never remembered: each is asked anew. The
memory lives as long as the host: one command, one ``chat``, one Python
``Session``; nothing is written to disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from agy_host.contract.permissions import PermissionDecision, PermissionRequest, first_of_kind

#: The option kinds that ask to be remembered, and the family each belongs to.
ALWAYS_KINDS = {"allow_always": "allow", "reject_always": "reject"}


@dataclass(frozen=True)
class Remembered:
    """One remembered answer: ``allow`` or ``reject``, and what was chosen."""

    family: str
    chosen: str


#: Names an engine gives a tool it could not name (ACP falls back to the kind).
_UNNAMED = {"", "tool", "other", "question"}


def tool_key(request: PermissionRequest) -> str:
    """What a remembered answer covers within its session (see the module doc).
    A name that is only the kind again (an ACP agent that sent a kind and a
    title) does not count as a name: "always" for one ``execute`` request
    must not cover every command."""
    name = request.tool_name
    if name and name not in _UNNAMED and name != request.tool_kind:
        return name
    return f"{request.tool_kind}: {request.title}"


class RememberedAnswers:
    """The host's "always" answers, by (session, tool)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], Remembered] = {}

    def __len__(self) -> int:
        return len(self._answers)

    @staticmethod
    def key(request: PermissionRequest) -> tuple[str, str] | None:
        """What an answer to ``request`` would be remembered under; ``None``
        for a question (never remembered)."""
        return None if request.is_question else (request.session, tool_key(request))

    def recall(self, request: PermissionRequest) -> PermissionDecision | None:
        """The remembered answer to ``request``, or ``None`` (ask as usual).
        The option sent is the agent's own ``*_always`` one when offered
        again (the agent then remembers too), else one of the same family."""
        key = self.key(request)
        found = self._answers.get(key) if key is not None else None
        if found is None:
            return None
        option = first_of_kind(request.options, f"{found.family}_always") or first_of_kind(
            request.options, found.family
        )
        if option is None:
            return None  # the agent offers nothing of that family this time: ask
        return PermissionDecision(
            option_id=option.option_id,
            policy="remembered",
            reason=f"{found.chosen!r} was chosen for {tool_key(request)} earlier in session {request.session!r}",
        )

    def note(self, request: PermissionRequest, decision: PermissionDecision) -> bool:
        """Remember ``decision`` when it chose an ``*_always`` option; whether it did."""
        if request.is_question or decision.option_id is None or decision.policy == "remembered":
            return False
        option = next((o for o in request.options if o.option_id == decision.option_id), None)
        family = ALWAYS_KINDS.get(option.kind) if option is not None else None
        if option is None or family is None:
            return False
        self._answers[(request.session, tool_key(request))] = Remembered(family, option.name or option.option_id)
        return True

    def of_session(self, session: str) -> list[tuple[str, Remembered]]:
        """The session's remembered answers, by tool, oldest first."""
        return [(tool, found) for (name, tool), found in self._answers.items() if name == session]

    def forget(self, session: str | None = None) -> None:
        """Drop every remembered answer, or those of one session."""
        if session is None:
            self._answers.clear()
            return
        for key in [k for k in self._answers if k[0] == session]:
            del self._answers[key]


__all__ = ["ALWAYS_KINDS", "Remembered", "RememberedAnswers", "tool_key"]
