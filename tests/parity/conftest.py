"""The parity suite's engine axis and its report.

Every test that takes the ``rig`` fixture runs once per selected engine:
``--engine NAME`` (repeatable), else ``$AGY_HOST_PARITY_ENGINE`` (comma
separated), else every engine installed here that the suite has a rig for.
Selecting an engine that is not installed is an error, never a skip: the
``parity(engine)`` nox session installs exactly one engine, and a suite
that quietly ran nothing would look like a pass.

``--report`` records each test's result per engine in
``.cache/parity/<engine>.json`` and rewrites ``docs/parity.md`` from every
engine's latest results, so ``nox -s parity -- --report`` (one session per
engine) fills the whole table.

``--warm`` (or ``$AGY_HOST_PARITY_WARM=1``) runs the items of
:data:`WARM_ITEMS` again with warm agents on (docs/sessions.md): a
session's later commands run on the agent the keeper kept, and the same
checks must pass; each test's keeper is stopped after it. ``nox -s parity``
runs the suite cold, then this subset warm. Warm runs are not recorded in
the report (its columns are the engines).

``--live`` runs ``test_live.py`` instead of the fake-agent suite: the
checklist against real, signed-in agents (``parity.live``), only with
``AGY_HOST_LIVE=1``. Before anything runs it says how many agent turns the
selected tests spend (each declares its own with ``live_turns(n)``); the
first quota or rate-limit error ends the run (``pytest.exit``, exit 2); with
nothing to run against it says why in one line and exits 0.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from parity.live import LIVE_ENV, LIVE_SECTION, TARGETS, Discovery, LiveHome, QuotaStop, Target, discover
from parity.rigs import ENGINE_ENV, RIGS, WARM_ENV, AcpRig, Home, Rig, installed_engines

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / ".cache" / "parity"
REPORT = REPO / "docs" / "parity.md"

#: The checklist of ``shared/spec/README.md``, "Parity checklist", by number.
CHECKLIST = {
    1: "Text streams as deltas; a cumulative resend is detected and sliced.",
    2: "Multi-turn continuity: the next turn continues the same agent conversation.",
    3: "Turn serialization: two concurrent turns on one session never interleave.",
    4: "Tool round-trip: a bridge `tools/call` parks, the host runs the tool, the result resumes the same agent turn.",
    5: "The inactivity timer is suspended while a tool call is parked and re-armed after.",
    6: "The overall turn deadline and the inactivity timeout still fire and fail the turn visibly; "
    "parked time does not count.",
    7: "Abort: the user's abort gives `aborted`; the next turn on the session works.",
    8: "A host restart resumes the right agent conversation, per engine.",
    9: "Switching engine and back keeps each engine's own conversation binding.",
    10: "Model catalog: the same model ids and effort tiers resolve.",
    11: "A model or effort switch takes effect on the next turn.",
    12: "The digest and the system prompt reach the agent identically on every engine.",
    13: "`activate_skill` is answered by the bridge.",
    14: "Usage: mapped where the agent reports it, reported as absent where not.",
    15: "`agy-host doctor` shows connection state, session id, stats, lifecycle log.",
    16: "Spawn failure, auth failure and protocol errors surface as visible turn errors with the agent's own message.",
    17: "One-shot `ask` returns text, duration, abort and timeout states, and a resumable session id.",
    18: "A slow human answer to a parked tool call cannot kill the turn.",
    19: "The permission policy always answers the agent; it never hangs.",
    20: "Resume or fail: `--resume` of a conversation the agent lost exits 4 with its reason; "
    "without it the turn starts a new conversation and says which it lost.",
    21: "Deny means the same on every engine: a denied tool (the `deny` policy, or the default with nobody to "
    "ask) exits 5 and names the refused request; the default says how to allow.",
}
_ITEM = re.compile(r"test_(\d\d)_")
#: The items run again warm: streaming, continuity, abort, a restart per
#: session, usage, the permission policy, resume or fail: what a warm agent
#: could get wrong by being kept (the others drive a driver in-process, or
#: are about the agent's start).
WARM_ITEMS = frozenset({1, 2, 7, 8, 14, 19, 20})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("parity", "agy-host parity suite")
    group.addoption(
        "--engine",
        action="append",
        default=[],
        metavar="NAME",
        help=f"engine to run the parity suite against (repeatable; default: ${ENGINE_ENV}, else every installed one)",
    )
    group.addoption(
        "--report",
        action="store_true",
        default=False,
        help="record results in .cache/parity/ and rewrite docs/parity.md (checklist item x engine)",
    )
    group.addoption(
        "--warm",
        action="store_true",
        default=False,
        help=f"run the warm subset (items {sorted(WARM_ITEMS)}) with warm agents on (also ${WARM_ENV}=1)",
    )
    group.addoption(
        "--live",
        action="store_true",
        default=False,
        help=f"run the checklist against real, signed-in agents (test_live.py; needs {LIVE_ENV}=1; spends turns)",
    )
    group.addoption(
        "--live-target",
        action="append",
        default=[],
        choices=TARGETS,
        help="with --live: only this target (repeatable; default: every one found and signed in)",
    )


# ---------------------------------------------------------------------------
# the live check
# ---------------------------------------------------------------------------

_LIVE = pytest.StashKey[Discovery]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live_turns(n): how many agent turns a live test spends on a real model")
    if not config.getoption("--live", default=False):
        return
    if os.environ.get(LIVE_ENV) != "1":
        pytest.exit(f"live check skipped: {LIVE_ENV}=1 is not set (the live check spends real turns)", returncode=0)
    try:
        found = discover(os.environ, config.getoption("--live-target"))
    except QuotaStop as exc:
        pytest.exit(f"live check stopped while checking agy's sign-in: the agent reports a quota: {exc}", returncode=2)
    if not found.targets:
        why = "; ".join(found.missing)
        pytest.exit(f"live check skipped: no signed-in agent to run against ({why})", returncode=0)
    config.stash[_LIVE] = found


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``--live`` collects only the live tests; without it, never."""
    live = bool(config.getoption("--live", default=False))
    if collection_path.name == "test_live.py" and not live:
        return True
    if collection_path.name.startswith("test_parity") and live:
        return True
    return None


def warm_run(config: pytest.Config) -> bool:
    """The warm subset, not the cold suite (``--warm`` or ``$AGY_HOST_PARITY_WARM=1``)."""
    return bool(config.getoption("--warm", default=False)) or os.environ.get(WARM_ENV) == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if warm_run(config) and not config.getoption("--live", default=False):
        cold = [
            i
            for i in items
            if (m := _ITEM.match(getattr(i, "originalname", i.name))) is None or int(m.group(1)) not in WARM_ITEMS
        ]
        if cold:
            config.hook.pytest_deselected(items=cold)
            items[:] = [i for i in items if i not in cold]
    unmarked = [i.nodeid for i in items if "live" in getattr(i, "fixturenames", ()) and not _turns(i)]
    if unmarked:
        raise pytest.UsageError(f"live tests must declare their turns with @pytest.mark.live_turns(n): {unmarked}")


def _turns(item: pytest.Item) -> int:
    marker = item.get_closest_marker("live_turns")
    return int(marker.args[0]) if marker is not None else 0


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Before anything runs: what the live check will spend, and on what."""
    found = config.stash.get(_LIVE, None)
    if found is None:
        return []
    turns = sum(_turns(i) for i in items)
    lines = [f"live check: {len(items)} tests will spend {turns} agent turns on real models"]
    if found.sign_in_turns:
        lines[0] += f" (and {found.sign_in_turns} spent checking agy's sign-in)"
    lines += [f"  on {t.name}: {t.label}" for t in found.targets]
    lines += [f"  not run on {line}" for line in found.missing]
    lines.append(f"  stops at the first quota or rate-limit error; items not run live: {NOT_LIVE}")
    return lines


#: The checklist items the live check leaves to the fakes, and why.
NOT_LIVE = (
    "16 (spawn, auth and protocol failures need fault injection: a healthy signed-in agent cannot be "
    "made to fail that way without breaking the user's install or sign-in)"
)


def pytest_exception_interact(node: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """The first quota or rate-limit error ends the live check."""
    stop = _quota_stop(call.excinfo.value) if call.excinfo is not None else None
    if stop is not None:
        pytest.exit(
            f"live check stopped at {node.nodeid}: the agent reports a quota or rate limit: {str(stop).rstrip('.')}. "
            "Nothing more was run; run it again once the quota resets.",
            returncode=2,
        )


def _quota_stop(exc: BaseException) -> QuotaStop | None:
    """The :class:`QuotaStop` in ``exc``, also inside a trio nursery's exception group."""
    if isinstance(exc, QuotaStop):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _quota_stop(inner)
            if found is not None:
                return found
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "live" in metafunc.fixturenames:
        found = metafunc.config.stash.get(_LIVE, None)
        targets = found.targets if found is not None else []
        metafunc.parametrize("live", targets, ids=[t.name for t in targets])
    if "engine" in metafunc.fixturenames:
        engines = selected_engines(metafunc.config)
        if not engines:
            raise pytest.UsageError(
                "no engine with a parity rig is installed: install agy-host-acp, agy-host-stream-json "
                "or agy-host-harness"
            )
        metafunc.parametrize("engine", engines)


@pytest.fixture
def live_home(live: Target, tmp_path: Path) -> LiveHome:
    return LiveHome(tmp_path / "live", live)


def selected_engines(config: pytest.Config) -> list[str]:
    wanted: list[str] = list(config.getoption("--engine"))
    if not wanted and os.environ.get(ENGINE_ENV):
        wanted = [e.strip() for e in os.environ[ENGINE_ENV].split(",") if e.strip()]
    installed = installed_engines()
    if not wanted:
        return installed
    for name in wanted:
        if name not in RIGS:
            raise pytest.UsageError(f"the parity suite has no rig for engine {name!r} (rigs: {', '.join(RIGS)})")
        if name not in installed:
            raise pytest.UsageError(
                f"engine {name!r} is not installed here (installed: {', '.join(installed) or 'none'})"
            )
    return wanted


@pytest.fixture
def rig(engine: str, tmp_path: Path) -> Iterator[Rig]:
    """The engine's rig; on ACP, every frame the host sent to the fake during
    the test is then validated against the vendored ACP schema (a test that
    passed with an invalid message fails here)."""
    made = RIGS[engine](tmp_path / "rig")
    yield made
    close = getattr(made, "close", None)
    if callable(close):
        close()
    if isinstance(made, AcpRig):
        from conformance.schema import validate_client_message

        for msg in made.sent_frames():
            # the agents' only requests to the host in these scripts are permission requests
            validate_client_message(msg, request_method=None if "method" in msg else "session/request_permission")


@pytest.fixture
def home(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    made = Home(tmp_path / "user", engine, warm=warm_run(request.config))
    yield made
    made.close()


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------

_results: dict[str, dict[str, dict[str, Any]]] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    callspec = getattr(item, "callspec", None)
    match = _ITEM.match(getattr(item, "originalname", item.name))
    params = callspec.params if callspec is not None else {}
    if match is None or not ("engine" in params or "live" in params) or warm_run(item.config):
        return report
    engine = str(params["engine"]) if "engine" in params else f"{LIVE_PREFIX}{params['live'].name}"
    number = str(int(match.group(1)))
    entry = _results.setdefault(engine, {}).setdefault(number, {"outcome": "pass", "seconds": 0.0, "tests": []})
    if report.when == "call" or report.outcome != "passed":
        if report.when == "call":
            entry["seconds"] += report.duration
        outcome = _outcome(report)
        if outcome != "pass" and entry["outcome"] == "pass":
            entry["outcome"] = outcome
        if report.when == "call" or outcome != "pass":
            entry["tests"].append(item.name)
    return report


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfail" if report.skipped else "xpass"
    if report.passed:
        return "pass"
    return "skip" if report.skipped else "fail"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not session.config.getoption("--report", default=False) or not _results:
        return
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for engine, items in _results.items():
        data = {"engine": engine, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "items": items}
        (RESULTS_DIR / f"{engine}.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    write_report()


#: Results of the live check are kept as ``live-<target>`` beside the engines'.
LIVE_PREFIX = "live-"


def write_report() -> None:
    columns, live = [], []
    for path in sorted(RESULTS_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("engine") in RIGS:
            columns.append(data)
        elif str(data.get("engine", "")).startswith(LIVE_PREFIX):
            live.append(data)
    lines = [
        "# Parity report",
        "",
        "Generated by `nox -s parity -- --report` (each engine installed alone, the suite in",
        "`tests/parity/` run against it); do not edit by hand. One row per item of the parity",
        "checklist (`shared/spec/README.md`), one column per engine. A `xfail` cell is a",
        "known product gap, asserted strictly (the test fails once the gap closes) and",
        "described in the test's reason.",
        "",
        *_table(columns),
    ]
    if live:
        lines += [
            "",
            "## Against the real agents",
            "",
            "The same checklist against real, signed-in agents (`AGY_HOST_LIVE=1 nox -s parity-live -- --report`,",
            "see below); one column per target.",
            "",
            *_table(live),
        ]
    lines += ["", LIVE_SECTION.rstrip("\n")]
    REPORT.write_text("\n".join(lines) + "\n")


def _table(columns: list[dict[str, Any]]) -> list[str]:
    mark = {"pass": "pass", "fail": "**FAIL**", "xfail": "xfail (known gap)", "xpass": "**XPASS**", "skip": "skip"}
    lines = [
        "| # | checklist item | " + " | ".join(f"`{c['engine']}`" for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for number, text in CHECKLIST.items():
        cells = []
        for column in columns:
            entry = column["items"].get(str(number))
            cells.append(mark.get(entry["outcome"], entry["outcome"]) if entry else "not run")
        lines.append(f"| {number} | {text} | " + " | ".join(cells) + " |")
    lines += ["", "Runs:", ""]
    for column in columns:
        total = sum(float(e["seconds"]) for e in column["items"].values())
        lines.append(f"* `{column['engine']}`: {column['when']}, {total:.0f} s of test time")
    return lines
