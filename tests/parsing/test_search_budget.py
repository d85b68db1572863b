"""Same text, same answer, also under the regex budget (issue #14): a close pattern with an unbounded
lookbehind on a 100 KB tool-call argument that mentions the close literal 2,000 times. The budget bounds the
regex work of one search however the text arrives, so one-shot and streamed parsing end the same way."""

from __future__ import annotations

import json

import pytest

from parsing import PatternTimeoutError, ResponseParser, parse_response
from parsing.streams import fixed_chunks

# Re-reads the stream from its start at every `</tool_call>`, to check that every JSON string before it is closed.
FROM_START = r'(?<=^(?:[^"\\]|\\.|"(?:[^"\\]|\\.)*")*)</tool_call>'
# The same check from the open tag on.
FROM_OPEN = r'(?<=<tool_call>[^"]*(?:"(?:[^"\\]|\\.)*"[^"]*)*)</tool_call>'


def template(close_pattern):
    return {"start_anchor": "<|im_start|>assistant\n", "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": close_pattern, "content": "json", "repeats": True},
        "content": {"close": "<|im_end|>"},
    }}


def issue_input() -> tuple[str, str]:
    """(generation, the code argument): 100 KB of code whose comments mention `</tool_call>` 2,000 times."""
    line = "x = 10  # the tag </tool_call> ends one tool call\n"
    code = line * 2000
    call = json.dumps({"name": "run", "arguments": {"code": code}})
    assert 98_000 < len(call) < 103_000 and code.count("</tool_call>") == 2000
    return f"<tool_call>{call}</tool_call><|im_end|>", code


def streamed(tpl, text, **options):
    parser = ResponseParser(tpl, prefix="", **options)
    events = []
    for piece in fixed_chunks(text, 4):
        events.extend(parser.feed(piece))
    message, final = parser.finalize()
    return message, events + final


def test_a_pattern_too_slow_for_the_text_raises_both_ways():
    text, _ = issue_input()
    tpl = template(FROM_START)
    with pytest.raises(PatternTimeoutError) as one_shot:
        parse_response(text, tpl, prefix="", regex_timeout=0.3)
    with pytest.raises(PatternTimeoutError) as stream:
        streamed(tpl, text, regex_timeout=0.3)
    for info in (one_shot, stream):
        assert info.value.field == "tool_calls" and info.value.role == "close" and info.value.pattern == FROM_START


def test_a_pattern_fast_enough_succeeds_both_ways_and_streams():
    text, code = issue_input()
    tpl = template(FROM_OPEN)
    expected = {"tool_calls": [{"name": "run", "arguments": {"code": code}}]}
    assert parse_response(text, tpl, prefix="", regex_timeout=10.0) == expected
    message, events = streamed(tpl, text, regex_timeout=10.0)
    assert message == expected
    # The argument streams: `regex` reports a partial match at each `</tool_call>` inside the string (its
    # lookbehind), which must not hold the rest of the stream until the end.
    chunks = [e for e in events if e["type"] == "region_chunk" and e["field"] == "tool_calls"]
    assert len(chunks) > 20_000
    assert max(len(e["text"]) for e in chunks) < 100
