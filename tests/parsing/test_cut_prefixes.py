"""`feed`'s held path looks held text up in `parsing.parser._cut_prefixes` instead of searching it with the state's
finder: the look-up must say "a literal cut off by the buffer edge" exactly where the finder's search from the
held text's start says it (a match there, running to the end, that is no whole literal)."""

from __future__ import annotations

import random

import pytest

from examples import list_families, load_family
from parsing import load_template
from parsing.parser import CUT_PREFIX_CHARS, MAX_CUT_PREFIXES, _cut_prefixes, _Plan
from parsing.prefilter import make_prefilter
from parsing.scanner import watch_sets


def _finder_says_cut(finder, literals, text: str) -> bool:
    found = finder.search(text, 0)
    return found is not None and found.start() == 0 and found.end() == len(text) and found.group() not in literals


def _check(literals, finder, texts) -> int:
    cut, longest = _cut_prefixes(frozenset(literals), [MAX_CUT_PREFIXES])
    assert all(len(p) <= longest for p in cut)
    for text in texts:
        if text in cut:
            assert _finder_says_cut(finder, literals, text), (sorted(literals), text)
        elif len(text) <= CUT_PREFIX_CHARS:
            assert not _finder_says_cut(finder, literals, text), (sorted(literals), text)
    return len(texts)


@pytest.mark.parametrize("family_name", list_families())
def test_cut_prefixes_agree_with_the_finder_on_library_states(family_name):
    template = load_template(load_family(family_name).template)
    checked = 0
    for watch in watch_sets(template).values():
        if watch.finder is None:
            continue
        literals = watch.literal_set
        texts = {""}
        for literal in literals:
            for k in range(len(literal) + 2):
                for tail in ("", "x", "<", "|", *(other[:3] for other in literals)):
                    texts.add(literal[:k] + tail)
        checked += _check(literals, watch.finder, texts)
    assert checked > 0


def test_cut_prefixes_agree_with_the_finder_on_random_literal_sets():
    """Literals that are prefixes of one another, repeat characters, and texts that run past them."""
    rng = random.Random(2026)
    for _ in range(2000):
        literals = {"".join(rng.choice("ab<") for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 4))}
        prefilter = make_prefilter(sorted(literals))
        texts = {"".join(rng.choice("ab<") for _ in range(rng.randint(0, 8))) for _ in range(30)}
        _check(set(prefilter.literals), prefilter.finder, texts)


def test_cut_prefixes_are_bounded_per_template():
    """Long literals give prefixes up to `CUT_PREFIX_CHARS` only, and a template whose states would pass
    `MAX_CUT_PREFIXES` in all gets none for the states past it (their held text is searched as before)."""
    long = "<" + "x" * 500 + ">"
    cut, longest = _cut_prefixes(frozenset([long]), [MAX_CUT_PREFIXES])
    assert longest == CUT_PREFIX_CHARS and len(cut) == CUT_PREFIX_CHARS
    fields = {f"f{i}": {"open": f"<open{i}>", "close": [f"</{i}-{c}" + "y" * 60 + ">" for c in range(40)]}
              for i in range(8)}
    plan = _Plan.of(load_template({"start_anchor": "A:", "fields": fields}))
    sizes = [len(fast[4]) for fast in plan.fast.values() if fast is not None]
    assert sum(sizes) <= MAX_CUT_PREFIXES
    assert 0 in sizes and max(sizes) > 0
