"""Typing tool-call arguments from the offered tools' JSON schemas (spec section 7).

Tools come in the ``apply_chat_template`` format: ``{"type": "function", "function": {"name", "parameters"}}``
dicts (or the bare function dict), or Python functions with type hints and a docstring, which are converted
with ``transformers.utils.get_json_schema`` (imported only then).
"""

from __future__ import annotations

from inspect import isfunction, ismethod
from typing import Any

from .content import json_value


def tool_parameters(tools: list | None) -> dict[str, dict]:
    """Map each tool's name to its ``parameters.properties`` (``{}`` when it has none).

    Entries that are neither functions nor schema dicts with a string ``name`` are ignored.
    """
    params: dict[str, dict] = {}
    for tool in tools or ():
        if not isinstance(tool, dict):  # (a dict is never a function or method)
            if isfunction(tool) or ismethod(tool):
                from transformers.utils import get_json_schema  # heavy; only for Python-function tools

                tool = get_json_schema(tool)
            if not isinstance(tool, dict):
                continue
        fn = tool.get("function", tool)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            parameters = fn.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            params[fn["name"]] = properties if isinstance(properties, dict) else {}
    return params


def schema_types(schema: Any) -> tuple[str, ...]:
    """The JSON types a parameter schema allows, in order: ``type`` (string or list), then ``anyOf``/``oneOf``
    members, then ``null`` if ``nullable``."""
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types: list[str] = []
    if isinstance(declared, str):
        types.append(declared)
    elif isinstance(declared, list):
        types.extend(t for t in declared if isinstance(t, str))
    for union in ("anyOf", "oneOf"):
        for member in schema.get(union) or []:
            types.extend(schema_types(member))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def cast_argument(raw: str, types: tuple[str, ...]) -> Any:
    """Cast a string argument to the first type in ``types`` it reads as; keep the text if none fits (a conversion
    that raises ValueError, or reads as something else, tries the next type)."""
    for type_name in types:
        try:
            if type_name == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)  # whole numbers written as floats ("3.0") are JSON Schema integers
                    if number.is_integer():
                        return int(number)
            elif type_name == "number":
                number = float(raw)
                if number == number and number not in (float("inf"), float("-inf")):
                    return int(number) if number.is_integer() and "." not in raw else number
            elif type_name == "boolean":
                word = raw.strip().lower()
                if word in ("true", "1", "false", "0"):
                    return word in ("true", "1")
            elif type_name == "null":
                if raw.strip() in ("null", "None"):
                    return None
            elif type_name in ("object", "array"):
                decoded = json_value(raw)  # `json.loads`: the same value, a ValueError where it raises one
                if isinstance(decoded, dict if type_name == "object" else list):
                    return decoded
        except ValueError:
            continue
    return raw


# Types a string argument can be cast to (`cast_argument`); an argument whose schema allows none of them never changes.
_CASTABLE = frozenset(("integer", "number", "boolean", "null", "object", "array"))


def castable_types(schema: Any) -> tuple[str, ...] | None:
    """`schema_types` of one parameter schema when it allows a type a string can be cast to, else None (an
    argument typed only ``string``, as most are, never changes when cast)."""
    if type(schema) is dict and type(schema.get("type")) is str and "anyOf" not in schema \
            and "oneOf" not in schema and "nullable" not in schema:
        declared = schema["type"]  # the common schema: one type, no union (what `schema_types` gives)
        return (declared,) if declared in _CASTABLE else None
    types = schema_types(schema)
    return None if _CASTABLE.isdisjoint(types) else types


def argument_types(properties: dict) -> dict[str, tuple[str, ...]]:
    """For one tool's ``parameters.properties``: each argument whose schema allows a type a string can be cast to,
    with its types in order (`castable_types`)."""
    out = {}
    for key, schema in properties.items():
        types = castable_types(schema)
        if types is not None:
            out[key] = types
    return out


def type_tool_calls(value: Any, params: dict[str, dict]) -> Any:
    """Cast, in place, the string arguments of every tool call in ``value`` (one call or a list of calls).

    A tool call is ``{"function": {"name": str, "arguments": dict}}``; other values pass through unchanged.
    Lists built by ``merge_duplicates`` are cast item by item unless the schema allows an array. The schemas are
    read now, as transformers does at every region close: a tool list the caller changed since the last call
    counts, and only the schemas of the arguments the call has are read.
    """
    if isinstance(value, list):
        out = []  # a loop, not a comprehension: one function call less on Python 3.11
        for item in value:
            out.append(type_tool_calls(item, params))
        return out
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, arguments = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    properties = params.get(name)
    if not properties:
        return value
    for key, argument in arguments.items():  # (replacing a key's value while iterating is allowed)
        if key not in properties:
            continue
        # Every present argument's schema is read, whatever its value, as the reference reads it (a schema that
        # cannot be read raises there too). Inline: `castable_types`' common case, one type and no union.
        schema = properties[key]
        if type(schema) is dict and type(schema.get("type")) is str and "anyOf" not in schema \
                and "oneOf" not in schema and "nullable" not in schema:
            if schema["type"] not in _CASTABLE:
                continue
            types = (schema["type"],)
        else:
            types = castable_types(schema)
            if types is None:
                continue
        if isinstance(argument, str):
            arguments[key] = cast_argument(argument, types)
        elif isinstance(argument, list) and "array" not in types:
            arguments[key] = [cast_argument(item, types) if isinstance(item, str) else item for item in argument]
    return value
