"""Spans mode: offsets on events, delimiter reports, held bytes, and a tiling of the stream."""

import random

import pytest

import examples
from parsing import ResponseParser, streams
from parsing.streams import feed_all

# Literal delimiters on purpose: the delimiter records and held bytes asserted below are those of plain tags
# (the project default, examples.default_template(), uses patterns).
CHATML = examples.literal_chatml_template()
NO_IMPLICIT = {
    "start_anchor": "<|start|>assistant",
    "fields": {
        "reasoning_content": {"open_pattern": r"<\|channel\|>analysis<\|message\|>", "close": "<|end|>"},
        "content": {"open_pattern": r"<\|channel\|>final<\|message\|>", "close_pattern": r"<\|return\|>|<\|end\|>"},
    },
}
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUTPUT = ('Plan it.\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>\n'
          '<tool_call>{"name": "g", "arguments": {}}</tool_call>Done.<|im_end|>')


def stream(template, prefix, chunks, **kw):
    parser = ResponseParser(template, prefix, spans=True, **kw)
    message, events = feed_all(parser, chunks)
    return parser, message, events


def random_chunks(text, seed):
    return streams.random_chunks(text, random.Random(seed), max_size=7)


def assert_tiles(parser):
    segments = parser.segments()
    text = parser.stream_text
    assert segments[0]["start"] == 0
    assert segments[-1]["end"] == len(text)
    for a, b in zip(segments, segments[1:]):
        assert a["end"] == b["start"], (a, b)
    for seg in segments:
        assert seg["end"] > seg["start"]
        assert seg["origin"] == ("prefix" if seg["end"] <= parser.prefix_length else "generation")
        assert seg["start"] >= parser.prefix_length or seg["end"] <= parser.prefix_length


@pytest.mark.parametrize("seed", range(10))
def test_segments_tile_the_stream(seed):
    parser, message, events = stream(CHATML, PREFIX, random_chunks(OUTPUT, seed))
    assert parser.stream_text == "<think>\n" + OUTPUT
    assert parser.prefix_length == len("<think>\n")
    assert parser.dropped_prefix == PREFIX[: PREFIX.rindex("assistant\n") + len("assistant\n")]
    assert_tiles(parser)
    text = parser.stream_text
    # Each delimiter segment's text is one of the template's delimiters; bodies never contain them.
    delims = {"<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"}
    for seg in parser.segments():
        piece = text[seg["start"]:seg["end"]]
        if seg["kind"] == "delimiter":
            assert piece in delims
        else:
            assert not any(d in piece for d in delims)
    assert message["content"] == "Done."


@pytest.mark.parametrize("seed", range(5))
def test_event_offsets_point_at_their_text(seed):
    parser, _, events = stream(CHATML, PREFIX, random_chunks(OUTPUT, seed))
    text = parser.stream_text
    for event in events:
        assert 0 <= event["start"] <= event["end"] <= len(text)
        if event["type"] == "region_chunk":
            assert text[event["start"]:event["end"]] == event["text"]
    # Chunks of a field concatenate to its raw body, which lies between the open and the close delimiter.
    opens = [d for d in parser.delimiters if d["kind"] == "open"]
    closes = [d for d in parser.delimiters if d["kind"] == "close"]
    assert [d["text"] for d in opens] == ["<think>", "<tool_call>", "<tool_call>"]
    assert [d["text"] for d in closes] == ["</think>", "</tool_call>", "</tool_call>", "<|im_end|>"]
    for d in parser.delimiters:
        assert text[d["start"]:d["end"]] == d["text"]


def test_discarded_text_without_implicit_field():
    out = "junk<|channel|>analysis<|message|>think<|end|>more junk<|channel|>final<|message|>Hi<|return|>"
    parser, message, _ = stream(NO_IMPLICIT, "", random_chunks(out, 1))
    assert message == {"reasoning_content": "think", "content": "Hi"}
    assert_tiles(parser)
    discarded = [parser.stream_text[s["start"]:s["end"]] for s in parser.segments() if s["kind"] == "discarded"]
    assert discarded == ["junk", "more junk"]


def test_held_bytes_while_streaming():
    parser = ResponseParser(CHATML, "", spans=True)
    parser.feed("<think>abc</th")
    start, end = parser.held()
    assert parser.stream_text[start:end] == "</th"
    parser.feed("ink>")
    start, end = parser.held()
    assert start == end == len(parser.stream_text)


def test_captures_reported():
    template = {"start_anchor": "X", "fields": {
        "tool_calls": {"open_pattern": r"<call name=(?P<name>\w+)>", "close": "</call>", "content": "json",
                       "transform": {"name": "{name}", "arguments": "{content}"}},
        "content": {}}}
    parser, message, _ = stream(template, "", ["hi <call name=f", 'n>{"a": 1}</call>'])
    assert message["tool_calls"] == {"name": "fn", "arguments": {"a": 1}}
    assert parser.delimiters[0]["captures"] == {"name": "fn"}


def test_spans_do_not_change_events():
    plain = ResponseParser(CHATML, PREFIX)
    spanned = ResponseParser(CHATML, PREFIX, spans=True)
    chunks = random_chunks(OUTPUT, 3)
    a = list(plain.initial_events) + [e for c in chunks for e in plain.feed(c)] + plain.finalize()[1]
    b = list(spanned.initial_events) + [e for c in chunks for e in spanned.feed(c)] + spanned.finalize()[1]
    stripped = [{k: v for k, v in e.items() if k not in ("start", "end")} for e in b]
    assert a == stripped
