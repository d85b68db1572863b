"""Streaming next to the buffer edge: same text, same answer, in time linear in the stream (issue #14).

Two findings of trial 10 (session 8):

* An attempt that `regex`'s partial matching cannot see at the buffer edge (``(?!\\Z)``, ``\\b``, ``\\B``, ``(?!$)``
  decided there as if the text ended; a lazy repeat before a lookbehind) let the scanner flush text that the next
  chunk turns into a delimiter: ``(?:\\w+b|x>:)(?!\\Z)==`` fed ``qx>:`` + ``==z`` gave ``{'content': 'qx>:==z'}``,
  one-shot ``{'content': 'q', 'a': 'z'}``. The scanner now also searches the pattern's edge pattern
  (`parsing.edge`), whose contract is checked directly below, against `regex` on the whole text.
* A partial match held for a long text was searched again over all of it on every feed: quadratic. The work is
  counted here (regex calls and the characters they were given), not timed.
"""

from __future__ import annotations

import copy
import random

import pytest
import regex
from transformers.utils.chat_parsing import parse_response as reference_parse

import differential as d
import parsing
from parsing import ResponseParser, parse_response
from parsing.edge import compile_edge

pytestmark = pytest.mark.unit


def _tpl(fields: dict) -> dict:
    return {"start_anchor": "S", "fields": fields}


# (template, output): the trial's minimal forms, then what a differential fuzz of such assertions found on the way.
CASES = {
    "negated_Z": (_tpl({"content": {}, "a": {"open_pattern": r"(?:\w+b|x>:)(?!\Z)=="}}), "qx>:==z"),
    "negated_dollar": (_tpl({"content": {}, "a": {"open_pattern": r"(?:\w+b|x>:)(?!$)=="}}), "qx>:==z"),
    "atomic": (_tpl({"content": {}, "a": {"open_pattern": r"(?:\w+b|x(?>>:))(?!\Z)=="}}), "qx>:==z"),
    "nested": (_tpl({"content": {}, "a": {"open_pattern": r'(?:(?:\w+)"|(?:\w+c|x(?>>:))(?!\Z))=='}}), "qx>:==z"),
    "not_boundary_then_lookahead": (_tpl({"content": {}, "a": {"open_pattern": r"a\B(?!(?:a|b)\b)", "close": "b"}}),
                                     ">axabaa"),
    "negated_dollar_in_optional_atomic": (_tpl({"content": {}, "a": {
        "open_pattern": r"(?>b(?!$)|>:)?x[^=]{1,2}(?>ab)*"}}), ">baaa==bx:"),
    "lazy_then_lookbehind": (_tpl({"content": {}, "a": {"open_pattern": r".+?(?<=a)"}}), "xxxba>a=a"),
    "negated_dollar_before_newline": (_tpl({"content": {}, "a": {"open_pattern": r"(?!$)\n"}}), "a \n=\n\n=ba:"),
    "implicit_close": (_tpl({"content": {"close_pattern": r"\w*(?!$)\n"}, "a": {"open_pattern": ">:", "close": "\n"}}),
                       "x:a\nxx:>aqbaqb"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_blind_patterns_stream_to_the_reference_one_shot_answer(name):
    template, text = CASES[name]
    expected = d.run_stream(d.ref, template, "S", [text])  # the reference, one shot
    assert expected.error is None
    chunkings = [[text[:i], text[i:]] for i in range(1, len(text))] + [list(text)]
    for chunks in chunkings:
        got = d.run_stream(parsing, template, "S", chunks)
        assert d.same_outcome(expected, got), f"chunks={chunks!r}: {d.diff_text(expected, got)}"


EDGE_BLIND = [r"(?:\w+b|x>:)(?!\Z)==", r"a\b", r"\ba", r"a\B", r"\Ba\b", r"a\m", r"a\Mb", r"x(?!$)", r"x(?!$)a",
              r"a(?!\Z)", r"(?!\Z)", r"a(?!b\Z)", r"(?!b\b)a+", r"a+?(?<=b)", r".+?(?<=a)", r"(?>a(?!\Z)|ab)c?",
              r"a$\n?x", r"(?=\w\b)a", r"a(?=b\B)", r"[ab]+?(?<!a)c?", r"(?:a|b\b)+(?!\Z)=", r"\b(?:ab|a)\b"]


def test_the_edge_pattern_reaches_every_place_where_more_text_changes_a_match():
    """`parsing.edge`'s contract, checked with `regex` itself on seeded texts: wherever the match at p of the text
    cut at k differs from the match at p of the whole text (so reading past the cut decided it), the edge
    pattern's partial search of the cut text finds a place at or before p."""
    rng = random.Random(14)
    checked = 0
    for source in EDGE_BLIND:
        pattern = regex.compile(source, regex.DOTALL)
        edge = compile_edge(source, pattern.flags)
        assert edge is not None, source
        for _ in range(60):
            text = "".join(rng.choice("ab=c \n") for _ in range(rng.randint(1, 9)))
            for k in range(len(text) + 1):
                cut = text[:k]
                found = edge.search(cut, 0, partial=True)
                assert found is None or found.partial, source  # it never matches completely
                leftmost = found.start() if found is not None and found.start() < k else k
                for p in range(k):
                    whole, part = pattern.match(text, p), pattern.match(cut, p)
                    if (whole and whole.span()) != (part and part.span()):
                        checked += 1
                        assert leftmost <= p, (source, text, k, p)
    assert checked > 200  # the draws do reach such places


def test_the_edge_pattern_holds_nothing_the_text_already_decides():
    """Away from the buffer edge the assertions keep their own value: ``\\b<t>`` after a space can never match, and
    holding there would hold the rest of the stream."""
    edge = compile_edge(r"\b<t>\b(?=.*</t>)", 0)
    assert edge.search("x <t>ab ab ab", 0, partial=True).start() == 13  # only the empty attempt at the edge
    edge = compile_edge(r"(?:\w+b|x>:)(?!\Z)==", 0)
    assert edge.search("qx>:", 0, partial=True).start() == 1
    assert edge.search("qx>:q", 0, partial=True).start() == 4  # (?!\Z) read a character: x>: is ruled out


def _fuzz_pattern(rng: random.Random) -> str:
    atoms = ["a", "b", "x", "=", "==", ">:", " ", "\\n", r"\w+", r"\W", r"[a-z]*", r"\s?", ".+?", r"\b", r"\B",
             "$", r"\Z", r"(?!\Z)", r"(?!$)", r"(?=.)", r"(?!x)", r"(?!\b)", r"(?<=a)", r"(?<!a)", r"(?!.*=)",
             r"(?=\s*=)", r"(?!a|\Z)", r"(?>a|ab)", r"(?:a|\b=)?"]
    while True:
        source = "".join(rng.choice(atoms) for _ in range(rng.randint(2, 5)))
        compiled = regex.compile(source, regex.DOTALL)
        if compiled.search("") is None:
            return source


def test_seeded_edge_assertion_templates_stream_like_the_reference():
    """A small seeded differential sweep of such patterns (every 2-split and 1-character chunks)."""
    rng = random.Random(9)
    for _ in range(60):
        fields = {"content": {}, "a": {"open_pattern": _fuzz_pattern(rng)}}
        if rng.random() < 0.4:
            fields["a"]["close_pattern"] = _fuzz_pattern(rng)
        template = _tpl(fields)
        text = "".join(rng.choice("abx=>: \n") for _ in range(rng.randint(2, 10)))
        expected = d.run_stream(d.ref, template, "S", [text])
        for chunks in [[text[:i], text[i:]] for i in range(1, len(text))] + [list(text)]:
            got = d.run_stream(parsing, template, "S", chunks)
            assert d.same_outcome(expected, got), f"{template} chunks={chunks!r}: {d.diff_text(expected, got)}"


# A delimiter that stays a partial match over a long text: (open_pattern, head, repeated unit, tail).
HELD = {
    "lookahead_no_literal": ("(?s)<think>(?=.*</think>)", "<think>", "word ", "</think>answer"),
    "lazy_lookahead": (r"<think>(?=[\s\S]*?</think>)", "<think>", "word ", "</think>answer"),
    "shape_lookahead": ("<t>(?=[a-z]*!)", "<t>", "a", "!b"),
    "suffix_wait": ("<t.*?</t>", "<t", "a", "</t>z"),
    "json_call": (r'<tool_call>\s*\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}', "<tool_call>{", '"a": "b", ', "}z"),
    "edge_blind": (r"\b<t>\b(?=.*</t>)", "x <t>", "ab ", "</t>z"),
    "edge_blind_held": (r"<t>\b(?=.*</t>)", "<t>", "ab", "</t>z"),
}


def _counted_run(monkeypatch, template: dict, text: str) -> tuple[dict, int, int]:
    """Our parse of ``text`` fed 4 characters at a time: (message, regex calls, shape decisions and shape scans,
    characters they were given: for each, the text from its start position to the end of its buffer). A scan that
    runs neither (the held match is not due to be asked again) reads only the new text."""
    from parsing import budget, parser as parser_module, shapes

    counts = [0, 0]

    def count(text_arg, pos):
        counts[0] += 1
        counts[1] += len(text_arg) - pos

    guarded = budget.SearchClock._guarded
    decide = shapes.Shape.decide
    shape_step = parser_module.shape_step

    def counted_guarded(self, delim, method, text_arg, pos, *args):
        count(text_arg, pos)
        return guarded(self, delim, method, text_arg, pos, *args)

    def counted_decide(self, buf, at, *args, **kwargs):
        count(buf, at)
        return decide(self, buf, at, *args, **kwargs)

    def counted_shape_step(watch, buf, at, *args, **kwargs):
        count(buf, at)
        return shape_step(watch, buf, at, *args, **kwargs)

    monkeypatch.setattr(budget.SearchClock, "_guarded", counted_guarded)
    monkeypatch.setattr(shapes.Shape, "decide", counted_decide)
    monkeypatch.setattr(parser_module, "shape_step", counted_shape_step)
    parser = ResponseParser(copy.deepcopy(template), "S")
    for i in range(0, len(text), 4):
        parser.feed(text[i:i + 4])
    message = parser.finalize()[0]
    monkeypatch.undo()
    return message, counts[0], counts[1]


@pytest.mark.parametrize("name", sorted(HELD))
def test_a_long_held_partial_match_costs_linear_work(monkeypatch, name):
    """20,000 characters held behind one partial match, in 4-character chunks (5,000 feeds): the regex and shape
    calls are a few dozen, and the characters they are given a small multiple of the stream (each feed searching
    the held text again gave 5,000 calls and about 50 million characters). The answer is the one-shot one, and the
    reference's."""
    pattern, head, unit, tail = HELD[name]
    template = _tpl({"content": {}, "t": {"open_pattern": pattern, "close": "</x>"}})
    text = head + unit * (20_000 // len(unit)) + tail
    message, calls, chars = _counted_run(monkeypatch, template, text)
    assert message == parse_response(text, copy.deepcopy(template), prefix="S")
    assert message == reference_parse(text, copy.deepcopy(template), prefix="S")
    assert calls <= 400, calls
    assert chars <= 25 * len(text), chars
