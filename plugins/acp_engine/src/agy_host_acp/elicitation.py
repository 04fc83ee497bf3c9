"""ACP ``elicitation/create``: the agent asks the user for input (stable in
ACP v1 since 2026; schema: ``CreateElicitationRequest``).

Two modes: ``form`` (a flat JSON Schema of primitive fields: string, number,
integer, boolean, and arrays for multi-selects) and ``url`` (send the user to
a URL; the agent may later say ``elicitation/complete``). Each becomes a host
:class:`~agy_host.contract.interactions.Question` for the broker, and its
:class:`~agy_host.contract.interactions.Answer` becomes the response:
``{"action": "accept", "content": {...}}``, ``decline`` or ``cancel``.

agy-host advertises ``elicitation: {form: {}, url: {}}`` in ``initialize``
(:data:`CLIENT_CAPABILITY`): an agent that sees no elicitation support
synthesises answers itself (codex-acp answered with an empty form), which is
exactly the invented answer a host must prevent. A mode we do not know is
answered ``cancel`` with a notice, never guessed at.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from agy_host.contract.interactions import Answer, FormField, Question

#: What agy-host tells agents it can do (``clientCapabilities.elicitation``).
CLIENT_CAPABILITY: dict[str, Any] = {"form": {}, "url": {}}


class _Choice(msgspec.Struct, kw_only=True):
    const: Any = None
    title: str | None = None


class _Items(msgspec.Struct, kw_only=True, rename="camel"):
    enum: list[Any] | None = None
    any_of: list[_Choice] | None = None
    one_of: list[_Choice] | None = None


class _Property(msgspec.Struct, kw_only=True, rename="camel"):
    type: str = "string"
    title: str | None = None
    description: str | None = None
    enum: list[Any] | None = None
    one_of: list[_Choice] | None = None
    items: _Items | None = None
    default: Any = None
    # Bounds and format, as sent (``Any``: a wrong type drops the bound, not the form).
    min_length: Any = None
    max_length: Any = None
    format: Any = None
    minimum: Any = None
    maximum: Any = None
    min_items: Any = None
    max_items: Any = None


class _Schema(msgspec.Struct, kw_only=True):
    properties: dict[str, _Property] = msgspec.field(default_factory=dict)
    required: list[str] | None = None
    title: str | None = None


class ElicitationParams(msgspec.Struct, kw_only=True, rename="camel"):
    """``elicitation/create`` params, flattened over its modes and scopes."""

    mode: str = ""
    message: str = ""
    requested_schema: _Schema | None = None
    url: str | None = None
    elicitation_id: str | None = None
    session_id: str | None = None
    tool_call_id: str | None = None
    request_id: Any = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


def decode(raw: bytes) -> ElicitationParams | str:
    """The params, or why they cannot be read (answered ``cancel``)."""
    try:
        return msgspec.json.decode(raw, type=ElicitationParams)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        return f"a malformed elicitation request ({str(exc)[:200]})"


def _choices(prop: _Property) -> list[str]:
    if prop.enum:
        return [str(v) for v in prop.enum]
    if prop.one_of:
        return [str(c.const) for c in prop.one_of if c.const is not None]
    items = prop.items
    if items is not None:
        if items.enum:
            return [str(v) for v in items.enum]
        listed = items.any_of or items.one_of or []
        return [str(c.const) for c in listed if c.const is not None]
    return []


def _count(value: Any) -> int | None:
    """A length or item bound: a whole number >= 0, else no bound."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _limit(value: Any) -> float | None:
    """A number bound: a finite number, else no bound."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _field(name: str, prop: _Property, required: bool) -> FormField:
    """One form field with what its answer must be (checked by the host's broker)."""
    return FormField(
        name=name,
        type=prop.type,
        title=prop.title or "",
        description=prop.description or "",
        required=required,
        choices=_choices(prop),
        default=prop.default,
        min_length=_count(prop.min_length),
        max_length=_count(prop.max_length),
        format=prop.format if isinstance(prop.format, str) else "",
        minimum=_limit(prop.minimum),
        maximum=_limit(prop.maximum),
        min_items=_count(prop.min_items),
        max_items=_count(prop.max_items),
    )


def _origin(params: ElicitationParams) -> str:
    """Who asks, when the agent says (a sub-agent's or an MCP server's name in ``_meta``)."""
    meta = params.meta or {}
    for key in ("agentName", "subagent", "server", "source"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def question_for(params: ElicitationParams, session: str, tool: str = "") -> Question | str:
    """The host question for ``params``, or why there is none (``cancel``)."""
    if params.mode == "form":
        schema = params.requested_schema or _Schema()
        required = set(schema.required or [])
        fields = [_field(name, prop, name in required) for name, prop in schema.properties.items()]
        return Question(
            kind="form",
            session=session,
            message=params.message or schema.title or "",
            origin=_origin(params),
            call_id=params.tool_call_id or "",
            tool=tool,
            fields=fields,
        )
    if params.mode == "url":
        if not params.url:
            return "a URL elicitation without a URL"
        return Question(
            kind="url",
            session=session,
            message=params.message,
            origin=_origin(params),
            call_id=params.tool_call_id or "",
            tool=tool,
            url=params.url,
        )
    return f"an elicitation of a mode agy-host does not know ({params.mode!r})"


def response_for(answer: Answer, question: Question) -> dict[str, Any]:
    """The ``CreateElicitationResponse`` for ``answer``."""
    if answer.action == "accept":
        if question.kind == "form":
            known = {f.name for f in question.fields}
            return {"action": "accept", "content": {k: v for k, v in answer.values.items() if k in known}}
        return {"action": "accept"}
    return {"action": answer.action}


__all__ = ["CLIENT_CAPABILITY", "ElicitationParams", "decode", "question_for", "response_for"]
