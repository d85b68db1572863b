"""Structural diff of two JSON-like values (messages), shared by suites, round trips and checks.

Values are what `parse_response` returns and what JSON decodes to: dicts,
lists, strings, numbers, booleans and None. Types count: ``1``, ``1.0`` and
``True`` are different values here although Python compares them equal, and a
tool argument ``"3"`` differs from ``3``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["DiffEntry", "diff_values", "format_diff", "same_value", "show_value"]


@dataclass(frozen=True)
class DiffEntry:
    """One difference.

    Attributes:
        path: where, dotted with ``[i]`` for list items (``"tool_calls[0].function.arguments.city"``);
            ``""`` is the whole value.
        kind: ``"changed"`` (both sides have a value), ``"missing"`` (only `expected` has it) or
            ``"extra"`` (only `actual` has it).
        expected, actual: the two values (None on the side that lacks the key; look at `kind`).
    """

    path: str
    kind: str
    expected: Any = None
    actual: Any = None

    def to_dict(self) -> dict:
        """``{"path", "kind", "expected", "actual"}``, leaving out the side that is absent."""
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind != "extra":
            out["expected"] = self.expected
        if self.kind != "missing":
            out["actual"] = self.actual
        return out

    def format(self) -> str:
        """One line, e.g. ``content: expected "Hi" got ""``."""
        where = self.path or "(message)"
        if self.kind == "missing":
            return f"{where}: missing (expected {show_value(self.expected)})"
        if self.kind == "extra":
            return f"{where}: unexpected {show_value(self.actual)}"
        return f"{where}: expected {show_value(self.expected)} got {show_value(self.actual)}"


def show_value(value: Any, limit: int = 200) -> str:
    """`value` as compact JSON (repr for what JSON cannot hold), cut to `limit` characters with an ellipsis."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def same_value(a: Any, b: Any) -> bool:
    """Type-aware equality (no ``True == 1`` / ``1 == 1.0``); True iff `diff_values` finds nothing."""
    return not diff_values(a, b)


def diff_values(expected: Any, actual: Any, path: str = "") -> list[DiffEntry]:
    """All differences between `expected` and `actual`, depth first, expected's key order first.

    Dicts are compared key by key, lists item by item (a length difference gives ``missing`` or ``extra``
    entries for the tail), everything else by type and value.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[DiffEntry] = []
        for key in expected:
            sub = _join(path, str(key))
            if key not in actual:
                out.append(DiffEntry(sub, "missing", expected=expected[key]))
            else:
                out.extend(diff_values(expected[key], actual[key], sub))
        for key in actual:
            if key not in expected:
                out.append(DiffEntry(_join(path, str(key)), "extra", actual=actual[key]))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(diff_values(e, a, f"{path}[{i}]"))
        for i in range(len(actual), len(expected)):
            out.append(DiffEntry(f"{path}[{i}]", "missing", expected=expected[i]))
        for i in range(len(expected), len(actual)):
            out.append(DiffEntry(f"{path}[{i}]", "extra", actual=actual[i]))
        return out
    if type(expected) is type(actual) and expected == actual:
        return []
    # Only int/float/bool need the type check above; other equal-but-different-type pairs cannot occur in JSON.
    return [DiffEntry(path, "changed", expected=expected, actual=actual)]


def format_diff(entries: list[DiffEntry], indent: str = "  ") -> str:
    """The entries as text, one line each, prefixed by `indent`."""
    return "\n".join(indent + e.format() for e in entries)
