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
import threading
import weakref
from re import _constants as _c  # Python 3.11+
from typing import Any, Callable, NamedTuple

import regex

# Paths through the pattern times characters walked: some milliseconds of `regex` work at most.
UNGUARDED_STEPS = 1_000_000
# Never consider texts longer than this unguarded.
MAX_UNGUARDED = 4096

# id(pattern) -> (weak reference to it, length): a pattern is not kept alive by this cache (its entry goes with it).
_cache: dict = {}


def unguarded_length(compiled) -> int:
    """Longest text (from the search position to the end) on which a call of ``compiled`` (a `regex` pattern)
    is bounded to `UNGUARDED_STEPS` steps; 0 for syntax the bound does not understand (fuzzy matching, reverse
    search, recursion, back references, nested repeats). Cached per pattern object, without keeping it alive."""
    entry = _cache.get(id(compiled))
    if entry is not None and entry[0]() is compiled:
        return entry[1]
    length = _longest(compiled)
    key = id(compiled)
    if len(_cache) > 4096:
        _cache.clear()
    _cache[key] = (weakref.ref(compiled, lambda ref: _cache.pop(key, None) if _cache.get(key, (None,))[0] is ref
                               else None), length)
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


# What this process keeps of the patterns it compiled, between calls. A public server compiles whatever patterns its
# visitors send, and one compiled 100,000-item pattern holds ~11 MB: caches bounded by entry count (the `regex`
# module's own, 500 patterns; ours, up to 1,024) let one visitor grow the server by ~28 MB per template, kept. Each
# pattern cache here keeps at most `CACHED_PATTERN_SIZE` units (`pattern_weight`: items written out plus characters
# of pattern text), dropping the oldest first; nothing user-written enters the `regex` module's cache.
CACHED_PATTERN_SIZE = MAX_TEMPLATE_SIZE  # units each pattern cache keeps: ~30 MB of compiled patterns at most
_MISSING = object()
# `regex` remembers, per pattern text, whether the pattern is locale-sensitive (`regex._main._locale_sensitive`),
# for every pattern compiled, cached or not, and trims that table only when its own cache is full: a text compiled
# with ``cache_pattern=False`` would stay there for good. None where this `regex` keeps no such table.
_LOCALE_TABLE = getattr(getattr(regex, "_main", None), "_locale_sensitive", None)


class CacheInfo(NamedTuple):
    """What a `SizedCache` keeps: ``currsize`` entries weighing ``weight`` in all."""

    currsize: int
    weight: int


class SizedCache:
    """The results of ``fn(*args)`` kept by their arguments while the weights of those kept (``weigh(result,
    *args)``, an int) total at most ``budget``, and at most ``maxsize`` of them (None: no count limit); the least
    recently used are dropped first, and a result heavier than ``budget`` is not kept. Exceptions are not kept
    (they raise again). Thread-safe; arguments must be hashable.

    `cache_info()` returns a `CacheInfo`; `cache_clear()` drops everything; ``__wrapped__`` is ``fn``.
    """

    def __init__(self, fn: Callable, budget: int, weigh: Callable[..., int], maxsize: int | None = None):
        self.__wrapped__ = fn
        self.budget, self.weigh, self.maxsize = budget, weigh, maxsize
        self._kept: dict = {}  # args -> (result, weight), least recently used first
        self._weight = 0
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        with self._lock:
            entry = self._kept.pop(args, _MISSING)
            if entry is not _MISSING:
                self._kept[args] = entry
                return entry[0]
        result = self.__wrapped__(*args)
        weight = self.weigh(result, *args)
        if weight <= self.budget:
            with self._lock:
                old = self._kept.pop(args, None)
                if old is not None:
                    self._weight -= old[1]
                self._kept[args] = (result, weight)
                self._weight += weight
                while self._weight > self.budget or (self.maxsize is not None and len(self._kept) > self.maxsize):
                    self._weight -= self._kept.pop(next(iter(self._kept)))[1]
        return result

    def cache_info(self) -> CacheInfo:
        """How many entries are kept and their total weight."""
        with self._lock:
            return CacheInfo(len(self._kept), self._weight)

    def cache_clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._weight = 0


def sized_cache(budget: int, weigh: Callable[..., int], maxsize: int | None = None) -> Callable[[Callable], SizedCache]:
    """Decorator: `SizedCache` of the function with ``budget``, ``weigh`` and ``maxsize``."""
    return lambda fn: SizedCache(fn, budget, weigh, maxsize)


def pattern_weight(_result: Any, source: Any, *_args: Any) -> int:
    """Weight of a cache entry keyed by pattern text ``source``: its `compile_size` (what the compiled pattern
    holds) plus its length (the key text itself); 1 for a key that is not text."""
    return compile_size(source) + len(source) if isinstance(source, str) else 1


@sized_cache(CACHED_PATTERN_SIZE, pattern_weight)
def _compiled(source: str, flags: int) -> Any:
    try:
        return regex.compile(source, flags, cache_pattern=False)
    finally:
        if _LOCALE_TABLE is not None:
            _LOCALE_TABLE.pop((str, source), None)


def compile_pattern(source: str, flags: int = 0) -> Any:
    """``regex.compile(source, flags)`` (same result, same errors) for a pattern a template wrote or one derived
    from it: kept in a cache bounded by size (`CACHED_PATTERN_SIZE`), never in the `regex` module's own (500
    patterns of any size)."""
    if type(source) is not str:
        return regex.compile(source, flags)
    return _compiled(source, flags)


__all__ = ["CACHED_PATTERN_SIZE", "MAX_PATTERN_SIZE", "MAX_TEMPLATE_SIZE", "UNGUARDED_STEPS", "SizedCache",
           "compile_pattern", "compile_size", "pattern_weight", "sized_cache", "too_large", "unguarded_length"]
