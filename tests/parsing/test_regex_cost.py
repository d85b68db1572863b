"""`parsing.regex_cost`: which regex calls may run without the `regex` module's timeout. Patterns that can run away
(repeats of something that can itself vary, back references, fuzzy matching) never do; library patterns do on
the short texts a stream holds; and a parse gives the same result whichever way its calls ran."""

from __future__ import annotations

import regex
import pytest

from examples import list_families, load_family
from parsing import load_template
from parsing.regex_cost import UNGUARDED_STEPS, _paths, unguarded_length
from parsing.streams import fixed_chunks, parse_stream


def length(pattern: str) -> int:
    return unguarded_length(regex.compile(pattern, regex.DOTALL))


@pytest.mark.parametrize("pattern", [
    r"(a|aa)*b", r"(a*)*b", r"(?:a+)+$", r"(\w+\s?)*$", r"(.*a){12}", r"(a)\1*b", r"(?:ab){e<=1}", r"(?r)a+b",
    r"(a)?(?(1)b|c)", r"(?<=<t>(?:[^\"\\<]|\"(?:[^\"\\]|\\.)*\")*)</t>",
])
def test_runaway_shapes_always_keep_the_timeout(pattern):
    assert length(pattern) == 0


def test_the_bound_grows_with_the_repeats():
    assert length(r"<a>") >= 512  # no repeat: only the search positions and the text walked count
    assert length(r"</think>\s*|(?=<e>)") >= 32
    assert 0 < length(r"a*a*a*a*b") < length(r"a*b")
    import re._parser as sre_parse
    import re

    # Each repeat of one character multiplies the ways by at most n + 1.
    assert _paths(list(sre_parse.parse(r"a*b*", re.DOTALL)), 10) == 121
    assert _paths(list(sre_parse.parse(r"(?:a|bc)?d", re.DOTALL)), 10) == 3


def test_library_patterns_run_unguarded_on_held_text():
    """Every library delimiter's bound is positive unless it has a runaway shape (the lookbehinds that re-read a
    region: these keep their timeout), and the bound keeps the work under UNGUARDED_STEPS."""
    guarded = unguarded = 0
    for name in list_families():
        template = load_template(load_family(name).template)
        for field in template.fields.values():
            for delim in (field.open, field.close):
                if delim is None or delim.literals is not None:
                    continue
                n = unguarded_length(delim.regex)
                if n:
                    unguarded += 1
                    import re._parser as sre_parse
                    import re

                    paths = _paths(list(sre_parse.parse(delim.source, re.DOTALL)), n)
                    assert (n + 1) * paths * (n + len(delim.source)) <= UNGUARDED_STEPS
                else:
                    guarded += 1
    assert unguarded > guarded


@pytest.mark.parametrize("name", ["qwen3", "glm45", "kimi_k2", "seed_oss", "llama3_json"])
def test_same_result_with_every_call_guarded(name, monkeypatch):
    """The timeout only bounds a call; a parse whose calls all pass it gives the same message and events."""
    family = load_family(name)
    template = load_template(family.template)
    outcomes = []
    for force in (False, True):
        if force:
            monkeypatch.setattr("parsing.budget.unguarded_length", lambda compiled: 0)
        got = [parse_stream(template, t.prefix, fixed_chunks(t.output, 4), tools=t.tools or None)
               for t in family.transcripts]
        outcomes.append([(o.result(), o.events) for o in got])
    assert outcomes[0] == outcomes[1]
