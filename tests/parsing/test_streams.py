"""parsing.streams: chunkers that join back to the text, feeding helpers, and the merged-event comparison."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsing
from parsing.streams import (MAX_PIECES, boundaries, chunkings, feed_all, fixed_chunks, merged_events, parse_stream,
                             random_chunks, random_cuts, replay_chunks, same_events, tokenish_chunks)

TEMPLATE = {"start_anchor": "A:", "fields": {"reasoning_content": {"open": "<t>", "close": "</t>"},
                                              "content": {"close": "<e>"}}}
OUTPUT = "<t>plan</t>answer here<e>"


# ------------------------------------------------------------------------------------------ chunkers


def test_fixed_chunks():
    assert fixed_chunks("abcde", 2) == ["ab", "cd", "e"]
    assert fixed_chunks("abc", 1) == ["a", "b", "c"]
    assert fixed_chunks("", 3) == [""]
    with pytest.raises(ValueError):
        fixed_chunks("abc", 0)


def test_random_chunkings_are_reproducible_and_cover_the_text():
    text = "<think>abc</think>hello world"
    a, b = chunkings(text, 4, seed=7), chunkings(text, 4, seed=7)
    assert a == b and all("".join(c) == text for c in a)
    assert chunkings(text, 4, seed=8) != a
    assert boundaries(["ab", "c", "de"]) == [2, 3]
    assert random_chunks("", random.Random(0)) == [""]


def test_long_outputs_are_cut_into_a_bounded_number_of_pieces():
    text = "x" * (MAX_PIECES * 10)
    for seed in range(5):
        pieces = random_chunks(text, random.Random(seed))
        assert "".join(pieces) == text and len(pieces) <= MAX_PIECES
    assert max(len(p) for p in random_chunks("abcdefgh" * 10, random.Random(0), max_size=2)) <= 2


def test_random_cuts_span_one_piece_to_single_characters():
    text = "abcdefghij"
    counts = set()
    for seed in range(200):
        pieces = random_cuts(text, random.Random(seed))
        assert "".join(pieces) == text and all(pieces)
        counts.add(len(pieces))
    assert 1 in counts and len(text) in counts
    assert random_cuts("", random.Random(0)) == [""]
    assert random_cuts(text, random.Random("x")) == random_cuts(text, random.Random("x"))


def test_random_cuts_with_empty_pieces():
    pieces = [p for seed in range(50) for p in random_cuts("abcdefghij" * 3, random.Random(seed), empty_rate=0.5)]
    assert "" in pieces
    for seed in range(20):
        empty = random_cuts("", random.Random(seed), empty_rate=0.05)
        assert 1 <= len(empty) <= 3 and set(empty) == {""}


def test_tokenish_chunks_keep_tags_whole_and_join_back():
    text = "<think>\nLet's see.</think><|im_end|> done  ok"
    pieces = tokenish_chunks(text)
    assert "".join(pieces) == text
    assert "<think>" in pieces and "</think>" in pieces and "<|im_end|>" in pieces
    assert all(len(p) <= 6 for p in pieces if p.isalnum())
    for text in ["", "a", "  \n\t<|x|>é漢字 <<>>", "<" * 50]:
        assert "".join(tokenish_chunks(text)) == text


def test_replay_chunks_piece_sizes_seeded_and_varied():
    text = "plain text without markers, long enough to be cut many times over " * 3
    a = replay_chunks(text, (), seed=1, max_piece=3)
    assert a == replay_chunks(text, (), seed=1, max_piece=3)
    assert a != replay_chunks(text, (), seed=2, max_piece=3)
    assert "".join(a) == text and all(1 <= len(c) <= 3 for c in a)
    assert {len(c) for c in a} == {1, 2, 3}
    assert replay_chunks(text, (), seed=0, max_piece=1) == list(text)
    assert replay_chunks("", ("<x>",), seed=0) == []


def test_replay_chunks_prefers_longest_overlapping_token():
    chunks = replay_chunks("a<|tool_calls_section_begin|>b", ["<|tool_call", "<|tool_calls_section_begin|>"], seed=0, max_piece=1)
    assert chunks == ["a", "<|tool_calls_section_begin|>", "b"]


def test_replay_chunks_rejects_bad_piece_size():
    with pytest.raises(ValueError):
        replay_chunks("abc", (), 0, max_piece=0)


TOKENS = ["<think>", "</think>", "<|im_end|>", "<|tool_call_begin|>", "<|tool_call"]


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.one_of(st.sampled_from(TOKENS), st.text(alphabet="ab<|>/\n ", max_size=6)), max_size=12),
    seed=st.integers(0, 2**32 - 1),
    max_piece=st.integers(1, 5),
)
def test_replay_chunks_property(parts, seed, max_piece):
    text = "".join(parts)
    chunks = replay_chunks(text, TOKENS, seed, max_piece=max_piece)
    assert "".join(chunks) == text
    assert all(chunks)
    for c in chunks:
        if c not in TOKENS:
            assert len(c) <= max_piece
            # a special token is never inside (or split into) plain pieces
            assert not any(t in c for t in TOKENS)


# ------------------------------------------------------------------------------------------ feeding


def test_feed_all_gives_initial_fed_and_final_events_in_order():
    message, events = feed_all(parsing.ResponseParser(TEMPLATE, "A:<t>"), ["pl", "an</t>ans", "wer here<e>"])
    assert message == {"reasoning_content": "plan", "content": "answer here"}
    assert events[0] == {"type": "region_open", "field": "reasoning_content"}  # from the prefix
    assert events[-1]["type"] == "region_close" and events[-1]["field"] == "content"
    assert merged_events(events) == merged_events(feed_all(parsing.ResponseParser(TEMPLATE, "A:<t>"),
                                                                 ["plan</t>answer here<e>"])[1])


def test_feed_all_matches_the_reference_parser_interface():
    from transformers.utils.chat_parsing import ResponseParser as Reference

    ours = feed_all(parsing.ResponseParser(TEMPLATE, "A:"), fixed_chunks(OUTPUT, 3))
    theirs = feed_all(Reference(TEMPLATE, "A:"), fixed_chunks(OUTPUT, 3))
    assert ours[0] == theirs[0] and same_events(ours[1], theirs[1])


def test_parse_stream_captures_errors_as_data_and_keeps_events_before_them():
    ok = parse_stream(TEMPLATE, "A:", [OUTPUT])
    assert ok.ok and ok.result() == {"reasoning_content": "plan", "content": "answer here"}
    bad = parse_stream({"start_anchor": "A:", "fields": {"content": {"content": "json"}}}, "A:", ["{\"a\": ", "1"])
    assert not bad.ok and bad.error.startswith("ValueError: ") and bad.result() == {"error": bad.error}
    assert [e["type"] for e in bad.events] == ["region_open", "region_chunk", "region_chunk"]
    broken = parse_stream({"fields": {}}, "", ["x"])
    assert broken.error.startswith("TemplateError: ") and broken.parser is None and broken.events == []
    spanned = parse_stream(TEMPLATE, "A:", fixed_chunks(OUTPUT, 2), spans=True)
    assert all("start" in e for e in spanned.events) and spanned.parser.stream_text.endswith(OUTPUT)


# ------------------------------------------------------------------------------------------ comparing


def chunk(field, text, dirty=False, **extra):
    return {"type": "region_chunk", "field": field, "text": text, "dirty": dirty, **extra}


def test_merged_events_join_adjacent_chunks_and_drop_spans():
    events = [chunk("c", "a", start=0, end=1), chunk("c", "b", start=1, end=2),
              {"type": "region_close", "field": "c", "value": "ab", "start": 2, "end": 2}]
    assert merged_events(events) == [chunk("c", "ab"), {"type": "region_close", "field": "c", "value": "ab"}]


def test_merged_events_drop_bookkeeping_but_keep_every_event_key():
    events = [{"type": "region_error", "field": "t", "message": "bad", "raw": "x", "index": 3, "phase": "final"}]
    assert merged_events(events) == [{"type": "region_error", "field": "t", "message": "bad", "raw": "x"}]


def test_merged_events_keep_chunks_of_other_fields_or_other_dirty_apart():
    assert merged_events([chunk("a", "x"), chunk("b", "y")]) == [chunk("a", "x"), chunk("b", "y")]
    # A parser that flips ``dirty`` inside one region must not compare equal to a correct one.
    flipped = [chunk("a", "x", dirty=True), chunk("a", "y", dirty=False)]
    assert merged_events(flipped) == flipped
    assert not same_events(flipped, [chunk("a", "xy", dirty=True)])
    assert same_events([chunk("a", "x", dirty=True), chunk("a", "y", dirty=True)], [chunk("a", "xy", dirty=True)])


def test_merged_events_do_not_join_across_a_region_boundary():
    events = [chunk("c", "a"), {"type": "region_close", "field": "c", "value": "a"},
              {"type": "region_open", "field": "c"}, chunk("c", "b")]
    assert merged_events(events) == events


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="ab<>/te\n", max_size=40), seed=st.integers(0, 10**6))
def test_every_chunking_gives_the_same_merged_events(text, seed):
    output = OUTPUT[:-3] + text + "<e>"
    whole = parse_stream(TEMPLATE, "A:", [output])
    for chunks in (fixed_chunks(output, 1), random_cuts(output, random.Random(seed), empty_rate=0.1),
                   random_chunks(output, random.Random(seed)), tokenish_chunks(output)):
        cut = parse_stream(TEMPLATE, "A:", chunks)
        assert cut.result() == whole.result() and same_events(cut.events, whole.events)
