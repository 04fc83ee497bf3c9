"""Validate ACP JSON-RPC messages against the vendored ACP v1 JSON schema.

The schema in ``tests/fixtures/acp-schema/`` is the one the official SDKs are
generated from. Its top-level union does not tie a ``method`` to its
``params``, so validating a message against it proves little. This helper
resolves the exact definition instead, from the schema's own annotations
(``x-method`` and ``x-side`` on every request, response and notification
definition), by the message's direction and method:

* a message the **client** (agy-host) sends: requests such as ``initialize``,
  ``session/new``, ``session/prompt``; the ``session/cancel`` notification;
  responses to the agent's requests (``session/request_permission``, ...);
* a message the **agent** sends: ``session/update`` notifications, requests
  such as ``session/request_permission``; responses to the client's requests.

A response carries no method, so the method of the request it answers must be
given (``request_method=``). Errors name the failing path::

    from conformance.schema import validate_agent_message, AcpSchemaError

    validate_agent_message(line_as_dict)                       # request / notification
    validate_agent_message(resp, request_method="session/new")  # response

Extension methods (names starting with ``_``) are checked for the envelope
only: the schema leaves their payload open. ``$/cancel_request`` is accepted
from both sides.
"""

from __future__ import annotations

import functools
import heapq
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import ValidationError, relevance

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "acp-schema"
STABLE_SCHEMA = SCHEMA_DIR / "acp-v1-schema.json"
UNSTABLE_SCHEMA = SCHEMA_DIR / "acp-v1-schema.unstable.json"

#: The schema is draft 2020-12; its type names are checked with that draft's checker.
_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER

Sender = Literal["client", "agent"]
Kind = Literal["request", "response", "notification"]

#: Which ``x-side`` a definition carries for a message sent *by* ``Sender``.
#: ``x-side`` names the side that handles the method: a request the client
#: sends is handled by the agent (``x-side: agent``), and so is its response
#: definition (the agent produces it).
_HANDLER_OF: dict[Sender, str] = {"client": "agent", "agent": "client"}
_OTHER: dict[Sender, Sender] = {"client": "agent", "agent": "client"}

__all__ = [
    "AcpSchemaError",
    "Checked",
    "Exchange",
    "SCHEMA_DIR",
    "definition_for",
    "methods",
    "validate_agent_message",
    "validate_client_message",
    "validate_definition",
    "validate_message",
]


class AcpSchemaError(ValueError):
    """A message does not conform to the ACP schema.

    ``path`` is a JSON path into the message (``$.params.update.content``);
    ``definition`` is the schema definition it was checked against.
    """

    def __init__(self, message: str, *, path: str, definition: str, sender: str, kind: str, method: str | None) -> None:
        self.path = path
        self.definition = definition
        self.sender = sender
        self.kind = kind
        self.method = method
        self.reason = message
        what = f"{sender} {kind}" + (f" {method!r}" if method else "")
        super().__init__(f"{what}: at {path}: {message} [schema: {definition}]")


# ---------------------------------------------------------------------------
# Schema loading and the method index
# ---------------------------------------------------------------------------


@functools.cache
def _root(unstable: bool) -> dict[str, Any]:
    path = UNSTABLE_SCHEMA if unstable else STABLE_SCHEMA
    with open(path, encoding="utf-8") as f:
        root: dict[str, Any] = json.load(f)
    return root


@functools.cache
def _index(unstable: bool) -> dict[tuple[str, str, str], str]:
    """``(x-side, kind, method) -> definition name`` from the annotations."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in _root(unstable)["$defs"].items():
        method = schema.get("x-method")
        side = schema.get("x-side")
        if not method or not side:
            continue
        for suffix, kind in (("Request", "request"), ("Response", "response"), ("Notification", "notification")):
            if name.endswith(suffix):
                key = (side, kind, method)
                if key in out:  # pragma: no cover - the schema would be ambiguous
                    raise RuntimeError(f"schema defines {key} twice: {out[key]} and {name}")
                out[key] = name
                break
    return out


def methods(sender: Sender, kind: Literal["request", "notification"], *, unstable: bool = False) -> list[str]:
    """The ACP methods ``sender`` may send as ``kind`` (for tests and docs)."""
    side = _HANDLER_OF[sender]
    return sorted(m for (s, k, m) in _index(unstable) if s == side and k == kind)


def _sent_by(side: str, kind: str) -> str:
    """Who sends a message whose definition carries ``x-side: side``."""
    if side == "protocol":
        return "client or agent"
    return side if kind == "response" else ("client" if side == "agent" else "agent")


def definition_for(sender: Sender, kind: Kind, method: str, *, unstable: bool = False) -> str:
    """The schema definition for ``method`` sent by ``sender`` as ``kind``.

    For a response, ``method`` is the method of the request it answers (sent
    by the *other* side). Raises :class:`KeyError` with an explanation when the
    method is not one this side sends.
    """
    index = _index(unstable)
    if method.startswith("_"):
        return {"request": "ExtRequest", "response": "ExtResponse", "notification": "ExtNotification"}[kind]
    if kind == "notification" and (("protocol", kind, method) in index):
        return index[("protocol", kind, method)]
    # A response is produced by the side that handles the request.
    side = _HANDLER_OF[sender] if kind != "response" else _HANDLER_OF[_OTHER[sender]]
    found = index.get((side, kind, method))
    if found is not None:
        return found
    # Explain the likely mistake: right method, wrong direction or kind.
    hints = sorted({f"{_sent_by(s, k)} {k}" for (s, k, m) in index if m == method and k != "response"})
    hint = f" (ACP v1 has it as: {', '.join(hints)})" if hints else " (not an ACP v1 method)"
    if kind == "response":
        raise KeyError(f"the {sender} answers no {method!r}: it is not a request the {_OTHER[sender]} sends{hint}")
    raise KeyError(f"{method!r} is not a {kind} the {sender} sends{hint}")


# ---------------------------------------------------------------------------
# Validators
# ---------------------------------------------------------------------------


def _with_defs(schema: dict[str, Any], unstable: bool) -> dict[str, Any]:
    root = _root(unstable)
    return {"$schema": root["$schema"], "$defs": root["$defs"], **schema}


def _requires_fields(definition: str, unstable: bool) -> bool:
    schema = _root(unstable)["$defs"][definition]
    return bool(schema.get("required"))


@functools.cache
def _envelope_validator(kind: Kind, method: str | None, definition: str | None, unstable: bool) -> Any:
    """A validator for the whole JSON-RPC object of one kind and method."""
    props: dict[str, Any] = {"jsonrpc": {"const": "2.0"}}
    required = ["jsonrpc"]
    if kind in ("request", "notification"):
        assert method is not None and definition is not None
        props["method"] = {"const": method}
        props["params"] = {"$ref": f"#/$defs/{definition}"}
        required.append("method")
        if kind == "request":
            props["id"] = {"$ref": "#/$defs/RequestId"}
            required.append("id")
        if _requires_fields(definition, unstable):
            required.append("params")
    else:
        props["id"] = {"$ref": "#/$defs/RequestId"}
        required.append("id")
        props["error"] = {"$ref": "#/$defs/Error"}
        if definition is not None:
            props["result"] = {"$ref": f"#/$defs/{definition}"}
    schema = _with_defs(
        {"type": "object", "properties": props, "required": required, "additionalProperties": False}, unstable
    )
    return jsonschema.validators.validator_for(schema)(schema)


@functools.cache
def _definition_validator(definition: str, unstable: bool) -> Any:
    root = _root(unstable)
    if definition not in root["$defs"]:
        raise KeyError(f"no definition {definition!r} in the ACP schema")
    schema = _with_defs({"$ref": f"#/$defs/{definition}"}, unstable)
    return jsonschema.validators.validator_for(schema)(schema)


# ---------------------------------------------------------------------------
# Error selection: name the branch the message meant, not a random one
# ---------------------------------------------------------------------------


def _discriminator(branches: list[Any]) -> tuple[str, list[Any]] | None:
    """The property that tells the branches apart (``sessionUpdate``,
    ``type``, ``outcome``...) and each branch's tag for it.

    Every branch but at most one pins the property with ``const``; the one
    that does not (MCP's stdio server has no ``type``) is the default, with tag
    ``None``.
    """
    pinned: list[set[str]] = []
    for branch in branches:
        if not isinstance(branch, Mapping):
            return None
        props = branch.get("properties", {})
        pinned.append({k for k, v in props.items() if isinstance(v, Mapping) and "const" in v})
    tagged = [p for p in pinned if p]
    if len(tagged) < max(2, len(branches) - 1):
        return None
    common = set.intersection(*tagged)
    if not common:
        return None
    prop = sorted(common)[0]
    tags = [
        branch["properties"][prop]["const"] if prop in pin else None
        for branch, pin in zip(branches, pinned, strict=True)
    ]
    return prop, tags


def _consts(branches: list[Any]) -> list[Any] | None:
    """The allowed values when every branch is a plain ``const`` (an enum
    spelled as ``oneOf``, like ``StopReason``); ``None`` otherwise."""
    values = []
    for branch in branches:
        if not isinstance(branch, Mapping) or "const" not in branch:
            return None
        values.append(branch["const"])
    return values


def _most_relevant(errors: Iterable[ValidationError]) -> ValidationError | None:
    return max(errors, key=relevance, default=None)


def _pick(error: ValidationError) -> ValidationError:
    """Descend into ``oneOf``/``anyOf`` errors along the branch the instance
    meant (by its discriminator), so the error names the real problem; report
    an unknown tag or enum value plainly."""
    while error.context:
        if error.validator not in ("oneOf", "anyOf"):
            deepest = heapq.nsmallest(2, error.context, key=relevance)
            if len(deepest) == 2 and relevance(deepest[0]) == relevance(deepest[1]):
                return error
            error = deepest[0]
            continue
        branches = error.validator_value if isinstance(error.validator_value, list) else []
        instance = error.instance
        where = list(error.absolute_path)
        consts = _consts(branches)
        if consts is not None:
            return ValidationError(
                f"{instance!r} is not one of {consts}", path=where, validator="enum", instance=instance
            )
        found = _discriminator(branches)
        if found is not None and isinstance(instance, Mapping):
            prop, tags = found
            value = instance.get(prop)
            known = [t for t in tags if t is not None]
            if value in known:
                chosen = tags.index(value)
            elif None in tags:
                chosen = tags.index(None)
            else:
                msg = (
                    f"{prop!r} is missing; expected one of {known}"
                    if prop not in instance
                    else f"unknown {prop} {value!r}; expected one of {known}"
                )
                return ValidationError(msg, path=where, validator="discriminator", instance=instance)
            sub = _most_relevant(e for e in error.context if e.schema_path and e.schema_path[0] == chosen)
            if sub is None:  # pragma: no cover - the chosen branch had no error
                return error
            error = sub
            continue
        types = _branch_types(branches)
        if types is not None and not any(_TYPES.is_type(instance, t) for t in types):
            return ValidationError(
                f"{instance!r} is not of type {' or '.join(repr(t) for t in types)}",
                path=where,
                validator="type",
                instance=instance,
            )
        # No tag to go by: follow the branch that came closest (fewest errors).
        by_branch: dict[int, list[ValidationError]] = {}
        for e in error.context:
            if e.schema_path and isinstance(e.schema_path[0], int):
                by_branch.setdefault(e.schema_path[0], []).append(e)
        if not by_branch:
            return error
        fewest = min(len(v) for v in by_branch.values())
        closest = [k for k, v in by_branch.items() if len(v) == fewest]
        if len(closest) == 1:
            error = _most_relevant(by_branch[closest[0]]) or error
            continue
        reasons = sorted({(_most_relevant(by_branch[k]) or error).message for k in closest})
        return ValidationError(
            "matches none of the allowed shapes: " + " | ".join(reasons),
            path=where,
            validator=error.validator,
            instance=instance,
        )
    return error


def _branch_types(branches: list[Any]) -> list[str] | None:
    """The JSON types the branches allow, when every branch says."""
    out: list[str] = []
    for branch in branches:
        if not isinstance(branch, Mapping) or "type" not in branch:
            return None
        t = branch["type"]
        for name in t if isinstance(t, list) else [t]:
            if name not in out:
                out.append(name)
    return out


def _format_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _check(validator: Any, instance: Any, *, definition: str, sender: str, kind: str, method: str | None) -> None:
    errors = list(validator.iter_errors(instance))
    if not errors:
        return
    best = _pick(_most_relevant(errors) or errors[0])
    raise AcpSchemaError(
        best.message,
        path=_format_path(best.absolute_path),
        definition=definition,
        sender=sender,
        kind=kind,
        method=method,
    )


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------


def _kind_of(msg: Mapping[str, Any]) -> Kind:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "response"


def validate_message(
    msg: Mapping[str, Any], *, sender: Sender, request_method: str | None = None, unstable: bool = False
) -> str:
    """Validate one JSON-RPC object sent by ``sender``; return the definition
    name it was checked against. Raises :class:`AcpSchemaError`."""
    if not isinstance(msg, Mapping):
        raise AcpSchemaError(
            f"a JSON-RPC message must be an object, not {type(msg).__name__}",
            path="$",
            definition="-",
            sender=sender,
            kind="message",
            method=None,
        )
    kind = _kind_of(msg)
    if kind == "response":
        has_result, has_error = "result" in msg, "error" in msg
        if has_result == has_error:
            raise AcpSchemaError(
                "a response must carry exactly one of 'result' and 'error'"
                + ("" if has_result else " (a message without 'method' is a response)"),
                path="$",
                definition="-",
                sender=sender,
                kind=kind,
                method=request_method,
            )
        if has_error:
            definition = "Error"
            validator = _envelope_validator("response", None, None, unstable)
        else:
            if request_method is None:
                raise TypeError("request_method= is required to validate a successful response")
            try:
                definition = definition_for(sender, "response", request_method, unstable=unstable)
            except KeyError as exc:
                raise AcpSchemaError(
                    exc.args[0], path="$", definition="-", sender=sender, kind=kind, method=request_method
                ) from None
            validator = _envelope_validator("response", request_method, definition, unstable)
        _check(validator, msg, definition=definition, sender=sender, kind=kind, method=request_method)
        return definition

    method = msg["method"]
    if not isinstance(method, str):
        raise AcpSchemaError(
            f"'method' must be a string, not {type(method).__name__}",
            path="$.method",
            definition="-",
            sender=sender,
            kind=kind,
            method=None,
        )
    try:
        definition = definition_for(sender, kind, method, unstable=unstable)
    except KeyError as exc:
        raise AcpSchemaError(
            exc.args[0], path="$.method", definition="-", sender=sender, kind=kind, method=method
        ) from None
    validator = _envelope_validator(kind, method, definition, unstable)
    _check(validator, msg, definition=definition, sender=sender, kind=kind, method=method)
    return definition


def validate_client_message(msg: dict[str, Any], *, request_method: str | None = None, unstable: bool = False) -> str:
    """Validate a message the client (agy-host) sends to an agent.

    For a response (to an agent's request such as
    ``session/request_permission``) pass ``request_method``.
    """
    return validate_message(msg, sender="client", request_method=request_method, unstable=unstable)


def validate_agent_message(msg: dict[str, Any], *, request_method: str | None = None, unstable: bool = False) -> str:
    """Validate a message an agent sends to the client.

    For a response (to the client's ``initialize``, ``session/new``, ...) pass
    ``request_method``.
    """
    return validate_message(msg, sender="agent", request_method=request_method, unstable=unstable)


def validate_definition(instance: Any, definition: str, *, unstable: bool = False) -> None:
    """Validate a fragment (a content block, a session update, an outcome)
    against one named definition of the schema."""
    validator = _definition_validator(definition, unstable)
    _check(validator, instance, definition=definition, sender="-", kind="fragment", method=None)


# ---------------------------------------------------------------------------
# Two-way conversations: pair each response with its request
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """One message that validated: who sent it, what it was, against which definition."""

    sender: Sender
    kind: Kind
    #: The method of a request or notification; for a response, the method it answers.
    method: str | None
    definition: str


class Exchange:
    """Validate a whole conversation, in wire order, from both sides.

    A response carries no method; this tracks the open requests of each side
    by id (the client's and the agent's ids are separate spaces: both start
    at 0), so every response is validated against the definition of the
    request it answers. A response to an id nobody asked, or a second answer
    to one request, is an :class:`AcpSchemaError` too: a peer that accepted it
    would be guessing.

    ``checked`` lists every message that validated, for assertions on what a
    test actually covered.
    """

    def __init__(self, *, unstable: bool = False) -> None:
        self.unstable = unstable
        self.checked: list[Checked] = []
        self._open: dict[Sender, dict[Any, str]] = {"client": {}, "agent": {}}

    def feed(self, sender: Sender, msg: Mapping[str, Any], *, request_method: str | None = None) -> str:
        """Validate one message ``sender`` put on the wire; return its definition.

        ``request_method`` names what a response answers when the recording
        lost the request id (htui's recorder); otherwise it is looked up.
        """
        kind = _kind_of(msg) if isinstance(msg, Mapping) else "response"
        method: str | None
        if kind == "response" and isinstance(msg, Mapping):
            asked = self._open[_OTHER[sender]]
            method = request_method if request_method is not None else asked.pop(msg.get("id"), None)
            if method is None:
                raise AcpSchemaError(
                    f"response to id {msg.get('id')!r}, which the {_OTHER[sender]} never asked (or was answered)",
                    path="$.id",
                    definition="-",
                    sender=sender,
                    kind=kind,
                    method=None,
                )
            if "error" in msg:  # an error answers any request; the method is still recorded
                definition = validate_message(msg, sender=sender, unstable=self.unstable)
            else:
                definition = validate_message(msg, sender=sender, request_method=method, unstable=self.unstable)
        else:
            method = msg.get("method") if isinstance(msg, Mapping) and isinstance(msg.get("method"), str) else None
            if kind == "request" and method is not None:
                # Open before validating: the other side answers it even if
                # this request is malformed, and that answer is checked too.
                self._open[sender][msg["id"]] = method
            definition = validate_message(msg, sender=sender, unstable=self.unstable)
        self.checked.append(Checked(sender, kind, method, definition))
        return definition

    def unanswered(self, sender: Sender) -> dict[Any, str]:
        """The requests ``sender`` made that got no response (id -> method)."""
        return dict(self._open[sender])
