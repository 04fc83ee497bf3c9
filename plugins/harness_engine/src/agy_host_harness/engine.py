"""The harness engine: Google's own Antigravity agent loop (``localharness``),
driven over its own wire, against any model endpoint.

Store keys are ``<session>@harness``; the conversation id is the harness's
``cascadeId``, resumed after agy-host restarts from the harness's storage
folder (under agy-host's state dir, like its HOME and app data, so nothing
is written into ``~/.gemini`` unless configured).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import msgspec

from agy_host import fsutil
from agy_host.engine.base import Engine, EngineCapabilities, EngineContext, ModelCatalog
from agy_host_harness import binary as binary_mod
from agy_host_harness import models as models_mod
from agy_host_harness import pin
from agy_host_harness.harness_config import Endpoint, endpoint, shadowed_base_url
from agy_host_harness.settings import SECTION, narrow

if TYPE_CHECKING:
    from agy_host.contract.diagnostics import DiagnosticReport
    from agy_host_harness.driver import HarnessDriver


class Paths(msgspec.Struct, kw_only=True, frozen=True):
    home: Path
    storage: Path
    app_data: Path
    conversations: Path


class _SavedConversation(msgspec.Struct, kw_only=True):
    system_block: str = ""


class HarnessEngine(Engine):
    ENGINE_NAME: ClassVar[str] = "harness"
    DESCRIPTION: ClassVar[str] = (
        "Google's Antigravity agent loop (localharness) over its own wire, against any model endpoint"
    )

    def __init__(self, ctx: EngineContext) -> None:
        super().__init__(ctx)
        self.settings = narrow(ctx.config.section(SECTION), ctx.warn)
        self.binary = binary_mod.resolve(self.settings.bin, ctx.env)
        self.endpoint: Endpoint = endpoint(self.settings, ctx.env)
        shadowed = shadowed_base_url(self.settings, ctx.env)
        if shadowed:
            ctx.warn(shadowed)
        self.catalog = models_mod.catalog(self.settings, ctx.env, thinking=self.endpoint.kind != "openai")
        root = ctx.state_dir / "harness"
        self.paths = Paths(
            home=Path(self.settings.home).expanduser() if self.settings.home else root / "home",
            storage=Path(self.settings.storage_dir).expanduser() if self.settings.storage_dir else root / "storage",
            app_data=Path(self.settings.app_data_dir).expanduser() if self.settings.app_data_dir else root / "app-data",
            conversations=root / "conversations",
        )
        self.driver: HarnessDriver | None = None
        from agy_host_harness.hooks import HarnessEngineHooks

        self.hooks = HarnessEngineHooks(self)
        if ctx.agent:
            ctx.warn("the harness engine runs Google's localharness itself; --agent is ignored")

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(
            reports_usage=True,
            plan_mode=False,
            images=True,
            resources=True,
            load_session=True,
            system_out_of_band=True,
            serves_many_sessions=True,
            host_tools_in_process=True,
        )

    def agent_label(self) -> str:
        return "localharness"

    def open_driver(self) -> contextlib.AbstractAsyncContextManager[HarnessDriver]:
        from agy_host_harness.driver import open_driver

        for path in (self.paths.home, self.paths.storage, self.paths.app_data):
            path.mkdir(parents=True, exist_ok=True)
        return open_driver(self)

    def harness_env(self) -> dict[str, str]:
        """The harness's environment: ours, its HOME moved, the configured extras.
        The API key travels in the conversation config, not here."""
        env = dict(self.ctx.env)
        env["HOME"] = str(self.paths.home)
        env.update(self.settings.env)
        return env

    # -- the host's system block, kept per conversation for resumes -------------------------

    def _saved(self, cascade_id: str) -> Path:
        safe = "".join(c for c in cascade_id if c.isalnum() or c in "-_") or "unnamed"
        return self.paths.conversations / f"{safe}.json"

    def save_system_block(self, cascade_id: str, block: str) -> None:
        if not block:
            return
        try:
            self.paths.conversations.mkdir(parents=True, exist_ok=True)
            fsutil.write_atomic(self._saved(cascade_id), msgspec.json.encode(_SavedConversation(system_block=block)))
        except OSError as exc:
            self.ctx.warn(f"harness: could not keep the system prompt of conversation {cascade_id}: {exc}")

    def saved_system_block(self, cascade_id: str) -> str:
        path = self._saved(cascade_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            self.ctx.warn(f"harness: could not read {path}: {exc}")
            return ""
        try:
            return msgspec.json.decode(data, type=_SavedConversation).system_block
        except msgspec.MsgspecError:
            moved = fsutil.quarantine(path)
            self.ctx.warn(f"harness: {path} is corrupt; moved to {moved}; the conversation resumes without it")
            return ""

    # -- models ----------------------------------------------------------------------------

    async def list_models(self) -> ModelCatalog:
        """The configured models, folded like Antigravity's catalog (the
        harness has no catalog call); see :mod:`.models`."""
        current = self.ctx.config.model or self.settings.model
        return ModelCatalog(models=self.catalog.models, source="config", current=current)

    # -- doctor ----------------------------------------------------------------------------

    async def diagnose(self, report: DiagnosticReport) -> None:
        sec = report.section("harness engine")
        b = self.binary
        if b.found:
            version = b.version or "unknown (not from a wheel agy-host can read)"
            sec.add("binary", f"{b.path} ({b.source})", "ok", [f"version {version}; pinned {pin.VERSION}"])
            if b.version and b.version != pin.VERSION:
                sec.add(
                    "version",
                    f"{b.version} is not the pinned {pin.VERSION}",
                    "warn",
                    ["the wire is private and unversioned; run `agy-host harness install`"],
                )
        else:
            sec.add("binary", f"{b.problem} ({b.source})", "error", [binary_mod.INSTALL_HINT])
        from agy_host_harness.install import read_receipt

        receipt = read_receipt(self.ctx.env)
        if receipt is not None:
            sec.add("managed install", f"{receipt.version} sha256 {receipt.sha256[:16]}...", "ok", [receipt.wheel])
        point = self.endpoint
        level: Literal["ok", "warn"] = "ok" if point.kind != "gemini" or point.api_key or point.base_url else "warn"
        hint = (
            []
            if level == "ok"
            else [f"set {self.settings.api_key_env}, [harness] base_url, project or openai_base_url"]
        )
        from agy_host_harness import reachability, retries

        unreachable = await reachability.problem(point, self.harness_env())
        if unreachable is not None:
            sec.add("endpoint", point.describe(), "error", [unreachable])
        else:
            sec.add("endpoint", point.describe(), level, hint)
        sec.add("retries", retries.summary(self.settings))
        sec.add("model", self.ctx.config.model or self.settings.model)
        budget = self.settings.max_model_calls
        sec.add(
            "budget",
            f"{budget} model calls per turn" if budget else "none (the harness will loop without a cap)",
            "ok" if budget else "warn",
        )
        sec.add("state", str(self.paths.storage.parent))
        sec.add(
            "sign-in",
            "none: the harness uses an API key, Vertex credentials or a local endpoint; doctor spends no tokens",
        )
        if self.driver is not None:
            snap = self.driver.snapshot()
            sec.add("driver", snap.state + (f" pid={snap.pid}" if snap.pid else ""))
            sec.add("driver stats", " ".join(f"{k}={v}" for k, v in snap.stats.items()))


__all__ = ["HarnessEngine", "Paths"]
