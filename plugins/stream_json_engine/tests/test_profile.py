"""The command line and the recycle causes, as pure functions."""

from __future__ import annotations

import math

import msgspec
import pytest

from agy_host_stream_json.config import StreamJsonConfig
from agy_host_stream_json.profile import Profile, agy_mode, argv, go_duration, print_timeout, recycle_cause


def test_argv_order_and_optional_flags() -> None:
    full = Profile(cwd="/w", model="m", effort="low", mode="plan", skip_permissions=True, print_timeout_s=960)
    assert argv("agy", full, "c-1", ["--log-file", "/tmp/x"]) == [
        "agy",
        "--add-dir",
        "/w",
        "--model",
        "m",
        "--effort",
        "low",
        "--mode",
        "plan",
        "--dangerously-skip-permissions",
        "--conversation",
        "c-1",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--disable-slash-commands",
        "--print-timeout",
        "960s",
        "--log-file",
        "/tmp/x",
    ]
    bare = argv("agy", Profile(cwd="/w", print_timeout_s=math.inf), None, [])
    assert "--model" not in bare and "--effort" not in bare and "--conversation" not in bare
    assert bare[bare.index("--print-timeout") + 1] == "24h"


def test_print_timeout_follows_the_turn_deadline() -> None:
    cfg = StreamJsonConfig(print_timeout_margin_seconds=60)
    assert print_timeout(600, cfg) == 660 and go_duration(660) == "660s"
    assert print_timeout(0, cfg) == math.inf
    assert go_duration(0.2) == "1s"


def test_modes() -> None:
    assert agy_mode(None) == ("accept-edits", None)
    assert agy_mode("plan") == ("plan", None)
    assert agy_mode("auto_edit") == ("accept-edits", None)
    mode, note = agy_mode("yolo")
    assert mode == "accept-edits" and note is not None and "no mode 'yolo'" in note


BASE = Profile(cwd="/w", model="m", effort="low", mode="accept-edits", skip_permissions=False, print_timeout_s=900)


@pytest.mark.parametrize(
    ("changes", "wanted_conv", "expected"),
    [
        ({}, "c", None),
        ({"cwd": "/x", "model": "n"}, "c", "cwd"),  # first match wins
        ({"model": "n", "effort": "high"}, "c", "model"),
        ({"effort": "high", "mode": "plan"}, "c", "effort"),
        ({"mode": "plan", "skip_permissions": True}, "c", "mode"),
        ({"skip_permissions": True}, None, "permissions"),
        ({}, None, "conversation-reset"),
        ({}, "other", "conversation"),
        ({"print_timeout_s": 1200}, "c", "print-timeout"),
        ({"print_timeout_s": 300}, "c", None),  # a shorter deadline is ours to enforce
    ],
)
def test_recycle_causes_in_order(changes: dict[str, object], wanted_conv: str | None, expected: str | None) -> None:
    wanted = msgspec.structs.replace(BASE, **changes)
    assert recycle_cause(BASE, wanted, "c", wanted_conv) == expected


def test_stream_json_passes_add_dir_to_agy_and_recycles_when_it_changes() -> None:
    base = Profile(cwd="/w")
    wider = Profile(cwd="/w", add_dirs=("/lib",))
    assert argv("agy", wider, None, [])[:5] == ["agy", "--add-dir", "/w", "--add-dir", "/lib"]
    assert recycle_cause(base, wider, None, None) == "cwd"
    assert recycle_cause(wider, Profile(cwd="/w", add_dirs=("/lib",)), None, None) is None
