"""``agy-host doctor`` says which renderer ``--format text`` picks, whether
edits get diffs, and what prompt assembly will add (system prompt, AGENTS.md,
digest, transcripts)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., tuple[int, str, str]]


def rows(out: str) -> dict[str, dict[str, Any]]:
    doc = json.loads(out)
    return {sec["title"]: {r["label"]: r for r in sec["rows"]} for sec in doc["sections"]}


def test_rendering_and_prompt_rows(
    cli: Cli, agy_host_home: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").write_text("rules")
    monkeypatch.chdir(project)
    monkeypatch.setenv("NO_COLOR", "1")
    agy_host_home.write_config({"system_prompt": "Be terse.", "prompt": {"digest": True}})
    code, out, _ = cli("doctor", "--format", "json")
    assert code == 0, out
    sections = rows(out)
    fmt = sections["rendering"]["text format"]["value"]
    assert fmt.startswith("plain (") and "stdout is not a terminal" in fmt and "NO_COLOR is set" in fmt
    assert "diffs" in sections["rendering"]
    prompt = sections["prompt"]
    assert prompt["system prompt"]["value"] == "9 chars (config / --system-prompt)"
    assert prompt["AGENTS.md"]["value"] == "1 found from here"
    assert prompt["AGENTS.md"]["detail"] == [str(project / "AGENTS.md")]
    assert prompt["digest"]["value"] == "on, 8000 chars"
    assert prompt["transcripts"]["value"].startswith("0 in ")
