"""The ``[harness]`` config table.

Core keeps plugin tables raw; this module narrows the table by core's rules
(:func:`agy_host.config.narrow_section`: a bad value takes its default with a
warning naming the key). The model, effort, timers and permission policy are
core settings and reach the engine with each turn; what is specific to the
harness lives here.

Endpoints, in the order they win: ``openai_base_url`` (an OpenAI-compatible
server: Ollama, LM Studio, llama.cpp), ``project`` (Vertex AI, with the
machine's application-default credentials, which the harness reads itself),
else the Gemini API (``api_key_env``, ``GEMINI_API_KEY`` by default;
``base_url`` or ``GOOGLE_GEMINI_BASE_URL`` to point it elsewhere). agy-host
reads the key's value only to hand it to the harness; it stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from agy_host.config import narrow_section

SECTION = "harness"
DEFAULT_MODEL = "gemini-3.8-flash"
SystemPromptMode = Literal["append", "replace"]


class HarnessSettings(msgspec.Struct, kw_only=True):
    #: The ``localharness`` binary; ``$ANTIGRAVITY_HARNESS_PATH`` wins.
    bin: str = ""
    #: The model when a turn names none (core ``model`` and ``--model`` win).
    model: str = DEFAULT_MODEL
    #: The models ``agy-host models`` lists (the harness has no catalog call;
    #: ``$AGY_HOST_HARNESS_MODELS`` wins); tier slugs (``-low``/``-high``) fold
    #: into families with efforts, as Antigravity's catalog does.
    models: list[str] = msgspec.field(default_factory=lambda: [DEFAULT_MODEL])
    #: Gemini API: the environment variable holding the key.
    api_key_env: str = "GEMINI_API_KEY"
    #: Gemini API base URL (empty: ``$GOOGLE_GEMINI_BASE_URL``, else Google's).
    base_url: str = ""
    #: Vertex AI project and location (a project selects Vertex).
    project: str = ""
    location: str = "global"
    #: An OpenAI-compatible chat completions server (selects that endpoint).
    openai_base_url: str = ""
    #: ``append`` keeps Antigravity's own instructions and adds the host's
    #: system prompt; ``replace`` sends only the host's.
    system_prompt_mode: SystemPromptMode = "append"
    #: The default budget of every conversation: the harness has no loop cap
    #: of its own. 0 means no cap (not recommended).
    max_model_calls: int = 50
    max_tool_calls: int = 0
    max_total_tokens: int = 0
    #: Harness-side tools beyond the coding set (listing, reading, searching,
    #: editing, commands), off by default.
    subagents: bool = False
    web: bool = False
    images: bool = False
    #: The harness's ask-the-user tool (multiple-choice questions), answered
    #: by the host's broker: answer rules, the program, or you at the
    #: terminal; a question nobody answers fails the turn (exit 5).
    questions: bool = False
    #: How long a turn retries a model API that answers an error it may retry
    #: (429, 503, other 5xx) before it fails with the status (0: no bound).
    retry_seconds: float = 60.0
    #: The same for an endpoint that cannot be reached (refused, no such
    #: host, reset): short, a wrong URL never recovers (0: no bound).
    connect_retry_seconds: float = 15.0
    #: How often the harness retries a failed model call: -1 keeps the two
    #: budgets above (agy-host's schedule: 1 s, then 1.5 times longer each
    #: time); a number is the harness's own count, on its own backoff, and
    #: the budgets then do not apply.
    api_retries: int = -1
    #: Where the harness keeps its state; empty: under agy-host's state dir.
    #: The harness's HOME is moved there too, so nothing lands in ~/.gemini.
    home: str = ""
    storage_dir: str = ""
    app_data_dir: str = ""
    #: How long the harness may take to start and answer its bootstrap.
    start_timeout_seconds: float = 30.0
    #: After a cancel, how long the harness gets to go idle before the
    #: conversation's socket is closed (it is resumed on the next turn).
    cancel_grace_seconds: float = 5.0
    #: Extra environment for the harness process.
    env: dict[str, str] = msgspec.field(default_factory=dict)


def narrow(raw: Mapping[str, Any], warn: Callable[[str], None]) -> HarnessSettings:
    settings = narrow_section(HarnessSettings, raw, SECTION, warn)
    for key in ("max_model_calls", "max_tool_calls", "max_total_tokens"):
        if getattr(settings, key) < 0:
            warn(f"config: '{SECTION}.{key}' must not be negative; using the default")
            setattr(settings, key, getattr(HarnessSettings(), key))
    for key in ("retry_seconds", "connect_retry_seconds"):
        if getattr(settings, key) < 0:
            warn(f"config: '{SECTION}.{key}' must not be negative; using the default")
            setattr(settings, key, getattr(HarnessSettings(), key))
    for key in ("start_timeout_seconds", "cancel_grace_seconds"):
        if getattr(settings, key) <= 0:
            warn(f"config: '{SECTION}.{key}' must be positive; using the default")
            setattr(settings, key, getattr(HarnessSettings(), key))
    if not settings.models:
        settings.models = [settings.model]
    return settings


__all__ = ["DEFAULT_MODEL", "SECTION", "HarnessSettings", "narrow"]
