"""Record the real harness's conversation traffic for the replay tests.

    python scripts/record_harness.py [--out plugins/harness_engine/tests/recordings/harness-0.1.22]

Runs a few scenarios through the real ``agy-host`` CLI and the real
``localharness`` (``$ANTIGRAVITY_HARNESS_PATH`` or ``.cache/harness``), the
model played by the kit's scripted model API, with
``AGY_HOST_HARNESS_RECORD`` set (the wire trace, ``--trace``, under its
older name): every frame agy-host sent and received, one JSON line each,
secrets redacted. The replay tests (``plugins/harness_engine/tests/
test_replay_recordings.py``) feed the received frames back through the
engine's turn. Re-record after bumping the pinned wheel.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agy_host.testing.isolation import isolated_env
from agy_host.testing.models.api import ModelApiProcess

REPO = Path(__file__).resolve().parents[1]


def scenarios(cwd: Path) -> dict[str, tuple[dict[str, Any], list[str], dict[str, Any]]]:
    """name -> (model script, extra CLI arguments, [turn] config)."""
    target = str(cwd / "notes.txt")
    run = {"CommandLine": "cat notes.txt", "Cwd": str(cwd), "WaitMsBeforeAsync": 5000}
    return {
        "text-thinking-usage": (
            {
                "turns": [
                    [
                        [
                            {"thought": "Let me think."},
                            {"text": ["Hel", "lo ", "there."]},
                            {"usage": {"input": 42, "output": 7, "thoughts": 3}},
                        ]
                    ]
                ]
            },
            ["--verbose"],
            {},
        ),
        "tools": (
            {
                "turns": [
                    [
                        [
                            {
                                "call": {
                                    "name": "write_to_file",
                                    "args": {"TargetFile": target, "CodeContent": "one\ntwo\n", "Overwrite": False},
                                }
                            }
                        ],
                        [{"call": {"name": "run_command", "args": run}}],
                        [{"call": {"name": "list_dir", "args": {"DirectoryPath": str(cwd)}}}],
                        [{"text": "Done."}],
                    ]
                ]
            },
            [],
            {},
        ),
        "halt-on-inactivity": (
            {"turns": [[[{"text": "partial "}, {"hang": True}]]]},
            [],
            {"inactivity_minutes": 1.5 / 60},
        ),
    }


NAMES = ("text-thinking-usage", "tools", "halt-on-inactivity")


def record(out: Path, binary: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            cwd = root / "project"
            cwd.mkdir()
            script, args, turn = scenarios(cwd)[name]
            frames = out / f"{name}.jsonl"
            frames.unlink(missing_ok=True)
            with ModelApiProcess(root / "model", script) as model:
                env = isolated_env(
                    root / "home",
                    ANTIGRAVITY_HARNESS_PATH=binary,
                    GEMINI_API_KEY="recording-key",
                    GOOGLE_GEMINI_BASE_URL=model.url,
                    AGY_HOST_HARNESS_RECORD=str(frames),
                    AGY_HOST_TTY="none",
                )
                config = root / "home" / ".config" / "agy-host" / "config.toml"
                config.parent.mkdir(parents=True)
                config.write_text("[turn]\n" + "".join(f"{k} = {v}\n" for k, v in turn.items()))
                argv = [sys.executable, "-m", "agy_host.cli.main", "run", "--engine", "harness", "--format", "json"]
                proc = subprocess.run(
                    [*argv, *args, "go"], env=env, cwd=cwd, capture_output=True, text=True, check=False
                )
            print(f"{name}: exit {proc.returncode}, {len(frames.read_text().splitlines())} frames -> {frames}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", default=str(REPO / "plugins" / "harness_engine" / "tests" / "recordings" / "harness-0.1.22")
    )
    args = parser.parse_args()
    binary = os.environ.get("ANTIGRAVITY_HARNESS_PATH") or str(REPO / ".cache" / "harness" / "current" / "localharness")
    record(Path(args.out), binary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
