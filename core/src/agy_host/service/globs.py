"""The globs of answer rules and permission rules: compiled once, bounded, paced.

``--answers``, ``[[answer]]`` and ``[[permissions.rules]]`` match by globs
(``*``, ``?``, ``[abc]``, ``[!a-z]``; case-insensitive). ``fnmatch`` was
the matcher, and a hostile rule stalled the host with it: its translation
scans for a ``]`` from every ``[``, so a glob of 100,000 ``[`` took minutes
to compile, and its cache of compiled globs is smaller than a long rules
list, so 100,000 rules were compiled again at every question (6.7 s each).
All of it ran on the event loop, so Ctrl-C and SIGTERM waited behind it.

So (issue 28 item 4):

* :func:`translate` gives ``fnmatch``'s regular expression in linear time
  (each bracket expression is found with one forward scan);
* a rule list is checked and compiled when it loads (:func:`check_rules`),
  within documented bounds: :data:`MAX_RULES` rules, :data:`MAX_FIELD_CHARS`
  characters in one match field (one glob, or a list of them together),
  :data:`MAX_LIST_GLOB_CHARS` in the whole list. What breaks them is a usage
  error (exit 2) before any agent starts. At the bounds a list compiles in
  well under a second and a question costs milliseconds;
* a rule's match field is one compiled expression, cached
  (:func:`field_matcher`), so a question costs one match per field set,
  never a compile;
* the matchers are generators that offer a pause after every rule, and
  :func:`paced` runs them on trio, yielding to the event loop every few
  milliseconds: a signal is handled within one field's match (bounded by
  its length), not after the list;
* what rules match *against* is bounded too: a match costs the value's
  length times the glob's, and the agent chooses the value (60 legal rules
  against a 400 KB title took 23.6 s to decide one request). A value longer
  than :data:`MAX_MATCHED_CHARS` (a title, a tool name, a kind, a field's
  name) is matched by no rule (:func:`unmatchable` says why, naming the
  cap), and its request is decided as no rule could allow it: a person
  decides where one can be asked, else it is refused. Cutting the value
  short instead would let an agent slip past a deny rule by padding its
  title.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import time
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from agy_host.config import Config

#: The most characters one match field may hold: its glob, or its list of globs together.
MAX_FIELD_CHARS = 1000
#: The most rules one list (``--answers``, ``[[answer]]``, ``[[permissions.rules]]``) may hold.
MAX_RULES = 1000
#: The most characters the globs of one rule list may hold in all.
MAX_LIST_GLOB_CHARS = 64 * 1024
#: The most characters of a value (a title, a tool name...) rules match against; a longer one
#: is decided by no rule. At the list bounds a match then costs well under a second.
MAX_MATCHED_CHARS = 4096
#: How long matching runs on the event loop before it lets other tasks (signals) run.
SLICE_S = 0.005
#: The match fields of an answer rule and of a permission rule.
ANSWER_FIELDS = ("kind", "field", "title", "tool")
PERMISSION_FIELDS = ("kind", "title", "name")

T = TypeVar("T")
#: A matcher run step by step: it yields where it may pause, and returns its result.
Steps = Generator[None, None, T]

_STAR = None


class GlobError(ValueError):
    """A rule list that cannot be used: a glob too long, too many rules (the message says which)."""


class TooLongToMatch(GlobError):
    """A value past :data:`MAX_MATCHED_CHARS` reached a glob (its caller did not ask
    :func:`unmatchable` first): no rule may decide about it."""


def globs(patterns: str | Sequence[str]) -> list[str]:
    """A rule's match field as a list: one glob or several."""
    return [patterns] if isinstance(patterns, str) else list(patterns)


def translate(pattern: str) -> str:
    """``fnmatch.translate(pattern)``, in time linear in the pattern.

    The same expression ``fnmatch`` builds (stars as atomic groups, so a
    match never backtracks into an earlier star), but a ``[`` without a
    closing ``]`` no longer costs a scan to the end of the pattern: the
    next ``]`` is found once and reused until it is passed."""
    pieces: list[str | None] = []
    i, n = 0, len(pattern)
    close = -1  # the index of the next "]" at or after the last search start; n when none is left
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not pieces or pieces[-1] is not _STAR:
                pieces.append(_STAR)
        elif c == "?":
            pieces.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            if close < j:
                found = pattern.find("]", j)
                close = n if found < 0 else found
            if close >= n:
                pieces.append("\\[")
            else:
                # one bracket expression alone: fnmatch's own rules for its ranges
                pieces.append(fnmatch.translate(pattern[i - 1 : close + 1])[len("(?s:") : -len(r")\Z")])
                i = close + 1
        else:
            pieces.append(re.escape(c))
    return r"(?s:" + _stars(pieces) + r")\Z"


def _stars(pieces: list[str | None]) -> str:
    """Pieces joined, each interior ``*fixed`` an atomic group (as fnmatch does)."""
    out: list[str] = []
    k, n = 0, len(pieces)
    while k < n and pieces[k] is not _STAR:
        out.append(str(pieces[k]))
        k += 1
    while k < n:
        k += 1  # the star
        fixed: list[str] = []
        while k < n and pieces[k] is not _STAR:
            fixed.append(str(pieces[k]))
            k += 1
        text = "".join(fixed)
        out.append(f".*{text}" if k == n else f"(?>.*?{text})")
    return "".join(out)


def _key(patterns: str | Sequence[str]) -> str | tuple[str, ...]:
    return patterns if isinstance(patterns, str) else tuple(patterns)


@functools.lru_cache(maxsize=4 * 3 * MAX_RULES + 1024)
def _compiled(key: str | tuple[str, ...]) -> re.Pattern[str] | None:
    wanted = globs(key)
    if not wanted:
        return None
    problem = _too_long(wanted)
    if problem:
        raise GlobError(problem)
    try:
        return re.compile("|".join(translate(g.lower()) for g in wanted))
    except (re.error, RecursionError, OverflowError) as exc:  # never seen: translate escapes what it does not own
        raise GlobError(f"a glob that cannot be compiled ({exc})") from exc


def _too_long(wanted: list[str]) -> str | None:
    size = sum(len(glob) for glob in wanted)
    if size <= MAX_FIELD_CHARS:
        return None
    what = "a glob" if len(wanted) == 1 else f"{len(wanted):,} globs"
    return f"{what} of {size:,} characters (at most {MAX_FIELD_CHARS:,} in one field)"


def field_matcher(patterns: str | Sequence[str]) -> re.Pattern[str] | None:
    """One compiled expression for a match field (``None``: no glob, matches all).
    Cached: the lists a host loads fit the cache, so a question compiles nothing."""
    return _compiled(_key(patterns))


def glob_match(patterns: str | Sequence[str], value: str) -> bool:
    """Whether ``value`` matches any of ``patterns`` (case-insensitive globs); no
    pattern matches all. The answer rules and the permission rules match the same way.
    A value longer than :data:`MAX_MATCHED_CHARS` raises :class:`TooLongToMatch`
    (its callers ask :func:`unmatchable` first): never a silent "no match"."""
    matcher = field_matcher(patterns)
    if matcher is None:
        return True
    if len(value) > MAX_MATCHED_CHARS:
        raise TooLongToMatch(unmatchable({"value": value}) or "")
    return matcher.match(value.lower()) is not None


def unmatchable(values: Mapping[str, str]) -> str | None:
    """Why no rule may decide about these values (the first longer than
    :data:`MAX_MATCHED_CHARS`, by its name: ``{"title": request.title}``), or ``None``."""
    for name, value in values.items():
        if len(value) > MAX_MATCHED_CHARS:
            return (
                f"its {name} has {len(value):,} characters, more than rules are matched against "
                f"(at most {MAX_MATCHED_CHARS:,}), so no rule decides it"
            )
    return None


def check_rules(rules: Sequence[object], fields: Sequence[str], where: str) -> None:
    """Check a rule list against the bounds and compile its globs now, or raise
    :class:`GlobError` naming ``where`` (``--answers FILE``, ``[[answer]]``...),
    the rule and the field. Lengths are checked before anything is compiled."""
    if len(rules) > MAX_RULES:
        raise GlobError(
            f"{where}: {len(rules):,} rules (at most {MAX_RULES:,}; a match field takes a list of globs, "
            "so one rule can cover many tools)"
        )
    total = 0
    for index, rule in enumerate(rules, 1):
        for name in fields:
            wanted = globs(getattr(rule, name))
            problem = _too_long(wanted)
            if problem:
                raise GlobError(f"{where}: rule {index}: {name}: {problem}")
            total += sum(len(glob) for glob in wanted)
    if total > MAX_LIST_GLOB_CHARS:
        raise GlobError(f"{where}: globs of {total:,} characters in all (at most {MAX_LIST_GLOB_CHARS:,})")
    for index, rule in enumerate(rules, 1):
        for name in fields:
            try:
                field_matcher(getattr(rule, name))
            except GlobError as exc:
                raise GlobError(f"{where}: rule {index}: {name}: {exc}") from exc


def rules_problem(config: Config, where: str, answers: Sequence[object] = ()) -> str | None:
    """Why a command's rule lists cannot be used (``answers`` given to it, the
    config's ``[[answer]]`` and ``[[permissions.rules]]``; ``where`` names the
    config file), or ``None``; every glob is compiled once this passes."""
    lists = (
        (answers, ANSWER_FIELDS, "the answer rules"),
        (config.answer, ANSWER_FIELDS, f"[[answer]] in {where}"),
        (config.permissions.rules, PERMISSION_FIELDS, f"[[permissions.rules]] in {where}"),
    )
    try:
        for rules, fields, name in lists:
            check_rules(rules, fields, name)
    except GlobError as exc:
        return str(exc)
    return None


def finish(steps: Steps[T]) -> T:
    """Run a matcher to its end at once (no event loop to yield to)."""
    try:
        while True:
            next(steps)
    except StopIteration as stop:
        done: T = stop.value
        return done


async def paced(steps: Steps[T], slice_s: float = SLICE_S) -> T:
    """Run a matcher on trio, letting other tasks run every ``slice_s`` of matching:
    a Ctrl-C or SIGTERM is acted on, and a cancel lands, between two rules."""
    import trio

    until = time.perf_counter() + slice_s
    try:
        while True:
            next(steps)
            if time.perf_counter() >= until:
                await trio.lowlevel.checkpoint()
                until = time.perf_counter() + slice_s
    except StopIteration as stop:
        done: T = stop.value
        return done


__all__ = [
    "ANSWER_FIELDS",
    "MAX_FIELD_CHARS",
    "MAX_LIST_GLOB_CHARS",
    "MAX_MATCHED_CHARS",
    "MAX_RULES",
    "PERMISSION_FIELDS",
    "GlobError",
    "Steps",
    "TooLongToMatch",
    "check_rules",
    "field_matcher",
    "finish",
    "glob_match",
    "globs",
    "paced",
    "rules_problem",
    "translate",
    "unmatchable",
]
