"""What the parser keeps of the patterns it compiled is bounded by their size, not their number (trial 13 F8: one
visitor grew a public server by ~28 MB per distinct template with a 99,000-item counted repeat, kept by `regex`'s
own cache of 500 patterns and ours counted in entries)."""

from __future__ import annotations

import gc
import weakref

import pytest
import regex

import parsing
from parsing import regex_cost
from parsing.decided import _compiled_branches
from parsing.regex_cost import (CACHED_PATTERN_SIZE, MAX_PATTERN_SIZE, SizedCache, compile_pattern, compile_size,
                                pattern_weight, unguarded_length)


def _big_template(k: int) -> dict:
    """A template whose close pattern writes out 99,000 items when compiled (under the per-pattern cap), distinct
    per ``k``."""
    return {"defaults": {"role": "assistant"}, "start_anchor": "@", "fields": {"content": {
        "close_pattern": "<\\|im_end\\|>|(?:z%db0q{1000}){99}" % k, "repeats": True, "join": ""}}}


def test_sized_cache_keeps_the_recently_used_within_its_budget():
    calls = []
    cache = SizedCache(lambda key: calls.append(key) or key * 2, budget=10, weigh=lambda value, key: key)
    for key in (4, 5):
        cache(key)
    assert cache.cache_info() == (2, 9)
    assert cache(4) == 8 and calls == [4, 5]  # kept: not called again; 4 is now the most recently used
    cache(3)  # 12 > 10: the least recently used (5) goes
    assert cache.cache_info() == (2, 7)
    cache(4)
    cache(5)
    assert calls == [4, 5, 3, 5]
    cache(11)  # heavier than the whole budget: computed, not kept, nothing dropped for it
    assert calls[-1] == 11 and cache.cache_info().weight <= 10 and cache(11) == 22 and calls.count(11) == 2


def test_sized_cache_counts_entries_too_and_keeps_no_exception():
    cache = SizedCache(lambda key: 1 // key, budget=100, weigh=lambda value, key: 1, maxsize=2)
    for key in (1, 2, 3):
        cache(key)
    assert cache.cache_info() == (2, 2)
    with pytest.raises(ZeroDivisionError):
        cache(0)
    assert cache.cache_info() == (2, 2)
    cache.cache_clear()
    assert cache.cache_info() == (0, 0)


def test_compile_pattern_is_regex_compile_outside_regex_s_own_cache():
    kept, locale = len(regex._main._cache), len(regex._main._locale_sensitive)
    for k in range(50):
        source = f"(?:x{k}y){{{k + 2}}}|<end{k}>"
        compiled = compile_pattern(source, regex.DOTALL)
        assert compiled.pattern == source and compiled.flags & regex.DOTALL
        assert compiled.fullmatch(f"<end{k}>") and compiled.fullmatch(f"x{k}y" * (k + 2))
        assert compile_pattern(source, regex.DOTALL) is compiled  # kept by text and flags
    assert (len(regex._main._cache), len(regex._main._locale_sensitive)) == (kept, locale)
    with pytest.raises(regex.error):
        compile_pattern("(?P<a>", regex.DOTALL)
    assert pattern_weight(None, "a{5}") == compile_size("a{5}") + 4 == 9


def test_distinct_big_templates_leave_only_what_the_caches_may_hold():
    """Each template's delimiter is compiled, split into branches and searched; after many distinct ones the
    caches hold at most their budgets, the first templates' compiled patterns are gone, and `regex`'s own cache
    did not grow (after a first template: the parser's own fixed patterns may enter it)."""
    parsing.parse_response("@hello<|im_end|>", parsing.load_template(_big_template(-1)), prefix="")
    kept = len(regex._main._cache)
    per_template = compile_size(_big_template(0)["fields"]["content"]["close_pattern"])
    assert 90_000 < per_template <= MAX_PATTERN_SIZE
    first = []
    for k in range(8):
        template = parsing.load_template(_big_template(k))
        assert parsing.parse_response("@hello<|im_end|>", template, prefix="")["content"] == "@hello"
        if k < 2:
            first.append(weakref.ref(template.fields["content"].close.regex))
        del template
    gc.collect()
    assert [ref() for ref in first] == [None, None]
    for cache in (regex_cost._compiled, _compiled_branches):
        assert cache.cache_info().weight <= CACHED_PATTERN_SIZE
    assert len(regex._main._cache) == kept


def test_unguarded_length_keeps_no_pattern_alive():
    compiled = regex.compile("abc+d", cache_pattern=False)
    ref = weakref.ref(compiled)
    assert unguarded_length(compiled) == unguarded_length(compiled) > 0
    del compiled
    gc.collect()
    assert ref() is None
