"""The model catalog an ACP agent offers, read from its ``session/new`` answer.

Agents list models either as the ``model`` config option or in the
(unstable) ``models`` field. Antigravity's ids carry the effort tier
(``gemini-3.8-flash-low``), so for Antigravity the catalog is folded into
families with ``efforts`` and an effort is resolved to a slug exactly as the
stream-json engine resolves it (:mod:`agy_host.engine.model_tiers`): the user sees
one catalog and passes ``--model gemini-3.8-flash --effort low`` on either
engine. Other agents' ids are shown and used as they are.
"""

from __future__ import annotations

from agy_host.engine.base import ModelCatalog, ModelInfo
from agy_host.engine.model_tiers import fold_tiers, resolve_effort
from agy_host_acp import schema as s


def catalog(setup: s.SessionSetup | None, *, antigravity: bool) -> ModelCatalog:
    rows: list[tuple[str, str]] = []
    current: str | None = None
    for opt in (setup.config_options or []) if setup is not None else []:
        if opt.id == "model":
            current = str(opt.current_value) if opt.current_value is not None else None
            rows += [
                (str(entry["value"]), str(entry.get("name", "")))
                for entry in opt.options
                if isinstance(entry, dict) and "value" in entry
            ]
    if not rows and setup is not None and setup.models is not None:
        current = setup.models.current_model_id
        rows = [(m.model_id, m.name) for m in setup.models.available_models]
    if antigravity:
        models = fold_tiers(rows, current=current)
    else:
        models = [ModelInfo(id=slug, name=name, current=slug == current) for slug, name in rows]
    return ModelCatalog(models=models, source="agent", current=current)


def antigravity_slug(model: str, effort: str | None, offered: list[ModelInfo]) -> tuple[str, str | None]:
    """``(the id to select, a notice or None)``: a family gets its tier
    (the effort asked for, the nearest one it has, or its cheapest)."""
    tier, note = resolve_effort(model, effort, offered)
    return (f"{model}-{tier}" if tier else model), note


__all__ = ["antigravity_slug", "catalog"]
