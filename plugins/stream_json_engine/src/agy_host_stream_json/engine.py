"""The stream-json engine: the ``agy`` CLI as a long-lived child speaking
NDJSON (``--input-format stream-json --output-format stream-json``).

Its session bindings use the un-suffixed store key (``<session>``), the key
the original pi bridge used for this dialect, so a store shared with it keeps
working and the ACP engine's ``<session>@acp`` bindings are never touched.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, ClassVar

import trio

from agy_host.contract.events import UsageCounts
from agy_host.engine.base import (
    AgentMode,
    Engine,
    EngineCapabilities,
    EngineContext,
    ModeCatalog,
    ModelCatalog,
    ModelInfo,
    PlanOutcome,
    PlanRequest,
)
from agy_host_stream_json import models
from agy_host_stream_json.config import SECTION, narrow, resolve_bin
from agy_host_stream_json.hooks import StreamJsonHooks
from agy_host_stream_json.outcome import INSTALL_HINT
from agy_host_stream_json.print_plan import print_mode_plan as run_print_mode_plan

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport, DiagnosticSection
    from agy_host.engine.driver import DriverSnapshot
    from agy_host_stream_json.driver import StreamJsonDriver


class StreamJsonEngine(Engine):
    ENGINE_NAME: ClassVar[str] = "stream-json"

    @staticmethod
    async def print_mode_plan(request: PlanRequest) -> PlanOutcome | None:
        """``ask --mode plan``, whatever engine is selected: ``agy -p --mode plan``."""
        return await run_print_mode_plan(request)

    DESCRIPTION: ClassVar[str] = "the agy CLI in stream-json mode: one long-lived agy process, one NDJSON line per turn"
    STORE_SUFFIX: ClassVar[str | None] = ""

    def __init__(self, ctx: EngineContext) -> None:
        super().__init__(ctx)
        self.settings = narrow(ctx.config.section(SECTION), ctx.warn)
        self.binary = resolve_bin(self.settings, ctx.env)
        self.hooks = StreamJsonHooks(self)
        #: The last ``result.usage`` seen per conversation: agy's counters run
        #: across turns and processes, so a turn's usage is the difference.
        self.usage_totals: dict[str, UsageCounts] = {}
        #: The open driver, for doctor in a long-lived process.
        self.driver: StreamJsonDriver | None = None
        self.models_error: str | None = None
        self._catalog: list[ModelInfo] | None = None
        if ctx.agent:
            ctx.warn(f"the stream-json engine runs agy itself ($AGY_BIN or `{SECTION}.bin`); --agent is ignored")

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(reports_usage=True, plan_mode=True, images=False, resources=False, load_session=True)

    def agent_label(self) -> str:
        return "agy"

    async def list_modes(self) -> ModeCatalog:
        """agy's own two (``--mode``), and the other names this engine takes for them."""
        from agy_host_stream_json.profile import MODE_ALIASES, MODES

        about = {"accept-edits": "edits are applied, other tools follow the permissions", "plan": "a plan only"}
        aliases = {name: mode for name, mode in MODE_ALIASES.items() if name not in MODES}
        offered = [AgentMode(id=mode, description=about.get(mode, "")) for mode in MODES]
        return ModeCatalog(modes=offered, current="accept-edits", aliases=aliases)

    def open_driver(self) -> contextlib.AbstractAsyncContextManager[StreamJsonDriver]:
        from agy_host_stream_json.driver import open_driver

        return open_driver(self)

    # -- models ------------------------------------------------------------------------

    def catalog_models(self) -> list[ModelInfo]:
        """The catalog as far as it is known without starting agy (the cache),
        for the effort tiers of a turn's model; ``[]`` when nothing is cached."""
        if self._catalog is None:
            cached = models.read_cache(self.ctx.state_dir / models.CACHE_FILE, self.ctx.warn)
            self._catalog = models.parse_catalog(cached.raw) if cached is not None else []
        return self._catalog

    async def list_models(self) -> ModelCatalog:
        """The cache while fresh; else ``agy models`` under a watchdog; else a
        stale cache; else the built-in fallback (doctor marks it)."""
        cfg = self.settings
        path = self.ctx.state_dir / models.CACHE_FILE
        cached = models.read_cache(path, self.ctx.warn)
        current = self.ctx.config.model or None
        if cached is not None and time.time() - cached.saved_at < cfg.models_cache_ttl_seconds:
            found = models.parse_catalog(cached.raw)
            if found:
                self._catalog = found
                return ModelCatalog(models=found, source="cache", current=current)
        try:
            raw = await models.discover(self.binary.command, self.ctx.env, cfg.models_timeout_seconds)
        except models.ModelsError as exc:
            self.models_error = str(exc)
        else:
            self.models_error = None
            try:
                models.write_cache(path, raw)
            except OSError as exc:
                self.ctx.warn(f"stream-json: could not save the model cache {path}: {exc}")
            self._catalog = models.parse_catalog(raw)
            return ModelCatalog(models=self._catalog, source="agent", current=current)
        if cached is not None and models.parse_catalog(cached.raw):
            return ModelCatalog(models=models.parse_catalog(cached.raw), source="cache", current=current)
        return ModelCatalog(models=list(models.FALLBACK_MODELS), source="fallback", current=current)

    # -- doctor --------------------------------------------------------------------------

    async def diagnose(self, report: DiagnosticReport) -> None:
        sec = report.section("stream-json engine")
        binary = self.binary
        if not binary.found:
            sec.add("agy", f"{binary.value} ({binary.source}): not found", "error", [INSTALL_HINT])
        else:
            sec.add("agy", f"{binary.command} ({binary.source})", "ok")
            sec.add("version", await self._version())
        catalog = await self.list_models()
        count = len(catalog.models)
        if catalog.source == "fallback":
            sec.add("models", f"{count} FALLBACK (agy models failed)", "warn", [self.models_error or ""])
        else:
            label = "discovered" if catalog.source == "agent" else "cached"
            sec.add("models", f"{count} {label}", "ok", [", ".join(m.id for m in catalog.models)])
        cfg = self.ctx.config
        sec.add(
            "permissions",
            "skipped (--dangerously-skip-permissions)"
            if cfg.skip_permissions
            else "agy's own: tools that need permission are denied (headless agy cannot ask)",
        )
        sec.add("print timeout", f"turn deadline + {self.settings.print_timeout_margin_seconds:g}s")
        sec.add("sign-in", "not checked (doctor spends no tokens); a turn that is not signed in says how to fix it")
        if self.driver is not None:
            snapshot_rows(sec, self.driver.snapshot())

    async def _version(self) -> str:
        with trio.move_on_after(self.settings.models_timeout_seconds):
            try:
                proc = await trio.run_process(
                    [self.binary.command, "--version"],
                    stdin=b"",
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                    env=dict(self.ctx.env),
                )
            except OSError as exc:
                return f"unknown ({exc})"
            text = proc.stdout.decode("utf-8", "replace").strip()
            return text.splitlines()[0] if proc.returncode == 0 and text else f"unknown (exit {proc.returncode})"
        return f"unknown (no answer within {self.settings.models_timeout_seconds:g}s)"


def snapshot_rows(sec: DiagnosticSection, snap: DriverSnapshot) -> None:
    """A live driver's state, as doctor's "last run" section shows a stored one."""
    sec.add("driver", snap.state + (f" pid={snap.pid}" if snap.pid else ""))
    sec.add("conversation", snap.conversation_id or "(none)")
    stats = " ".join(f"{k}={v}" for k, v in snap.stats.items())
    if snap.last_recycle_reason:
        stats += f" (last recycle: {snap.last_recycle_reason})"
    sec.add("driver stats", stats)
    entries = snap.lifecycle[-5:]
    if entries:
        sec.add("lifecycle", f"last {len(entries)}", detail=[e.format() for e in entries])


__all__ = ["StreamJsonEngine", "snapshot_rows"]
