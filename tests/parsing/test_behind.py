"""Lookbehind bodies read with string operations (`parsing.behind`): recognised only in their forms, holding exactly
where ``regex``'s lookbehind holds (on text that grows, reading on from earlier candidates, with a window start and
the consumed text gone), and the library families' parses unchanged (the differential and library tests cover them
streamed; here: which of their lookbehinds get a reading)."""

from __future__ import annotations

import random

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examples import list_families, load_family
from parsing import load_template
from parsing.behind import LookbehindReader, lookbehind_reader
from parsing.prefilter import split_leading_lookbehinds

TAIL = r'(?:[^"\\<]|"(?:[^"\\]|\\.)*")*'

# Bodies with a reading: the library's (hermes, llama3_json, glm45, seed_oss, minimax_m2) and forms around them.
READ = [
    r"^\s*",
    r"^\s*|;\s*",
    r"</arg_value>\s*|<tool_call>[^\s<]+\s*",
    r"</parameter>\s*|<function=[^>\n]+>\s*",
    r'</parameter>\s*|<invoke name=\"[^\"]*\">\s*',
    "^\\s*" + TAIL,
    "^\\s*```json\\s*" + TAIL,
    "(?:^|<\\|python_tag\\|>|;)\\s*" + TAIL,
    r"a\s+",
    r"^",
    r"[ab]+",
    r"\s*x",
    r"x[ab]*",
    r"ab[ab]+",  # a literal the run takes, first: it may end anywhere in the run
    r"ba[ab]+c",
    r"a[0-9]+[a-z]*",  # two runs of disjoint classes
    r"(?:ab|b)c\s*",
    r"^[ab]*",
    r"^x[ab]+",
    r"<p>[^\s<]+\s*|;",
    "^x[ab]*;" + TAIL,
    ";\\s*" + TAIL + "|^a",
    "(?:<p>|<q>)[ \\n]*" + TAIL,
    r"[0-9]+(?:x|y)?",  # written out: [0-9]+x|[0-9]+y|[0-9]+
]

NOT_READ = [
    r"a(?=b)",  # a lookahead
    r"(?i)a\s*",  # an inline flag
    r"(a)\s*",  # a capturing group
    r"(?P<n>a)\s*",
    r"a.*",  # `.` is no class run here
    r"a[ab]+[ab]*",  # two runs sharing characters
    r"x[ab]+ab[ab]+",  # a literal the run takes, not first
    r"a^b",
    r"a\b",
    "^[ab]*a" + TAIL,  # a ^-head whose run takes the literal's first character
    "a[xy]+" + TAIL,  # a head the tail cannot take the end of (not a literal, not ^)
    "a[xy]*[ab]+" + TAIL,
    "^a" + TAIL + r'|;(?:[^"\\]|"(?:[^"\\]|\\.)*")*',  # two different tails
    TAIL,  # no head: holds everywhere, left to the regex
]


@pytest.mark.parametrize("behind", READ)
def test_read_forms_are_recognised(behind):
    assert type(lookbehind_reader(behind)) is LookbehindReader


@pytest.mark.parametrize("behind", NOT_READ)
def test_other_forms_keep_the_regex(behind):
    assert lookbehind_reader(behind) is None


def test_library_lookbehinds_with_a_reading():
    """Every leading lookbehind of a library delimiter gets a reading (this module's, or one of the two older
    ones), and the template attaches it to the split delimiter."""
    from parsing.escape_strings import EscapeStrings

    seen = set()
    for name in list_families():
        template = load_template(load_family(name).template)
        for field in template.fields.values():
            for delim in (field.open, field.close):
                if delim is None or delim.split is None:
                    continue
                behinds, _ = split_leading_lookbehinds(delim.source)
                for behind, guard in zip(behinds, delim.split[0]):
                    quick = guard[4]
                    assert quick is not None, (name, behind)
                    assert type(quick) in (tuple, EscapeStrings, LookbehindReader)
                    if type(quick) is LookbehindReader:
                        seen.add(name)
    assert {"hermes", "llama3_json", "glm45", "seed_oss", "minimax_m2"} <= seen


PIECES = ['"', "\\", '\\"', "\\\\", "<", ">", " ", "\n", "\t", "\x1c", "\xa0", "a", "b", "c", "x", "y", ";", "0",
          "9", "é", "```json", "```", "```js", "<p>", "<q>", "<tool_call>", "<tool_call>get_w", "</arg_value>",
          "<function=", "<function=f>", "</parameter>", '<invoke name="', '">', "<|python_tag|>", "{", "}", "=",
          "ab", "ba", "abc"]


def _check(behind: str, text: str, lo: int, rng: random.Random) -> int:
    """Compare the reading with ``regex`` at every position of ``text`` fed in growing pieces; returns how many
    positions held."""
    quick = lookbehind_reader(behind)
    engine = regex.compile(f"(?<={behind})", regex.DOTALL)
    memo: dict = {}
    held = 0
    end = lo
    while end < len(text):
        end = rng.randint(end + 1, len(text))
        buf = text[:end]
        expected = [engine.match(buf[lo:], at - lo) is not None for at in range(lo, end + 1)]
        got = [quick.holds(buf, lo, at, 0, {}, "k") for at in range(lo, end + 1)]
        assert got == expected, (behind, buf, lo)
        held += sum(expected)
        for _ in range(rng.randint(0, 3)):  # reading on from earlier candidates, consumed text gone
            at = rng.choice([end, end - 1, rng.randint(lo, end)])
            if at < lo:
                continue
            cut = rng.randint(0, lo)
            assert quick.holds(buf[cut:], lo - cut, at - cut, cut, memo, "k") is expected[at - lo], (behind, buf, lo,
                                                                                                     at)
    return held


def test_reading_holds_where_regex_holds_seeded():
    rng = random.Random(20261202)
    held = 0
    for _ in range(1500):
        behind = rng.choice(READ)
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 16)))
        lo = rng.randint(0, len(text)) if rng.random() < 0.4 else 0
        held += _check(behind, text, lo, rng)
    assert held > 500


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(READ) - 1), parts=st.lists(st.integers(0, len(PIECES) - 1), max_size=20),
       windowed=st.booleans(), seed=st.integers(0, 10 ** 6))
def test_reading_holds_where_regex_holds(which, parts, windowed, seed):
    rng = random.Random(seed)
    text = "".join(PIECES[p] for p in parts)
    lo = rng.randint(0, len(text)) if windowed else 0
    _check(READ[which], text, lo, rng)


def test_long_region_reads_linearly(monkeypatch):
    """A ``^``-head's tail reading goes on from the last candidate: a long call with many candidates reads each
    character a bounded number of times (counted, not timed)."""
    from parsing import scanner

    quick = lookbehind_reader("^\\s*" + TAIL)
    calls = []
    states = scanner._quote_states

    def counting(s, text, start, stop, outside, inside):
        calls.append(stop - start)
        return states(s, text, start, stop, outside, inside)

    monkeypatch.setattr(scanner, "_quote_states", counting)
    text = '{"a": "' + 'x</tool_call>' * 2000 + '"}'
    memo: dict = {}
    positions = [i for i in range(len(text)) if text.startswith("</tool_call>", i)]
    for at in positions:
        assert quick.holds(text, 0, at, 0, memo, "k") is False  # inside the string
    assert quick.holds(text, 0, len(text), 0, memo, "k") is True
    assert sum(calls) <= len(text)
