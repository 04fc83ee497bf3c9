"""``allowed_tools`` and ``disallowed_tools``: which tools run without the policy.

Each list holds globs over tool names (``run_*``, ``mcp_github_*``) and, with a
``kind:`` prefix, over the kinds agents report (``kind:execute``,
``kind:edit``); case-insensitive, the globs of the answer and permission
rules (:mod:`agy_host.service.globs`: compiled in linear time, within its
bounds, outside them a usage error, exit 2).

They come from three places, all of which apply: the config's
``[permissions] allowed_tools``/``disallowed_tools``, the command line's
``--allow-tool``/``--deny-tool`` (repeatable) and a program's
``allowed_tools=``/``disallowed_tools=``. Every entry keeps where it came
from, so a refusal names the list, the pattern and its source. A tool that
a ``disallowed_tools`` pattern matches is denied, whatever else says so; one
that an ``allowed_tools`` pattern matches is allowed without asking the
permission policy. Neither: the policy decides.

A name or kind longer than globs are matched against
(:data:`~agy_host.service.globs.MAX_MATCHED_CHARS`) is matched by no
pattern (:meth:`ToolLists.unmatchable`): ``allowed_tools`` never allows it,
and where ``disallowed_tools`` has patterns the tool gate refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from agy_host.contract.tool_calls import ListEntry as Entry
from agy_host.service.globs import GlobError, TooLongToMatch, check_rules, field_matcher, unmatchable

#: The prefix of a pattern over kinds rather than names.
KIND = "kind:"
DISALLOWED = "disallowed_tools"
ALLOWED = "allowed_tools"


class Match(msgspec.Struct, frozen=True):
    """A list's pattern that matched a tool."""

    list: str
    entry: Entry

    def reason(self, name: str, kind: str) -> str:
        what = f"kind {kind!r}" if self.entry.pattern.lower().startswith(KIND) else repr(name)
        verb = "denied" if self.list == DISALLOWED else "allowed"
        return f"{name!r} {verb} by {self.list} pattern {self.entry.pattern!r} ({self.entry.source}, matches {what})"


class ToolLists:
    """The two lists, checked and compiled once (:meth:`problem`), matched per call."""

    def __init__(self, allowed: Sequence[Entry] = (), disallowed: Sequence[Entry] = ()) -> None:
        self.allowed = list(allowed)
        self.disallowed = list(disallowed)

    @property
    def active(self) -> bool:
        return bool(self.allowed or self.disallowed)

    def problem(self) -> str | None:
        """Why a list cannot be used (too many patterns, one too long, an empty
        one), or ``None``; every glob is compiled once this passes."""
        for name, entries in ((ALLOWED, self.allowed), (DISALLOWED, self.disallowed)):
            for entry in entries:
                if not _glob(entry.pattern):
                    return f"{name}: the pattern {entry.pattern!r} ({entry.source}) is empty"
            try:
                check_rules(entries, ("pattern",), name)
                for entry in entries:
                    field_matcher(_glob(entry.pattern))
            except GlobError as exc:
                return str(exc)
        return None

    def unmatchable(self, name: str, kind: str) -> str | None:
        """Why no pattern may decide about this tool (its name or kind is too
        long to match), or ``None``."""
        return unmatchable({"name": name, "kind": kind}) if self.active else None

    def match(self, name: str, kind: str) -> Match | None:
        """The pattern that decides about a tool: a ``disallowed_tools`` one
        first (it wins), then an ``allowed_tools`` one; ``None``: neither list
        names it. A tool :meth:`unmatchable` refuses raises
        :class:`~agy_host.service.globs.TooLongToMatch` (never a silent "no match")."""
        too_long = self.unmatchable(name, kind)
        if too_long is not None:
            raise TooLongToMatch(too_long)
        for list_name, entries in ((DISALLOWED, self.disallowed), (ALLOWED, self.allowed)):
            for entry in entries:
                if _matches(entry.pattern, name, kind):
                    return Match(list=list_name, entry=entry)
        return None

    def listed(self, name: str, kind: str) -> bool | None:
        """``False`` disallowed, ``True`` allowed, ``None`` left to the policy."""
        found = self.match(name, kind)
        return None if found is None else found.list == ALLOWED


def entries(patterns: Sequence[str] | None, source: str) -> list[Entry]:
    """``patterns`` from one place, each remembering it."""
    return [Entry(pattern=str(p).strip(), source=source) for p in patterns or ()]


def _glob(pattern: str) -> str:
    pattern = pattern.strip()
    return pattern[len(KIND) :].strip() if pattern.lower().startswith(KIND) else pattern


def _matches(pattern: str, name: str, kind: str) -> bool:
    matcher = field_matcher(_glob(pattern))
    value = kind if pattern.strip().lower().startswith(KIND) else name
    return matcher is not None and matcher.match(value.lower()) is not None


__all__ = ["ALLOWED", "DISALLOWED", "KIND", "Entry", "Match", "ToolLists", "entries"]
