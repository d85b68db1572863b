"""`parsing.prefilter`: the literals derived from a delimiter pattern never rule out a position where the regex
could match or partially match, and a search started at the first candidate gives what a search from the scan
position gives. Random patterns mix every construct the reading understands with several it gives up on."""

from __future__ import annotations

import dataclasses
import string

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.utils.chat_parsing import parse_response as reference_parse

from examples import list_families, load_family
from parsing import ResponseParser, load_template, parse_response, prefilter
from parsing.prefilter import _LITERAL_ESCAPES, derive_prefilter, make_prefilter
from parsing.budget import NO_LIMITS
from parsing.scanner import _suffix_after


def heads(pattern):
    pf = derive_prefilter(pattern)
    return None if pf is None else (sorted(pf.literals), pf.at_start)


@pytest.mark.parametrize("pattern, literals, at_start", [
    (r"<\|channel\|>analysis", ["<|channel|>analysis"], False),
    (r"(?:<\|channel\|>commentary to=functions\.(?P<name>[^\s<]+)|<\|start\|>assistant to=functions\."
     r"(?P<name>[^\s<]+)<\|channel\|>commentary)[^<]*<\|message\|>",
     ["<|channel|>commentary to=functions.", "<|start|>assistant to=functions."], False),
    (r"<\|python_tag\|>|(?=\{\s*\"name\"\s*:)", ["<|python_tag|>", "{"], False),
    (r";\s*(?=\{)|<\|eom_id\|>", [";", "<|eom_id|>"], False),
    (r">>>(?!all\n)(?P<name>[\w.-]+)\n", [">>>"], False),
    (r"functools(?=\[)", ["functools["], False),
    (r"Here(?: is|'s) my thought", ["Here is", "Here's"], False),
    (r"<tool_call>\s*<function=", ["<tool_call>"], False),
    (r"ab+c", ["ab"], False),
    (r"ab?c", ["a"], False),
    (r"a{2,3}", ["a"], False),
    (r"(?<=x)\bab", ["ab"], False),
    (r"(?:ab|cd)ef", ["ab", "cd"], False),
    (r"(?>ab)c", ["ab"], False),
    (r"(?s:ab)c", ["ab"], False),
    (r"(?#note)ab", ["ab"], False),
    (r"\n\t", ["\n\t"], False),
    (r"^", [], True),
    (r"\A<s>|<b>", ["<b>"], True),
    (r"(?=^)x|y", ["y"], True),
    (r"x^", ["x"], False),
    (r"[[:alpha:]]x|y", None, None),
])
def test_library_style_patterns(pattern, literals, at_start):
    assert heads(pattern) == (None if literals is None else (literals, at_start))


@pytest.mark.parametrize("pattern", [
    r"", r"\s*</x>", r".abc", r"a?b", r"(?:a|)b", r"x*", r"[ab]c", r"(?:ab)?c", r"$", r"\bx?", r"(?!a)",
    r"(?i)abc", r"abc(?i)", r"(?V1)abc", r"(?r)abc", r"(?:abc){e<=1}", r"ab{e<=1}", r"a\Kb", r"\Gabc", r"a{b",
    r"ab(?i:cd)", r"ab(?r:cd)", r"(?|a)", r"(?(1)a|b)", r"(?R)", r"(?1)", r"(?&n)", r"(?P>n)", r"\1a", r"(?P=n)a", r"\w+:",
])
def test_patterns_without_a_certain_literal(pattern):
    assert derive_prefilter(pattern) is None


def test_every_library_pattern_gets_a_prefilter():
    """Every open/close pattern of the library's 25 families yields literals (or the stream start)."""
    for name in list_families():
        for field, spec in load_family(name).template["fields"].items():
            for key in ("open_pattern", "close_pattern"):
                if key in spec:
                    assert derive_prefilter(spec[key]) is not None, (name, field, key)


def test_literal_escapes_stand_for_the_character():
    for char in _LITERAL_ESCAPES:
        assert regex.compile("\\" + char).fullmatch(char), char
    assert set(string.punctuation) <= _LITERAL_ESCAPES


def test_candidate_finds_literals_and_cut_off_literals():
    pf = make_prefilter(["<|call|>", "<|end|>"])
    assert pf.candidate("abc <|end|> <|call|>", 0) == 4
    assert pf.candidate("abc <|end|> <|call|>", 5) == 12
    assert pf.candidate("abc <|ca", 0) == 4  # a proper prefix at the end of the text
    assert pf.candidate("abc <|cx", 0) == -1
    assert pf.candidate("abc <", 0) == 4
    assert pf.candidate("", 0) == -1
    start = make_prefilter(["b"], at_start=True)
    assert start.candidate("xxb", 0) == 0 and start.candidate("xxb", 1) == 2 and start.candidate("", 0) == 0


def _without_finder(literals):
    """A prefilter of ``literals`` on the path of one too large for a compiled finder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "MAX_FINDER_CHARS", 0)
        slow = make_prefilter(literals)
    assert slow.finder is None and slow.automaton is not None
    return slow


def test_candidate_without_compiled_finder_agrees():
    lits = ["<a>", "<a>xyz", "zz"]
    fast = make_prefilter(lits)
    slow = _without_finder(lits)
    for text in ["", "<", "<a", "<a>x", "q<a>xy", "zq<a", "z", "abzz", "<b<a>"]:
        for pos in range(len(text) + 1):
            assert fast.candidate(text, pos) == slow.candidate(text, pos), (text, pos)


@settings(max_examples=400, deadline=None)
@given(lits=st.lists(st.text("ab<|>", min_size=1, max_size=6), min_size=1, max_size=8),
       text=st.text("ab<|>", max_size=16))
def test_literal_automaton_finds_what_the_compiled_finder_finds(lits, text):
    """Literals sharing prefixes and suffixes (so the automaton's suffix links matter): the automaton gives the
    compiled finder's answer at every start position."""
    fast, slow = make_prefilter(lits), _without_finder(lits)
    for pos in range(len(text) + 1):
        assert slow.candidate(text, pos) == fast.candidate(text, pos), (lits, text, pos)


@settings(max_examples=300, deadline=None)
@given(lits=st.lists(st.text("ab<|>\n", min_size=1, max_size=6), min_size=1, max_size=8),
       text=st.text("ab<|>\n", max_size=16))
def test_a_finder_never_matches_empty_text_at_the_end(lits, text):
    """`finalize` closes the region without a search when nothing is unconsumed: every finder match starts with a
    literal's first character, so none starts at the end of the text (nor in empty text)."""
    finder = make_prefilter(lits).finder
    assert finder.search(text, len(text)) is None
    assert finder.search("") is None
    for pos in range(len(text) + 1):
        found = finder.search(text, pos)
        assert found is None or (found.end() > found.start() and any(lit.startswith(found.group()) for lit in lits))


class _CountingText(str):
    """A str that counts the characters read from it one by one (the automaton's steps)."""

    reads = 0

    def __getitem__(self, index):
        _CountingText.reads += 1
        return str.__getitem__(self, index)


def test_many_literals_search_the_stream_once():
    """300 alternatives (over the compiled finder's size): finding each region's delimiter from the end of the
    last one reads each character of the stream a bounded number of times, however many literals there are (a
    per-literal ``str.find`` read the whole rest of the stream per absent literal, per region)."""
    lits = [f"<tool_call_{i}>" for i in range(300)]
    pf = make_prefilter(lits)
    assert pf.finder is None and sum(map(len, lits)) > prefilter.MAX_FINDER_CHARS
    unit = "<tool_call_299>x</t>"
    text = _CountingText(unit * 2000)
    _CountingText.reads = 0
    pos, starts = 0, []
    while (at := pf.candidate(text, pos)) != -1:
        starts.append(at)
        pos = at + 1
    assert starts == list(range(0, len(text), len(unit)))
    assert _CountingText.reads <= 2 * len(text)


def test_many_literal_alternatives_parse_as_the_reference_does():
    """The delimiter of trial 10's finding: a repeated field opened by one of 300 literal alternatives."""
    pattern = "(?:" + "|".join(f"<tool_call_{i}>" for i in range(300)) + ")"
    template = {"start_anchor": "S", "fields": {
        "content": {}, "t": {"open_pattern": pattern, "close": "</t>", "repeats": True}}}
    text = "hi " + "<tool_call_299>x</t><tool_call_7>yz</t>" * 50 + "<tool_call_3"
    expected = reference_parse(text, template, prefix="S")
    assert parse_response(text, load_template(template), prefix="S") == expected
    streamed = ResponseParser(load_template(template), prefix="S")
    for i in range(0, len(text), 3):
        streamed.feed(text[i:i + 3])
    assert streamed.finalize()[0] == expected


# ---------------------------------------------------------------- random patterns
ATOMS = ["a", "b", "<", ">", r"\<", r"\n", r"\.", ".", "[ab]", r"\w", r"\s", r"\b", r"\B", "^", "$", r"\A", r"\Z"]


def _pattern():
    leaf = st.sampled_from(ATOMS)

    def extend(children):
        seq = st.lists(children, min_size=1, max_size=4).map("".join)
        alts = st.lists(seq, min_size=1, max_size=3).map("|".join)
        quant = st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{0,1}", "{1,2}", "??", "+?"])
        group = st.tuples(st.sampled_from(["(", "(?:", "(?P<g>", "(?>", "(?=", "(?!", "(?<=", "(?<!", "(?s:",
                                           "(?i:"]), alts, quant)
        return st.one_of(seq, group.map(lambda t: t[0] + t[1] + ")" + t[2]),
                         st.tuples(children, quant).map("".join))

    top = st.recursive(leaf, extend, max_leaves=5)
    return st.lists(top, min_size=1, max_size=3).map("|".join)


# Texts made of pieces the patterns are built from, so that matches and cut-off matches are common.
TEXTS = st.lists(st.sampled_from(["a", "b", "<", ">", "\n", "ab", "<a", "b>", "<<", "ba"]), max_size=7).map("".join)


def _compiled(pattern):
    try:
        return regex.compile(pattern, regex.DOTALL)
    except regex.error:
        return None


def _key(m):
    return None if m is None else (m.span(), bool(m.partial), m.groups())


def _assert_prefilter_sound(pattern: str, text: str) -> None:
    """The prefilter derived from ``pattern`` never rules out a position where it matches (whole or partial at the
    end of ``text``), and a search from its candidate finds what a search from the position finds."""
    rx = _compiled(pattern)
    if rx is None or regex.compile(r"\(\?P<g>.*\(\?P<g>").search(pattern):
        return
    pf = derive_prefilter(pattern)
    if pf is None:
        return
    end = len(text)
    for p in range(end + 1):
        m = rx.match(text, p, partial=True)
        if m is not None and (p < end or not m.partial):
            assert pf.candidate(text, p) == p, (pattern, text, p, m)
    for pos in range(end + 1):
        c = pf.candidate(text, pos)
        for partial in (True, False):
            whole = rx.search(text, pos, partial=partial)
            if c == -1:
                assert whole is None or (whole.partial and whole.start() == end), (pattern, text, pos, whole)
            else:
                assert _key(rx.search(text, c, partial=partial)) == _key(whole), (pattern, text, pos, c)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_pattern(), text=TEXTS)
def test_prefilter_never_rules_out_a_match(pattern, text):
    _assert_prefilter_sound(pattern, text)


@settings(max_examples=300, deadline=None)
@given(lits=st.lists(st.text("ab<|>", min_size=1, max_size=5), min_size=1, max_size=4),
       text=st.text("ab<|>", max_size=12))
def test_literal_prefilter_finds_the_first_literal_or_cut_off_literal(lits, text):
    """For literals the candidate is exactly the first position where one starts or where the text ends inside
    one, and never after the first complete match of the escaped alternation."""
    pf = make_prefilter(lits)
    rx = regex.compile("|".join(regex.escape(s) for s in sorted(lits, key=len, reverse=True)))
    for pos in range(len(text) + 1):
        expected = next((p for p in range(pos, len(text)) if any(
            text.startswith(lit, p) or (len(text) - p < len(lit) and lit.startswith(text[p:])) for lit in lits)), -1)
        assert pf.candidate(text, pos) == expected, (lits, text, pos)
        m = rx.search(text, pos)
        assert m is None or 0 <= expected <= m.start()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_pattern(), text=TEXTS)
def test_suffixes_arrive_before_a_match_is_complete(pattern, text):
    """The scanner leaves a partial match alone while no suffix literal has arrived where a match could end with
    it: every complete match from a position must see one there."""
    rx = _compiled(pattern)
    if rx is None:
        return
    delim = _delimiter(pattern)
    if delim is None or delim.suffixes is None:
        return
    for at in range(len(text) + 1):
        m = rx.search(text, at)
        if m is not None:
            assert _suffix_after(delim, text, at), (pattern, text, at, m)


def _delimiter(pattern):
    from parsing import TemplateError, load_template

    try:
        template = load_template({"start_anchor": "S", "fields": {"f": {"open_pattern": pattern,
                                                                        "transform": {"v": "{content}"}}}})
    except TemplateError:
        return None
    return template.fields["f"].open


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_pattern(), text=TEXTS)
def test_search_candidate_by_candidate_is_search(pattern, text):
    """The scanner searches a pattern with an unbounded lookbehind one candidate at a time; that must be what
    one search returns, with and without partial matching (here for every pattern with a prefilter)."""
    from parsing.budget import SearchClock
    from parsing.scanner import _search

    delim = _delimiter(pattern)
    if delim is None or delim.prefilter is None:
        return
    delim = dataclasses.replace(delim, lookbehind=None)
    rx = delim.regex
    for at in range(len(text) + 1):
        c = delim.prefilter.candidate(text, at)
        if c == -1:
            continue
        for partial in (True, False):
            got = _search(delim, text, c, partial, NO_LIMITS, SearchClock())
            want = rx.search(text, c, partial=partial)
            if want is not None and want.partial and want.start() == len(text) and got is None:
                continue  # an empty partial match at the very end holds nothing: the same as none
            assert _key(got) == _key(want), (pattern, text, at, partial)


@pytest.mark.parametrize("pattern, literals, at_start", [
    ("(?s)<think>(?=.*</think>)", ["<think>"], False),
    ("(?s)ab|cd", ["ab", "cd"], False),
    ("a(?s)b", ["ab"], False),
    ("(?s)^a", [], True),
    ("(?s)", None, None),
    ("(?-s)ab", None, None),
    ("(?si)ab", None, None),
])
def test_a_global_dotall_flag_changes_nothing(pattern, literals, at_start):
    """``(?s)``: DOTALL, on for every delimiter already; the literals are those of the pattern without it."""
    assert heads(pattern) == (None if literals is None else (literals, at_start))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_pattern(), text=TEXTS, where=st.integers(0, 3))
def test_prefilter_with_a_global_dotall_flag_never_rules_out_a_match(pattern, text, where):
    """The random patterns of `test_prefilter_never_rules_out_a_match` with ``(?s)`` put first or between two of
    their top-level alternatives: the prefilter still rules out only places where no match (or partial match)
    starts, and a search from its candidate is the search."""
    parts = pattern.split("|")
    if where and len(parts) > 1 and ")" not in parts[0] and "(" not in parts[0]:
        pattern = parts[0] + "|(?s)" + "|".join(parts[1:])
    else:
        pattern = "(?s)" + pattern
    _assert_prefilter_sound(pattern, text)
