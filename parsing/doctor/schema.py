"""The JSON types a response template's values must have, and every value that has another.

The reference loader (and ours, which validates exactly like it) checks some types and lets others through:
``"repeats": "false"`` loads and means *true* (any non-empty string is truthy), ``"optional": 0`` means false,
``"content_args": []`` is taken as no arguments. Parsing must stay as the reference does, so these are not load
errors; `wrong_types` finds them so the editor and the lint can say so.

`TEMPLATE_SCHEMA` is a JSON Schema (draft 2020-12) of the value types in the spec's tables (section 2 and the
content-parser knobs of section 5); it says nothing about unknown keys or required ones (the loader reports
those with the reference's messages). Checked with the `jsonschema` library.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import jsonschema

__all__ = ["TEMPLATE_SCHEMA", "TypeProblem", "duplicate_keys", "wrong_types"]

_STRINGS = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_CONTENT_ARGS = {
    "type": "object",
    "properties": {
        "strip": {"type": "boolean"},
        "unquoted_keys": {"type": "boolean"},
        "allow_non_json": {"type": "boolean"},
        "string_delims": {"type": "array", "items": {"type": "array", "items": {"type": "string"},
                                                      "minItems": 2, "maxItems": 2}},
        "tag_pattern": {"type": "string"},
        "merge_duplicates": {"type": "boolean"},
        "line_sep": {"type": "string"},
        "kv_sep": {"type": "string"},
        "value_parser": {"type": "object", "properties": {"name": {"type": "string"},
                                                          "args": {"$ref": "#/$defs/content_args"}}},
    },
}
_FIELD = {
    "type": "object",
    "properties": {
        "open": _STRINGS, "close": _STRINGS,
        "open_pattern": {"type": "string"}, "close_pattern": {"type": "string"},
        "content": {"type": "string"},
        "content_args": {"$ref": "#/$defs/content_args"},
        "repeats": {"type": "boolean"},
        "join": {"type": "string"},
        "optional": {"type": "boolean"},
        "transform": {"type": ["object", "array", "string"]},
        "transform_each": {"type": "boolean"},
    },
}
TEMPLATE_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"content_args": _CONTENT_ARGS, "field": _FIELD},
    "type": "object",
    "properties": {
        "version": {"type": "integer"},
        "defaults": {"type": "object"},
        "fields": {"type": "object", "additionalProperties": {"$ref": "#/$defs/field"}},
        "start_anchor": _STRINGS,
        "start_anchor_pattern": {"type": "string"},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(TEMPLATE_SCHEMA)

_JSON_TYPE = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
              dict: "an object", type(None): "null"}
_WANT = {"boolean": "true or false", "integer": "a whole number", "string": "a string", "object": "an object",
         "array": "a list"}


@dataclass(frozen=True)
class TypeProblem:
    """One value of the wrong JSON type.

    Attributes:
        path: dotted JSON path of the value (the engine's style: ``fields.tool_calls.repeats``,
            ``fields.x.close[1]``).
        value: the value as written.
        expected: what the spec wants, in words (``"true or false"``).
        message: one sentence for the author: where, what it is, what it should be, and what the parsers do
            with it instead.
    """

    path: str
    value: Any
    expected: str
    message: str

    def to_dict(self) -> dict:
        """The problem as a JSON-able dict with the attribute names as keys."""
        return asdict(self)


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _wanted(schema: dict) -> str:
    if "anyOf" in schema:
        return "a string or a list of strings"
    t = schema.get("type")
    if isinstance(t, list):
        words = [_WANT.get(x, x) for x in t]
        return ", ".join(words[:-1]) + " or " + words[-1]
    if t == "array" and schema.get("minItems") == 2 == schema.get("maxItems"):
        return "a pair [open, close] of strings"
    return _WANT.get(t, str(t))


def _effect(value: Any, expected: str) -> str:
    """What the parsers make of ``value`` where a boolean is expected (Python truthiness, as the reference)."""
    if expected != "true or false":
        return ""
    meaning = "true" if value else "false"
    if isinstance(value, str):
        return f" transformers reads any non-empty string as true, so this is {meaning}."
    return f" transformers reads it as {meaning}."


def wrong_types(spec: Any) -> list[TypeProblem]:
    """Every value in ``spec`` (a template dict, or its JSON text) whose JSON type differs from the spec's.

    Returns the problems in document order of their paths; [] for a template with every type right, and for
    text that is not a JSON object (the loader reports that).
    """
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            return []
    if not isinstance(spec, dict):
        return []
    problems: dict[str, TypeProblem] = {}
    # iter_errors reports a failed union ("a string or a list of strings") once, at the value: one problem each
    for e in _VALIDATOR.iter_errors(spec):
        path = _path(e.absolute_path)
        if path in problems or e.validator not in ("type", "anyOf", "minItems", "maxItems"):
            continue
        expected = _wanted(e.schema)
        got = _JSON_TYPE.get(type(e.instance), type(e.instance).__name__)
        shown = json.dumps(e.instance, ensure_ascii=False)
        if len(shown) > 60:
            shown = shown[:57] + "…"
        problems[path] = TypeProblem(path, e.instance, expected,
                                     f"{path}: {shown} is {got}; the spec wants {expected}."
                                     + _effect(e.instance, expected))
    return sorted(problems.values(), key=lambda p: _order(spec, p.path))


def _order(spec: dict, path: str) -> tuple:
    """Sort key: the position of each path step in the template as written (document order)."""
    key, node = [], spec
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            i = int(part[1:-1])
            key.append(i)
            node = node[i] if isinstance(node, list) and i < len(node) else None
        elif isinstance(node, dict) and part in node:
            key.append(list(node).index(part))
            node = node[part]
        else:
            key.append(0)
    return tuple(key)


class _Pairs(dict):
    """A JSON object as `json.loads` keeps it (the last of duplicated keys wins), with the keys that came twice."""

    duplicated: tuple = ()


def _pairs_hook(pairs: list) -> _Pairs:
    obj = _Pairs(pairs)
    seen: set = set()
    dups = []
    for key, _value in pairs:
        if key in seen and key not in dups:
            dups.append(key)
        seen.add(key)
    obj.duplicated = tuple(dups)
    return obj


def duplicate_keys(text: str) -> list[tuple[str, str]]:
    """``(path, key)`` for every key written more than once in one object of the JSON ``text``: the JSON path
    (this module's dotted style, ``fields.content``) and the key, objects in document order. `json.loads` and
    transformers keep the last value and drop the others without a word, so a pasted second ``"content": {...}``
    field replaces the first.

    Returns [] for text that is not JSON (the loader reports that).
    """
    try:
        tree = json.loads(text, object_pairs_hook=_pairs_hook)
    except (ValueError, RecursionError):
        return []
    out: list[tuple[str, str]] = []
    stack = [((), tree)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, _Pairs):
            out += [(_path((*at, key)), key) for key in node.duplicated]
            stack += [((*at, k), v) for k, v in reversed(list(node.items()))]
        elif isinstance(node, list):
            stack += [((*at, i), v) for i, v in reversed(list(enumerate(node)))]
    return out
