"""The harness engine's model catalog and what a turn's model and effort become.

The harness has no catalog call: the models are what ``[harness] models``
lists (``$AGY_HOST_HARNESS_MODELS``, comma-separated, wins), folded by core's
:mod:`agy_host.engine.model_tiers` exactly as the other engines fold Antigravity's,
so the same ids and effort tiers resolve everywhere:

* a family listed with tiers (``gemini-3.8-flash-low``, ``-high``) is one
  entry with ``efforts``; ``--model gemini-3.8-flash --effort low`` sends the
  slug ``gemini-3.8-flash-low``, as Antigravity's own clients do;
* any other Gemini model takes the effort as its ``thinkingLevel``
  (``--model gemini-3.8-flash --effort high``), when the endpoint has one;
* other models (a local model, a fixed-thinking one) take no effort: a
  notice says it is not passed.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from agy_host.engine.base import ModelInfo
from agy_host.engine.model_tiers import EFFORT_FAMILY, TIERS, fold_tiers, level_to_tier, resolve_effort
from agy_host_harness.settings import HarnessSettings

MODELS_ENV = "AGY_HOST_HARNESS_MODELS"


class Catalog(msgspec.Struct, kw_only=True):
    models: list[ModelInfo]
    #: Ids folded from tier slugs: their effort picks a slug, not a thinking level.
    families: set[str]
    thinking: bool

    def resolve(self, model: str, effort: str | None) -> tuple[str, str | None, str | None]:
        """``(model name to send, thinkingLevel or None, a notice or None)``."""
        if model in self.families:
            tier, note = resolve_effort(model, effort, self.models)
            return (f"{model}-{tier}" if tier else model), None, note
        if effort is None:
            return model, None, None
        if self.thinking and EFFORT_FAMILY.match(model):
            try:
                return model, level_to_tier(effort), None
            except ValueError as exc:
                return model, None, f"{exc}; the model's own thinking level is used"
        return model, None, f"model {model} takes no effort setting here; effort {effort!r} is not passed"


def listed(settings: HarnessSettings, env: Mapping[str, str]) -> list[str]:
    value = env.get(MODELS_ENV, "").strip()
    if value:
        return [m.strip() for m in value.split(",") if m.strip()]
    return list(settings.models)


def catalog(settings: HarnessSettings, env: Mapping[str, str], *, thinking: bool) -> Catalog:
    models = fold_tiers([(m, m) for m in listed(settings, env)])
    families = {m.id for m in models if m.efforts}
    for info in models:
        if thinking and not info.efforts and EFFORT_FAMILY.match(info.id):
            info.efforts = list(TIERS)
    return Catalog(models=models, families=families, thinking=thinking)


__all__ = ["MODELS_ENV", "Catalog", "catalog", "listed"]
