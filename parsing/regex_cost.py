"""A crude upper bound on the work of one regex call, so that calls whose work the text bounds can run without the
`regex` module's timeout.

Passing ``timeout=`` to a `regex` call costs about a microsecond (more than a short search itself), and a parser
makes several calls per feed. A backtracking search can only run away when the number of ways the pattern can
split the text is large; for a pattern whose repeats repeat single characters or fixed strings (no repeat of
something that can itself vary), that number is bounded by a power of the text's length. `unguarded_length`
gives the longest text on which that bound stays under `UNGUARDED_STEPS`; a call on no more text than that cannot
run long, and is timed after it returns like any other (`parsing.budget.SearchClock`).
"""

from __future__ import annotations

import functools
import re
from re import _constants as _c  # Python 3.11+

# Paths through the pattern times characters walked: some milliseconds of `regex` work at most.
UNGUARDED_STEPS = 1_000_000
# Never consider texts longer than this unguarded.
MAX_UNGUARDED = 4096

_cache: dict = {}


def unguarded_length(compiled) -> int:
    """Longest text (from the search position to the end) on which a call of ``compiled`` (a `regex` pattern)
    is bounded to `UNGUARDED_STEPS` steps; 0 for syntax the bound does not understand (fuzzy matching, reverse
    search, recursion, back references, nested repeats). Cached per pattern object."""
    length = _cache.get(compiled)
    if length is None:
        if len(_cache) > 4096:
            _cache.clear()
        length = _cache[compiled] = _longest(compiled)
    return length


def _longest(compiled) -> int:
    import regex

    if compiled.flags & (regex.REVERSE | regex.BESTMATCH | regex.ENHANCEMATCH | regex.POSIX):
        return 0
    source = compiled.pattern
    if not isinstance(source, str) or "{e" in source or "(?R" in source or "(?&" in source or "(?1" in source:
        return 0  # fuzzy matching or recursion (regex-only syntax the standard parser may misread)
    try:
        import re._parser as sre_parse

        tree = sre_parse.parse(source, re.DOTALL)
    except Exception:
        return 0
    best = 0
    length = 1
    while length <= MAX_UNGUARDED:
        paths = _paths(list(tree), length)
        if paths is None or (length + 1) * paths * (length + len(source)) > UNGUARDED_STEPS:
            break
        best = length
        length *= 2
    return best


def _paths(items, n: int) -> int | None:
    """Upper bound on the ways ``items`` can match within ``n`` characters (None: unbounded or unknown)."""
    total = 1
    for op, av in items:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY, _c.AT, _c.CATEGORY):
            continue
        if op is _c.SUBPATTERN:
            sub = _paths(list(av[-1]), n)
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            sub = _paths(list(av), n)
        elif op is _c.BRANCH:
            subs = [_paths(list(alt), n) for alt in av[1]]
            sub = None if None in subs else sum(subs)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            sub = _paths(list(av[1]), n)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            low, high, body = av
            inner = _paths(list(body), n)
            if inner is None:
                return None
            if inner == 1 and body.getwidth()[0] > 0:
                # A repeat of something with one way to match and a width: it stops after one of at most
                # n + 1 counts.
                sub = min(high, n) + 1
            elif high <= 4:
                sub = sum(inner ** k for k in range(high + 1))
            else:
                return None  # a repeat of something that can vary: the classic runaway
        else:
            return None  # back references, conditionals, anything unknown
        if sub is None:
            return None
        total *= max(sub, 1)
        if total > UNGUARDED_STEPS:
            return total
    return total


# `regex.compile` writes out every counted repeat's minimum: `a{9000000}` or `(?:a{3000}){3000}` takes 8 s and
# 2.4 GB to compile, about 1 us and 270 bytes per unit of `compile_size`. Patterns above these sizes are refused
# before they are compiled (a template is user input on a public server).
MAX_PATTERN_SIZE = 100_000  # one pattern: ~0.1 s, ~30 MB to compile
MAX_TEMPLATE_SIZE = 250_000  # all patterns of one template together
_COUNT = re.compile(r"\{\s*(\d+)\s*(?:,[^{}]*)?\}")


@functools.lru_cache(maxsize=1024)
def compile_size(source: str) -> int:
    """Units of work and memory ``regex.compile(source)`` needs: the pattern's items with every counted repeat's
    body multiplied by its minimum count (``(?:ab){3}`` is 6); int, not capped.

    Read from the standard library's parse of the pattern; for syntax only `regex` knows (``\\p{L}``, fuzzy
    matching, ``(?V1)``) an upper bound: the pattern's length times the product of every repeat minimum in it.
    """
    try:
        import re._parser as sre_parse

        return _size(list(sre_parse.parse(source, re.DOTALL)))
    except Exception:  # noqa: BLE001 - syntax the standard parser refuses (or nesting too deep for it)
        product = 1
        for m in _COUNT.finditer(source):
            product *= max(int(m.group(1)), 1)
            if product > MAX_TEMPLATE_SIZE:
                break
        return (len(source) + 1) * product


def _size(items) -> int:
    total = 0
    for op, av in items:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            total += max(av[0], 1) * _size(list(av[2]))
        elif op is _c.SUBPATTERN:
            total += _size(list(av[-1]))
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            total += _size(list(av))
        elif op is _c.BRANCH:
            total += sum(_size(list(alt)) for alt in av[1])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            total += _size(list(av[1]))
        elif op is _c.GROUPREF_EXISTS:
            total += _size(list(av[1])) + (_size(list(av[2])) if av[2] is not None else 0)
        else:
            total += 1
        if total > MAX_TEMPLATE_SIZE * 1000:
            return total  # far past any limit: stop counting
    return total


def too_large(source: str) -> str | None:
    """Why ``source`` is refused before compiling (it exceeds `MAX_PATTERN_SIZE`), or None."""
    size = compile_size(source)
    if size > MAX_PATTERN_SIZE:
        return (f"its counted repeats expand to about {size:,} items when compiled (at most {MAX_PATTERN_SIZE:,}): "
                "use an open-ended repeat such as {1,} or + instead of a large minimum count")
    return None


__all__ = ["MAX_PATTERN_SIZE", "MAX_TEMPLATE_SIZE", "UNGUARDED_STEPS", "compile_size", "too_large",
           "unguarded_length"]
