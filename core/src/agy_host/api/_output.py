"""Structured output: ``s.run(prompt, output=T)`` and ``agy_host.run(..., output=T)``.

No engine agy-host drives takes a response schema over its wire (ACP has
none; the ``agy`` CLI has none; the harness's ``finishToolSchemaJson`` is a
per-conversation setting agy-host does not set yet), so every engine gets
the same portable route: the prompt carries the JSON Schema and asks for
the value alone; the answer's JSON (a fenced block, the whole answer, or
the outermost ``{...}``/``[...]`` in it) is validated; a wrong answer is
sent back once, naming what was wrong; a second wrong answer is an
:class:`~agy_host.api.errors.OutputInvalid` that carries the raw answer.

``T`` may be a dataclass, a :class:`msgspec.Struct`, a ``TypedDict`` (or
any type :func:`msgspec.convert` takes: ``list[int]``...), validated by
msgspec; or a JSON Schema dict, validated by :func:`schema_problem`, which
knows the keywords agents' answers need (types, properties, required,
items, enum, bounds) and ignores the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from agy_host.api.errors import UsageError
from agy_host.contract.prompt import PromptBlock, TextBlock

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.DOTALL)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


@dataclass(frozen=True)
class OutputSpec:
    """What ``output=`` asked for: the schema shown to the agent and how an
    answer is checked against it."""

    schema: dict[str, Any]
    #: The type to convert to, or ``None`` for a schema dict (the value stays JSON).
    type_: Any = None

    @classmethod
    def of(cls, output: Any) -> OutputSpec:
        """The spec of ``output=``; a :class:`UsageError` for what it cannot be."""
        if isinstance(output, dict):
            if not output:
                raise UsageError("output= got an empty JSON Schema")
            return cls(schema=output)
        try:
            schema = msgspec.json.schema(output)
        except (TypeError, ValueError) as exc:
            kinds = "a dataclass, a msgspec.Struct, a TypedDict or a JSON Schema dict"
            raise UsageError(f"output= takes {kinds}, not {output!r} ({exc})") from exc
        return cls(schema=schema, type_=output)

    def instruction(self) -> str:
        """What the prompt carries: the schema, and the answer's form."""
        schema = msgspec.json.format(msgspec.json.encode(self.schema), indent=2).decode()
        return (
            "Answer with a single JSON value that matches this JSON Schema, and nothing else "
            "(no prose before or after it; a ```json fence around it is fine):\n"
            f"```json\n{schema}\n```"
        )

    def ask(self, blocks: list[PromptBlock]) -> list[PromptBlock]:
        return [*blocks, TextBlock(text=self.instruction())]

    def retry(self, reason: str) -> list[PromptBlock]:
        """The second prompt: what was wrong, and the same request again."""
        return [
            TextBlock(
                text=f"That answer is not the JSON value asked for: {reason}.\n"
                "Reply again with only the JSON value that matches the schema."
            )
        ]

    def read(self, answer: str) -> tuple[Any, str | None]:
        """``(value, None)`` for an answer that holds a valid value, else
        ``(None, reason)``: the first candidate that parses decides."""
        parsed, last = False, ""
        for candidate in candidates(answer):
            try:
                raw = msgspec.json.decode(candidate)
            except msgspec.DecodeError:
                continue
            parsed = True
            problem = self.check(raw)
            if problem is None:
                return self.convert(raw), None
            last = problem
        if not parsed:
            return None, "it holds no JSON value"
        return None, last

    def check(self, raw: Any) -> str | None:
        if self.type_ is None:
            return schema_problem(raw, self.schema, "$")
        try:
            msgspec.convert(raw, self.type_)
        except msgspec.ValidationError as exc:
            return str(exc)
        return None

    def convert(self, raw: Any) -> Any:
        return raw if self.type_ is None else msgspec.convert(raw, self.type_)


def candidates(answer: str) -> list[str]:
    """Where the JSON may be, most likely first: fenced blocks (``json``
    ones first, the last of each kind first, as agents put the answer last),
    the whole answer, the outermost object or array in it."""
    fences = [(lang.lower(), body) for lang, body in _FENCE.findall(answer)]
    found = [body for lang, body in reversed(fences) if lang == "json"]
    found += [body for lang, body in reversed(fences) if lang != "json"]
    found.append(answer.strip())
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = answer.find(open_), answer.rfind(close)
        if 0 <= start < end:
            found.append(answer[start : end + 1])
    return [text for text in found if text.strip()]


def schema_problem(value: Any, schema: Any, path: str) -> str | None:
    """What is wrong with ``value`` under ``schema`` at ``path``, or ``None``."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        fits = [schema_problem(value, option, path) is None for option in options] if isinstance(options, list) else []
        if fits and not any(fits):
            return f"{path}: matches none of the {key} choices"
    if "const" in schema and value != schema["const"]:
        return f"{path}: expected {schema['const']!r}"
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return f"{path}: {value!r} is not one of {schema['enum']!r}"
    wanted = schema.get("type")
    if wanted is not None:
        names = wanted if isinstance(wanted, list) else [wanted]
        kinds = tuple(t for name in names for t in _JSON_TYPES.get(str(name), ()))
        is_bool = isinstance(value, bool)
        if kinds and (not isinstance(value, kinds) or (is_bool and bool not in kinds)):
            return f"{path}: expected {' or '.join(map(str, names))}, got {type(value).__name__}"
    if isinstance(value, dict):
        return _object_problem(value, schema, path)
    if isinstance(value, list):
        return _array_problem(value, schema, path)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{path}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path}: longer than {schema['maxLength']} characters"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: above the maximum {schema['maximum']}"
    return None


def _object_problem(value: dict[str, Any], schema: dict[str, Any], path: str) -> str | None:
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    for name in schema.get("required", []):
        if name not in value:
            return f"{path}: the required field {name!r} is missing"
    for name, item in value.items():
        sub = properties.get(name)
        if sub is not None:
            problem = schema_problem(item, sub, f"{path}.{name}")
            if problem is not None:
                return problem
        elif schema.get("additionalProperties") is False:
            return f"{path}: the field {name!r} is not allowed"
    return None


def _array_problem(value: list[Any], schema: dict[str, Any], path: str) -> str | None:
    if len(value) < schema.get("minItems", 0):
        return f"{path}: fewer than {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{path}: more than {schema['maxItems']} items"
    items = schema.get("items")
    for index, item in enumerate(value):
        problem = schema_problem(item, items, f"{path}[{index}]")
        if problem is not None:
            return problem
    return None


__all__ = ["OutputSpec", "candidates", "schema_problem"]
