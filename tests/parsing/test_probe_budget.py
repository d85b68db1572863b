"""Same text, same answer under the regex budget, for patterns with nested repeats (issue #14).

While streaming, the scanner asks questions a one-shot search of the whole text never asks (a partial
``fullmatch`` from a complete match's start: could more text still change it?), and its searches run on text cut
short. With nested repeats those calls can backtrack for seconds where the search of the whole text takes a
millisecond. They run under a probe budget of their own (`parsing.budget.PROBE_SHARE` of ``regex_timeout``),
not charged to the search budget; past it the delimiter is held until a commit or the end of the stream, where the
one-shot rule decides. The cases below come from a hostile trial (trial 9, finding 6): each differs by orders of
magnitude (a millisecond against seconds), so nothing here depends on the machine's speed.
"""

from __future__ import annotations

import copy

import pytest
from transformers.utils.chat_parsing import parse_response as reference_parse

from parsing import ResponseParser, parse_response
from parsing.budget import PROBE_SHARE, SearchClock
from parsing.streams import fixed_chunks, merged_events

# The reference answers each in about a millisecond.
CASES = {
    # A complete match at index 0 whose partial-fullmatch check backtracks for seconds on 24 characters: this
    # raised PatternTimeoutError one-shot too (a one-shot parse runs the same feed).
    "fullmatch_probe": ({"start_anchor": "S", "fields": {"c": {}, "r": {
        "open_pattern": r"(?:.*?)*\w+a>", "repeats": True}}}, "}::ab>b 1a_a><b<b1a>//<<", ""),
    # Succeeds one-shot; fed a few characters at a time, the partial searches of the cut-short text backtrack
    # (each twice the one before), and their sum ran past the search budget.
    "cut_short_search": ({"start_anchor": "S", "fields": {"content": {"open_pattern": (
        r'(?:[^>\n]+)[^"\\<]*(?:(?:[a-z]+)(?:.*?(?!=))+<<|(?:[^>\n]+)<<\[T\])'
        r'(?:(?:[^>\n]+)(?:(?:b)?b){1,3}|(?:\w+)"(?!(?:</t>){2}</a>))')}, "b": {}}},
        '"x<a>""ba">"\\\\"{ {}<k>v</k>bxcc<<[T]aba"c a<<[T]bbbaaa', "S"),
    "partial_open": ({"start_anchor": "S", "fields": {"content": {}, "t": {"open_pattern": r"\w(?:.*?(?!=))+<<"}}},
                     "ab" * 20, "S"),
}


def streamed(template, prefix, chunks):
    parser = ResponseParser(copy.deepcopy(template), prefix)
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    return message, merged_events(events + final)


@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_repeats_give_the_reference_answer_one_shot_and_in_every_chunk_size(name):
    template, text, prefix = CASES[name]
    expected = reference_parse(text, copy.deepcopy(template), prefix=prefix)
    assert parse_response(text, copy.deepcopy(template), prefix=prefix) == expected
    whole = streamed(template, prefix, [text])
    assert whole[0] == expected
    for size in range(1, 6):
        assert streamed(template, prefix, fixed_chunks(text, size)) == whole, size


def test_probe_time_is_not_charged_to_the_search_budget():
    template, text, prefix = CASES["fullmatch_probe"]
    parser = ResponseParser(copy.deepcopy(template), prefix, regex_timeout=1.0)
    parser.feed("")  # the first scan makes the parse's ScanState
    clock = parser._clock
    delim = parser.template.fields["r"].open
    # 0.9 s of the search's 1 s already spent: the probe (it gives up after its own 0.25 s) would overrun it.
    clock.spent[id(delim)] = 0.9
    assert parser.feed(text) == []  # held: no PatternTimeoutError
    assert clock.probes[id(delim)] == PROBE_SHARE * 1.0  # its own budget, spent
    assert clock.spent[id(delim)] < 0.9 + PROBE_SHARE / 2  # only the search itself (about a millisecond)
    assert clock.given_up[id(delim)] == 0
    assert parser.finalize()[0] == reference_parse(text, copy.deepcopy(template), prefix=prefix)


def test_a_delimiter_that_gave_up_is_not_searched_again_before_the_end(monkeypatch):
    template, text, prefix = CASES["fullmatch_probe"]
    parser = ResponseParser(copy.deepcopy(template), prefix)
    parser.feed(text)
    assert parser._clock.given_up  # held until the end of the stream
    calls = []
    for method in ("run", "probe", "capped"):
        original = getattr(SearchClock, method)

        def counted(self, *args, _original=original, _method=method, **kwargs):
            calls.append(_method)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(SearchClock, method, counted)
    for ch in "x1a>" * 250:  # 1,000 more feeds: none pays the probe budget again, none searches again
        assert parser.feed(ch) == []
    assert calls == []
    message, _ = parser.finalize()
    assert message == reference_parse(text + "x1a>" * 250, copy.deepcopy(template), prefix=prefix)
