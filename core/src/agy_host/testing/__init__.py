"""The agy-host testing kit: real agent executables with scripted behaviour.

Engines are only trustworthy when tested against a process that speaks the
real wire format over real pipes, so the kit ships agents rather than mocks,
grouped by what they fake:

* ``acp/``: ``python -m agy_host.testing.acp.agent``, an ACP agent scripted
  by a scenario (built-in names such as ``happy``, ``permission``,
  ``cancel-unsupported``, or a JSON/TOML file). Format:
  :mod:`agy_host.testing.acp.agent`.
* ``agy_cli/``: ``python -m agy_host.testing.agy_cli.agent``, the ``agy`` CLI
  in stream-json and print mode.
* ``models/``: ``python -m agy_host.testing.models.api``, a scripted model
  API (Gemini SSE, OpenAI chat completions) for the real harness binary.
* ``replay/``: ``python -m agy_host.testing.replay.agent FILE`` serves one
  recording of a real agent, answering the recorded requests with the
  recorded frames; :mod:`agy_host.testing.replay.recordings` is one parser
  for every recorder's line format.
* :mod:`agy_host.testing.pytest_plugin` (loaded automatically by pytest):
  fixtures ``agy_host_home``, ``fake_acp_agent``, ``replay_agent``,
  ``recordings_dir``.
* :class:`AgentPipe`: a blocking JSON-lines client to poke an agent
  process directly.

Both agents log every message they receive (one JSON line, flushed before
the message is acted on) so tests assert on what the host really sent.

Names below are imported lazily: importing this package costs nothing, which
matters because the fake agents start with it on every spawn.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EngineContract": "agy_host.testing.contract",
    "EngineHarness": "agy_host.testing.contract",
    "CliResult": "agy_host.testing.pytest_plugin",
    "FakeAgent": "agy_host.testing.agents",
    "fake_acp_agent_command": "agy_host.testing.agents",
    "replay_agent_command": "agy_host.testing.agents",
    "AgentPipe": "agy_host.testing.client",
    "AgentExited": "agy_host.testing.client",
    "RawOutput": "agy_host.testing.client",
    "chunk_texts": "agy_host.testing.client",
    "is_update": "agy_host.testing.client",
    "AgentFrame": "agy_host.testing.replay.recordings",
    "ClientFrame": "agy_host.testing.replay.recordings",
    "Note": "agy_host.testing.replay.recordings",
    "RawLine": "agy_host.testing.replay.recordings",
    "RecordingEvent": "agy_host.testing.replay.recordings",
    "RecordingError": "agy_host.testing.replay.recordings",
    "parse_line": "agy_host.testing.replay.recordings",
    "parse_lines": "agy_host.testing.replay.recordings",
    "read_recording": "agy_host.testing.replay.recordings",
    "Scenario": "agy_host.testing.acp.scenario",
    "ScenarioError": "agy_host.testing.acp.scenario",
    "load_scenario": "agy_host.testing.acp.scenario",
    "BUILTIN_SCENARIOS": "agy_host.testing.acp.scenarios",
    "AgyHostHome": "agy_host.testing.pytest_plugin",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agy_host.testing' has no attribute {name!r}")
    attr = "BUILTIN" if name == "BUILTIN_SCENARIOS" else name
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
