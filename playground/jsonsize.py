"""How large a value is as JSON, measured with a limit: the walk stops as soon as the limit is passed.

A parsed message can hold one string many times over: a template's transform may repeat ``"{content}"`` 5,000
times, so a 50 KB paste gives a small dict in memory whose JSON is 250 MB. ``json.dumps`` writes all of it out
(seconds of CPU, gigabytes of memory) before anyone can look at the length; `json_size` and `json_head` never
do more than about ``limit`` characters of work, however large the expansion. Everything that measures a
message (memory accounting, the shown-message cap of a public server) or shows a piece of one (the event log,
the transformers check's differences) goes through here.

Both follow ``json.dumps(value, ensure_ascii=ensure_ascii, default=default)`` with its default separators
(``", "`` and ``": "``): strings (and str subclasses), numbers (NaN/Infinity as json writes them), booleans,
None, dicts (keys str, int, float, bool or None, as json converts them), lists and tuples; anything else goes
through ``default`` (`str` unless told otherwise; None: TypeError like json). Unlike ``json.dumps`` they walk
without recursion, so nesting deeper than Python's recursion limit is measured too, and a reference cycle is
not detected (it just counts until the limit).
"""

from __future__ import annotations

import sys
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, Callable


def _float_text(x: float) -> str:
    if x != x:
        return "NaN"
    if x == float("inf"):
        return "Infinity"
    if x == float("-inf"):
        return "-Infinity"
    return float.__repr__(x)


def _key_text(key: Any) -> str:
    """A dict key as json writes it before quoting (json.dumps converts these key types to strings)."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return _float_text(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _walk(value: Any, limit: int, ensure_ascii: bool, default: Callable[[Any], Any] | None,
          parts: list[str] | None) -> int:
    """Characters of JSON written for ``value`` until more than ``limit`` were (then a number > ``limit``: all
    that was counted). With ``parts``, the text is appended to it piece by piece (it may end past ``limit``)."""
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    total = 0
    stack: list[list] = []  # [iterator over the items, is a dict, no item yet] per open container
    x = value
    have = True  # x is a value still to write
    while True:
        if have:
            if isinstance(x, str):
                room = limit - total
                if len(x) + 2 > room:  # over the limit whatever its escapes: encode no more of it than fits
                    if parts is not None:
                        parts.append(encode(x[:room]))
                    return total + len(x) + 2
                piece = encode(x)
            elif x is None:
                piece = "null"
            elif x is True:
                piece = "true"
            elif x is False:
                piece = "false"
            elif isinstance(x, int):
                piece = int.__repr__(x)
            elif isinstance(x, float):
                piece = _float_text(x)
            elif isinstance(x, dict):
                if x:
                    stack.append([iter(x.items()), True, True])
                piece = "{" if x else "{}"
            elif isinstance(x, (list, tuple)):
                if x:
                    stack.append([iter(x), False, True])
                piece = "[" if x else "[]"
            else:
                if default is None:
                    raise TypeError(f"Object of type {type(x).__name__} is not JSON serializable")
                x = default(x)
                continue
            total += len(piece)
            if parts is not None:
                parts.append(piece)
            if total > limit:
                return total
            have = False
        if not stack:
            return total
        top = stack[-1]
        item = next(top[0], _END)
        if item is _END:
            stack.pop()
            piece = "}" if top[1] else "]"
        else:
            piece = "" if top[2] else ", "
            top[2] = False
            if top[1]:
                key, x = item
                key = _key_text(key)
                if len(key) + 4 > limit - total:  # the key alone passes the limit
                    if parts is not None:
                        parts.append(piece + encode(key[:limit - total]) + ": ")
                    return total + len(piece) + len(key) + 4
                piece += encode(key) + ": "
            else:
                x = item
            have = True
        total += len(piece)
        if parts is not None:
            parts.append(piece)
        if total > limit:
            return total


_END = object()


def json_size(value: Any, limit: int | None = None, *, ensure_ascii: bool = False,
              default: Callable[[Any], Any] | None = str) -> int:
    """Length in characters of ``json.dumps(value, ensure_ascii=ensure_ascii, default=default)``, measured with
    at most about ``limit`` characters of work.

    Returns the exact length when it is at most ``limit`` (or ``limit`` is None); otherwise some number greater
    than ``limit`` that the JSON is at least as long as (what was counted when the walk stopped).

    Raises:
        TypeError: a value ``default`` cannot handle (None: any non-JSON value), or a dict key of another type
            than str, int, float, bool or None.
    """
    if limit is None:
        limit = float("inf")  # type: ignore[assignment] - counts everything (a cycle would never end)
    return _walk(value, limit, ensure_ascii, default, None)


def json_head(value: Any, chars: int, *, ensure_ascii: bool = False,
              default: Callable[[Any], Any] | None = str) -> tuple[str, bool]:
    """The first ``chars`` characters of ``json.dumps(value, ensure_ascii=ensure_ascii, default=default)`` and
    whether that is all of it, with about ``chars`` characters of work (errors as `json_size`)."""
    parts: list[str] = []
    total = _walk(value, chars, ensure_ascii, default, parts)
    return "".join(parts)[:chars], total <= chars


def memory_size(value: Any, limit: int | None = None) -> int:
    """Approximate bytes of Python memory that ``value`` holds: ``sys.getsizeof`` of it and of every distinct
    object under it (dict keys and values, list and tuple items; an object reached twice counts once), measured
    with at most about ``limit`` bytes' worth of work.

    JSON length says little about memory: ``{"k": "0"}`` is 10 characters of JSON and about 250 bytes of dict and
    strings, while a transform that repeats one string 5,000 times makes a long JSON of a few KB. This is what
    memory accounting (`playground.session.ParseView.nbytes`) needs. Returns the total when it is at most
    ``limit`` (None: no limit), else some number greater than ``limit``. Walks without recursion; the work is
    bounded by the total (each container is counted, at 8 bytes per item, before its items are walked).
    """
    total = 0
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        total += sys.getsizeof(v)
        if limit is not None and total > limit:
            return total
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return total
