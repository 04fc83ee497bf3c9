"""Plain Python callables as host tools.

``agy_host.open_session(tools=[fn])`` turns each function into a
:class:`~agy_host.contract.tools.HostTool`: the name is the function's, the
description its docstring's summary, and the argument schema comes from the
type hints (through a msgspec Struct built from the signature, so the agent's
arguments are validated and converted exactly as the schema promises). A
parameter's own line under ``Args:`` in the docstring becomes its description.

Sync functions run on the event loop (keep them quick, or make them
``async``): a thread per call would outlive a cancelled turn. Where a call
runs is the caller's to say (``run``): the Python API runs each on the
program's own loop, asyncio's under asyncio (:mod:`agy_host.api._callbacks`).
The return value becomes the tool's text (``str`` as is, ``None`` empty,
anything else JSON) and its structured content (the value when it is an
object, else ``{"result": value}``: MCP clients take objects only); a
:class:`~agy_host.contract.tools.ToolResult` passes through; an exception
becomes an error result with its message, so the agent can react.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints

import msgspec

from agy_host.contract.tools import HostTool, ToolResult

#: Runs a function of the program (a thunk) and gives its value, awaited
#: when it is awaitable: :func:`call_here`, or the program's own loop.
Runner = Callable[[Callable[[], Any]], Awaitable[Any]]

_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` lines of a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n", 1)[0].strip()
    args: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if line.strip() and not line.startswith(" "):
                in_args = False
                continue
            match = _ARG_LINE.match("  " + line.strip()) if line.startswith(" ") else None
            if match:
                args[match.group(1)] = match.group(2).strip()
    return summary, args


def _arguments_type(fn: Callable[..., Any], name: str) -> type[msgspec.Struct]:
    hints = get_type_hints(fn)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args and **kwargs cannot be described to an agent")
        kind = hints.get(param.name, Any)
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, kind))
        else:
            fields.append((param.name, kind, param.default))
    return msgspec.defstruct(f"{name}_arguments", fields, forbid_unknown_fields=True)


def _schema(struct: type[msgspec.Struct], descriptions: dict[str, str]) -> dict[str, Any]:
    """msgspec's schema of the arguments Struct, inlined to one object."""
    raw = msgspec.json.schema(struct)
    defs: dict[str, Any] = dict(raw.get("$defs", {}))
    ref = str(raw.get("$ref", "")).rsplit("/", 1)[-1]
    schema: dict[str, Any] = dict(defs.pop(ref, raw))
    schema.pop("title", None)
    schema.setdefault("properties", {})
    for field, text in descriptions.items():
        prop = schema["properties"].get(field)
        if isinstance(prop, dict):
            prop.setdefault("description", text)
    if defs:
        schema["$defs"] = defs
    return schema


def _as_result(value: object) -> ToolResult:
    """The value as text, and as a JSON object for MCP's ``structuredContent``
    (``{"result": value}`` unless it is one: clients refuse anything else)."""
    if isinstance(value, ToolResult):
        return value
    if value is None or isinstance(value, str):
        return ToolResult(text=value or "", structured={"result": value})
    encoded = msgspec.json.encode(value)
    native = msgspec.json.decode(encoded)
    return ToolResult(text=encoded.decode(), structured=native if isinstance(native, dict) else {"result": native})


async def call_here(thunk: Callable[[], Any]) -> Any:
    """``thunk()`` in the calling task, awaited when it returns an awaitable."""
    value = thunk()
    if inspect.isawaitable(value):
        value = await value
    return value


def tool_from_function(
    fn: Callable[..., Any] | HostTool, *, name: str | None = None, run: Runner = call_here
) -> HostTool:
    """A host tool that calls ``fn`` with the agent's (validated) arguments,
    through ``run``. A :class:`HostTool` keeps its spec; its ``call`` goes
    through ``run`` too."""
    if isinstance(fn, HostTool):
        if run is call_here:
            return fn
        given = fn.call

        async def through(arguments: dict[str, Any]) -> ToolResult:
            result: ToolResult = await run(lambda: given(arguments))
            return result

        return HostTool(name=fn.name, description=fn.description, input_schema=fn.input_schema, call=through)
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name or tool_name == "<lambda>":
        raise TypeError("a host tool needs a name: pass a named function")
    summary, arg_docs = _doc_parts(fn)
    struct = _arguments_type(fn, tool_name)
    schema = _schema(struct, arg_docs)

    async def call(arguments: dict[str, Any]) -> ToolResult:
        try:
            parsed = msgspec.convert(arguments, struct)
        except msgspec.ValidationError as exc:
            return ToolResult(text=f"invalid arguments for {tool_name}: {exc}", is_error=True)
        kwargs = {field: getattr(parsed, field) for field in struct.__struct_fields__}
        try:
            value = await run(lambda: fn(**kwargs))
        except Exception as exc:
            return ToolResult(text=f"{type(exc).__name__}: {exc}", is_error=True)
        return _as_result(value)

    return HostTool(name=tool_name, description=summary or tool_name, input_schema=schema, call=call)


__all__ = ["Runner", "call_here", "tool_from_function"]
