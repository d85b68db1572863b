"""A parser that starts from the state another parser of the same template reached on the same prompt prefix
(`ResponseParser._read_prefix` keeps it on the template) gives exactly what a parser that reads the prefix itself
gives: message, initial events, events, and the state cached must not be shared mutably between parsers."""

from __future__ import annotations

import pytest

from examples import list_families, load_family
from parsing import ResponseParser, load_template
from parsing.parser import _Plan
from parsing.streams import fixed_chunks, parse_stream


def run(template, transcript, chunk):
    parser = ResponseParser(template, transcript.prefix, tools=transcript.tools or None)
    initial = [dict(e) for e in parser.initial_events]
    events = []
    try:
        for piece in fixed_chunks(transcript.output, chunk):
            events.extend(parser.feed(piece))
        message, final = parser.finalize()
        return initial, events + final, message
    except (ValueError, KeyError) as exc:
        return initial, events, f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("name", list_families())
def test_reused_prefix_state_gives_the_same_parse(name):
    family = load_family(name)
    cold_runs = []
    for transcript in family.transcripts:
        for chunk in (1, 4, 9):
            # A template of its own per run: nothing cached.
            cold_runs.append(run(load_template(family.template), transcript, chunk))
    shared = load_template(family.template)
    warm_runs = [run(shared, t, chunk) for t in family.transcripts for chunk in (1, 4, 9)]
    assert warm_runs == cold_runs
    kept = {shared.truncate_prefix(t.prefix)[1] for t in family.transcripts} - {""}
    states = _Plan.of(shared).prefix_states
    assert all(key[0] in kept for key in states)


SPEC = {"start_anchor": "<s>", "fields": {
    "reasoning_content": {"open": "<think>", "close": "</think>"},
    "content": {"close": "<eos>"}}}


def cold(prefix, *chunks):
    return parse_stream(load_template(SPEC), prefix, list(chunks)).message


def test_state_is_reused_and_not_shared():
    template = load_template(SPEC)
    first = ResponseParser(template, "sys<s><think>\nhmm")
    assert _Plan.of(template).prefix_states  # reading "<think>\nhmm" committed no region
    first.initial_events[0]["field"] = "changed"
    first.feed(" more")
    second = ResponseParser(template, "other<s><think>\nhmm")
    assert second.initial_events == [{"type": "region_open", "field": "reasoning_content"},
                                      {"type": "region_chunk", "field": "reasoning_content", "text": "\nhmm",
                                       "dirty": False}]
    second.feed("!</think>ok<eos>")
    assert second.finalize()[0] == cold("<s><think>\nhmm", "!</think>ok<eos>") == {"reasoning_content": "hmm!",
                                                                                   "content": "ok"}
    assert first.finalize()[0] == cold("<s><think>\nhmm", " more") == {"reasoning_content": "hmm more"}


def test_a_prefix_that_closes_a_region_is_read_every_time():
    template = load_template({"start_anchor": "<s>", "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<eos>"}}})
    out = parse_stream(template, "<s><think>a</think>", ["b<eos>"])
    assert out.message == {"reasoning_content": "a", "content": "b"}
    assert not _Plan.of(template).prefix_states
    again = parse_stream(template, "<s><think>a</think>", ["c<eos>"])
    assert again.message == {"reasoning_content": "a", "content": "c"}


@pytest.mark.parametrize("spans", [False, True])
def test_a_prefix_that_ends_with_the_anchor_keeps_nothing(spans):
    """A prompt that ends with a start-anchor literal (the usual generation prompt) is cut at its very end without a
    search (`CompiledTemplate.anchor_end`): nothing is kept or read, as when the last match is found by searching,
    including with two anchors one of which occurs only earlier. Messages and initial events are the reference's; the
    span attributes of a parser without spans keep their documented empty values."""
    from transformers.utils.chat_parsing import ResponseParser as Reference

    spec = {"start_anchor": ["<|im_start|>assistant\n", "<tool_response>"],
            "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}}}
    template = load_template(spec)
    head = "<|im_start|>user\nhi<think>x</think><tool_response>r"
    for prefix, kept in ((head + "<|im_start|>assistant\n", ""), (head + "</tool_response><tool_response>", ""),
                         (head + "<|im_start|>assistant\n<think>", "<think>"), ("no anchor <think>", None)):
        cut = len(prefix) - len(kept) if kept is not None else None
        assert template.anchor_end(prefix) == cut
        assert template.truncate_prefix(prefix) == ((prefix[:cut], kept) if kept is not None else ("", prefix))
        parser = ResponseParser(template, prefix, spans=spans)
        reference = Reference(spec, prefix)
        assert [{k: v for k, v in e.items() if k not in ("start", "end")} for e in parser.initial_events] \
            == reference.initial_events
        if spans:
            assert parser.dropped_prefix == (prefix[:cut] if kept is not None else "")
            assert parser.stream_text == (prefix if kept is None else kept)
        else:
            assert (parser.dropped_prefix, parser.delimiters, parser.stream_text, parser.segments()) == ("", [], "", [])
        parser.feed("a</think>b")
        reference.feed("a</think>b")
        assert parser.finalize()[0] == reference.finalize()[0]
