"""``agy-host doctor`` rows of the bridge: settings, skills, the CLI registration.

Doctor starts no server; it shows what a ``run`` would do, and what is on disk.
"""

from __future__ import annotations

import os

from agy_host.contract.diagnostics import DiagnosticReport


def bridge_rows(report: DiagnosticReport) -> None:
    from agy_host import config as config_mod
    from agy_host.service.roundtrip_text import seconds
    from agy_host_bridge_mcp import cli_registration, skills

    env = os.environ
    cfg = config_mod.load(env)
    bridge = cfg.bridge
    sec = report.section("bridge (MCP)")
    if not bridge.enabled:
        sec.add("bridge", "disabled ([bridge] enabled = false)", "info")
        return
    port = "a free loopback port per run" if bridge.port == 0 else f"127.0.0.1:{bridge.port}"
    sec.add("bridge", f"enabled on {port}", "ok")
    sec.add(
        "round-trips",
        f"park TTL {seconds(bridge.park_ttl_seconds)}, still-running answer after "
        f"{seconds(bridge.escalate_after_seconds) if bridge.escalate_after_seconds > 0 else 'never'}, "
        f"escalated TTL {seconds(bridge.escalated_ttl_seconds)}",
    )
    found = skills.scan(skills.skill_dirs(env, os.getcwd(), bridge.trusted_projects)) if bridge.skills else []
    where = skills.global_skills_dir(env)
    sec.add("skills", f"{len(found)} ({', '.join(s.name for s in found)})" if found else f"none in {where}")
    path = cli_registration.config_file(env)
    try:
        data = cli_registration.read(path)
    except cli_registration.RegistrationRefused as exc:
        sec.add("agy CLI config", str(exc), "warn")
        return
    if data is None:
        sec.add("agy CLI config", f"{path} (absent; written while a stream-json run is live)")
        return
    raw = data.get("mcpServers")
    servers = raw if isinstance(raw, dict) else {}
    ours = [name for name in servers if name.startswith(cli_registration.ENTRY_PREFIX)]
    sec.add("agy CLI config", f"{path}: {len(ours)} agy-host entr{'y' if len(ours) == 1 else 'ies'}")
