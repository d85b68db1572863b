"""The commit path of `ResponseParser._process` (a delimiter commits, its region opens or closes, the next
state's finder looks at the rest of the buffer): for every chunking ours gives the reference's one-shot message,
events and errors, on the cases its shortcuts take apart (captures after a close, a delimiter ending at the
buffer edge, a zero-width close of an empty region, a transform built by a generated function); and a commit
empties the scan state it keeps between feeds."""

from __future__ import annotations

import itertools

import pytest

import differential as d
from parsing import ResponseParser
from parsing.budget import SearchClock
from parsing.scanner import ScanState

ANCHOR = "<|A|>"


def _t(fields: dict) -> dict:
    return {"start_anchor": ANCHOR, "fields": fields}


TOOL_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}

CASES = [
    # The implicit field's transform names a capture of the explicit region before it: after the close the
    # implicit region has no captures (the reference raises KeyError), however the text was cut.
    pytest.param(_t({"c": {"transform": {"v": "{name}"}},
                     "t": {"open_pattern": "<t (?P<name>\\w+)>", "close": "</t>", "transform": {"n": "{name}"}}}),
                 ANCHOR, "<t ab>x</t>y", "KeyError", id="captures_end_with_their_region"),
    pytest.param(_t({"c": {}, "t": {"open_pattern": "<t (?P<name>\\w+)>", "close": "</t>", "repeats": True,
                                    "content": "json", "transform": TOOL_CALL}}),
                 ANCHOR, '<t f>{"a": 1}</t><t g>[2]</t>z', None, id="region_after_region"),
    # Delimiters ending at the buffer edge with nothing after them, and text after them that starts the next.
    pytest.param(_t({"c": {}, "r": {"open": "<r>", "close": "</r>"}, "s": {"open": "<s>", "close": "</s>"}}),
                 ANCHOR, "<r>1</r><s>2</s><r></r>", None, id="back_to_back_regions"),
    # A zero-width close on an empty region fires once (the reference stops there too).
    pytest.param(_t({"c": {"close_pattern": "(?=<b)"}, "x": {"open": "<x>", "close": "</x>"}}),
                 ANCHOR, "<b<x>1</x>a<b", None, id="zero_width_close_of_empty_region"),
    # Keys that a generated transform must write as literals.
    pytest.param(_t({"c": {}, "t": {"open": "<t>", "close": "</t>", "content": "json",
                                    "transform": {"k'\"\\\n": "{content}", "": [1.5, None, "{content}"]}}}),
                 ANCHOR, '<t>{"x": [1]}</t>', None, id="generated_transform_keys"),
]


def _chunkings(text: str):
    n = len(text)
    for k in (0, 1, 2):
        for points in itertools.combinations(range(1, n), k):
            bounds = [0, *points, n]
            yield [text[a:b] for a, b in zip(bounds, bounds[1:])]
    yield list(text)


@pytest.mark.parametrize("template,prefix,output,error", CASES)
def test_commit_path_gives_the_reference_one_shot_result(template, prefix, output, error):
    expected = d.ref_expected(template, prefix, output)
    assert (type(expected.error).__name__ if expected.error is not None else None) == error  # (the case is live)
    for chunks in _chunkings(output):
        got = d.run_stream(d.ours, template, prefix, chunks)
        assert d.same_outcome(expected, got), f"{chunks!r}\n{d.diff_text(expected, got)}"


def test_captures_end_with_their_region_under_recover():
    template = _t({"c": {"transform": {"v": "{name}"}},
                   "t": {"open_pattern": "<t (?P<name>\\w+)>", "close": "</t>", "transform": {"n": "{name}"}}})
    parser = ResponseParser(template, ANCHOR, recover=True)
    events = parser.feed("<t ab>x</t>y")
    message, final = parser.finalize()
    closes = [e["value"] for e in events + final if e["type"] == "region_close"]
    errors = [e for e in events + final if e["type"] == "region_error"]
    assert closes == [{"n": "ab"}]
    assert [(e["field"], e["message"].split(":")[0], e["raw"]) for e in errors] == [("c", "KeyError", "y")]
    assert message == {"t": {"n": "ab"}}


def test_a_commit_empties_the_scan_state():
    """Every field of `ScanState` but the offsets ``checked``/``searched``, ``candidates`` (answers about text that
    never changes) and `SearchClock.slow` (kept for the whole parse) is empty after a commit: `_process` clears
    them inline, field by field."""
    parser = ResponseParser(_t({"c": {}, "r": {"open": "<r>", "close": "</r>"}}), ANCHOR)
    parser.feed("a<r")
    clock = parser._clock = ScanState()
    kept = {"checked", "searched", "candidates", "slow"}
    fields = [name for cls in (ScanState, SearchClock) for name in cls.__slots__ if name not in kept]
    for name in fields:
        value = getattr(clock, name)
        setattr(clock, name, {1: 2} if isinstance(value, dict) else {1} if isinstance(value, set) else (0, None))
    parser.feed(">b")
    assert parser._clock is clock
    assert {name: getattr(clock, name) for name in fields if getattr(clock, name)} == {}
