"""The built-in prompt parts: the G10 system block and the G1 digest.

Both are engine-agnostic text; the turn layer decides where they go
(``system`` parts only on a new conversation; a ``context`` part as an
embedded resource on engines that take one, inline elsewhere), so the same
bytes reach every engine. The settings come from the command's effective
config (:mod:`agy_host.builtins.config_capture`): ``system_prompt``
(``--system-prompt`` lands there), ``[prompt] agents_md``, ``[prompt] digest``
and ``digest_max_chars``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agy_host import hookimpl
from agy_host.builtins.config_capture import current_config
from agy_host.builtins.digest import build_digest, digest_text
from agy_host.builtins.system_prompt import agents_sections, system_block
from agy_host.builtins.transcripts import read_transcript
from agy_host.prompt_parts import PromptPart

if TYPE_CHECKING:
    from agy_host.config import Config
    from agy_host.diagnostics import DiagnosticReport
    from agy_host.prompt_parts import PromptContext

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
    from agy_host.store import SessionStore

    store = SessionStore.in_state_dir(state_dir(env))
    best = None
    for key, binding in store.all().items():
        if key.partition("@")[0] != session or binding.engine != engine:
            continue
        if best is None or binding.updated_at > best.updated_at:
            best = binding
    return best.conversation_id if best is not None else None


def digest_part(turn: PromptContext, config: Config) -> PromptPart | None:
    entries = read_transcript(turn.session)
    if not entries:
        return None
    conversation = None if turn.new_conversation else bound_conversation(turn.session, turn.engine)
    body = build_digest(entries, conversation, config.prompt.digest_max_chars)
    if not body:
        return None
    # The entry count in the URI changes whenever the digest can, so an agent
    # that de-duplicates resources by URI never serves a stale one.
    uri = f"{DIGEST_URI}/{turn.session}/{len(entries)}"
    return PromptPart(text=digest_text(body), where="context", order=ORDER, uri=uri)


@hookimpl
def agy_host_prompt_parts(turn: PromptContext) -> list[PromptPart] | None:
    config = current_config()
    parts: list[PromptPart] = []
    if turn.new_conversation:
        text = system_text(config, turn.cwd)
        if text:
            parts.append(PromptPart(text=text, where="system", order=ORDER))
    if config.prompt.digest:
        part = digest_part(turn, config)
        if part is not None:
            parts.append(part)
    return parts or None


@hookimpl
def agy_host_diagnostics(report: DiagnosticReport) -> None:
    import os

    from agy_host.builtins.system_prompt import find_agents_files
    from agy_host.builtins.transcripts import list_transcripts, transcripts_dir

    config = current_config()
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
        sec.add("transcripts", f"{len(list_transcripts())} in {transcripts_dir()}")
    else:
        sec.add("transcripts", "off ([transcripts] enabled = false)")


__all__ = ["DIGEST_URI", "ORDER", "bound_conversation", "digest_part", "system_text"]
