"""The built-in prompt parts: the system block and the context digest.

Both are engine-agnostic text; the turn layer decides where they go
(``system`` parts only on a new conversation; a ``context`` part as an
embedded resource on engines that take one, inline elsewhere), so the same
bytes reach every engine. The settings come from the config of the host
running the turn (``PromptContext.config``): ``system_prompt``
(``--system-prompt`` lands there), ``[prompt] agents_md``, ``[prompt] digest``
and ``digest_max_chars``; the transcripts the digest reads, from the
environment that host was given (``agy_host_configure``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agy_host import hookimpl
from agy_host.builtins.digest import build_digest, digest_text
from agy_host.builtins.system_prompt import agents_sections, system_block
from agy_host.builtins.transcripts import read_transcript
from agy_host.contract.prompt_parts import PromptPart

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host.contract.prompt_parts import PromptContext
    from agy_host.contract.run_context import RunContext

#: Before other plugins' parts of the same kind: the system block opens the prompt.
ORDER = -100
DIGEST_URI = "urn:agy-host:context-digest"


def system_text(config: Config, cwd: str) -> str:
    """The system block a new conversation in ``cwd`` would receive."""
    agents = agents_sections(cwd) if config.prompt.agents_md else []
    return system_block(config.system_prompt, agents)


def bound_conversation(session: str, engine: str, env: Mapping[str, str] | None = None) -> str | None:
    """The agent conversation a turn of ``session`` on ``engine`` continues: the
    most recently used binding of that session on that engine (an engine may
    keep one per agent profile)."""
    from agy_host.config import state_dir
    from agy_host.runtime.store import SessionStore

    store = SessionStore.in_state_dir(state_dir(env))
    best = None
    for binding in store.bindings_of(session).values():  # that session's file only
        if binding.engine != engine:
            continue
        if best is None or binding.updated_at > best.updated_at:
            best = binding
    return best.conversation_id if best is not None else None


def digest_part(turn: PromptContext, config: Config, env: Mapping[str, str] | None = None) -> PromptPart | None:
    entries = read_transcript(turn.session, env)
    if not entries:
        return None
    if turn.conversation_id is not None:
        conversation: str | None = turn.conversation_id
    else:
        conversation = None if turn.new_conversation else bound_conversation(turn.session, turn.engine, env)
    body = build_digest(entries, conversation, config.prompt.digest_max_chars)
    if not body:
        return None
    # The entry count in the URI changes whenever the digest can, so an agent
    # that de-duplicates resources by URI never serves a stale one.
    uri = f"{DIGEST_URI}/{turn.session}/{len(entries)}"
    return PromptPart(text=digest_text(body), where="context", order=ORDER, uri=uri)


class PromptAssembly:
    """The built-in prompt parts of one host (one per plugin manager)."""

    def __init__(self) -> None:
        self.run: RunContext | None = None

    def config(self, turn: PromptContext | None = None) -> Config:
        from agy_host import config as config_mod

        if turn is not None and isinstance(turn.config, config_mod.Config):
            return turn.config
        if self.run is not None:
            return self.run.config  # type: ignore[no-any-return]
        return config_mod.load(warn=None)  # no host (a test, a bare plugin manager)

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.run.env if self.run is not None else None

    @hookimpl
    def agy_host_configure(self, run: RunContext) -> None:
        self.run = run

    @hookimpl
    def agy_host_prompt_parts(self, turn: PromptContext) -> list[PromptPart] | None:
        config = self.config(turn)
        parts: list[PromptPart] = []
        if turn.new_conversation:
            text = system_text(config, turn.cwd)
            if text:
                parts.append(PromptPart(text=text, where="system", order=ORDER))
        if config.prompt.digest and not turn.slash_command:  # a command goes alone: no digest to build
            part = digest_part(turn, config, self.env)
            if part is not None:
                parts.append(part)
        return parts or None

    @hookimpl
    def agy_host_diagnostics(self, report: DiagnosticReport) -> None:
        import os

        from agy_host.builtins.system_prompt import find_agents_files
        from agy_host.builtins.transcripts import list_transcripts, transcripts_dir

        config = self.config()
        sec = report.section("prompt")
        source = "config / --system-prompt" if config.system_prompt.strip() else "none"
        sec.add("system prompt", f"{len(config.system_prompt)} chars ({source})" if source != "none" else "none")
        if config.prompt.agents_md:
            files = find_agents_files(os.getcwd())
            sec.add("AGENTS.md", f"{len(files)} found from here", detail=[str(f) for f in files])
        else:
            sec.add("AGENTS.md", "off ([prompt] agents_md = false)")
        sec.add("digest", f"on, {config.prompt.digest_max_chars} chars" if config.prompt.digest else "off (default)")
        if config.transcripts.enabled:
            sec.add("transcripts", f"{len(list_transcripts(self.env))} in {transcripts_dir(self.env)}")
        else:
            sec.add("transcripts", "off ([transcripts] enabled = false)")


def make_plugin() -> PromptAssembly:
    return PromptAssembly()


__all__ = ["DIGEST_URI", "ORDER", "PromptAssembly", "bound_conversation", "digest_part", "make_plugin", "system_text"]
