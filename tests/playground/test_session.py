"""The Run, live parsing with recovery, and the side-by-side check against transformers."""

import json

import pytest

import parsing
from parsing.streams import merged_events, tokenish_chunks
from playground.reference import reference_check
from playground.session import SKELETON_TEMPLATE, LiveParse, Run, parse_run, parse_tools, template_to_text

TPL = template_to_text(SKELETON_TEMPLATE)
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUT = 'Hmm.\n</think>\nSure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def test_tokenish_chunks_round_trip():
    for text in [OUT, "", "a", "  \n\t<|x|>é漢字 <<>>", "<" * 50]:
        assert "".join(tuple(tokenish_chunks(text))) == text


def test_parse_run_matches_reference_and_types_tool_args():
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL, tools=tuple(TOOLS))
    view = parse_run(run)
    assert view.message["reasoning_content"] == "Hmm."
    assert view.message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 3}
    assert view.prefix_length == len("<think>\n")
    assert view.chunk_starts[0] == view.prefix_length
    chk = reference_check(run, view)
    assert chk["agree"], chk


def test_chunking_never_changes_the_message():
    a = parse_run(Run(prefix=PREFIX, chunks=(OUT,), template_text=TPL))
    b = parse_run(Run(prefix=PREFIX, chunks=tuple(OUT), template_text=TPL))
    assert a.message == b.message
    assert merged_events(a.events) == merged_events(b.events)


def test_segments_tile_the_stream():
    view = parse_run(Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL))
    pos = 0
    for seg in view.segments:
        assert seg["start"] == pos
        pos = seg["end"]
    assert pos == len(view.text)


def test_reparse_with_another_template_uses_the_same_chunks():
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL)
    spec = json.loads(TPL)
    spec["fields"]["reasoning_content"] = {"open": "<think>", "close": "</thinking>"}
    view = parse_run(run, json.dumps(spec))
    assert "</think>" in view.message["reasoning_content"]
    assert not reference_check(run, view, json.dumps(spec))["differences"]


def test_broken_region_is_recovered_and_reported():
    bad = OUT.replace('{"name"', '{name')
    live = LiveParse(TPL, PREFIX)
    for c in tuple(tokenish_chunks(bad)):
        live.feed(c)
    live.finalize()
    view = live.view()
    assert view.errors and view.errors[0]["field"] == "tool_calls"
    assert view.message["content"] == "Sure."  # the rest still parsed
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(bad)), template_text=TPL)
    chk = reference_check(run, view)
    assert chk["ref_error"]  # the reference raises; we recovered: both report the error


def test_invalid_template_raises_template_error_with_location():
    with pytest.raises(parsing.TemplateError) as e:
        LiveParse('{"fields": {}, "start_anchor": "x"}', "")
    assert e.value.message
    with pytest.raises(parsing.TemplateError) as e:
        LiveParse('{\n "fields": \n}', "")
    assert e.value.line == 3


def test_parse_tools():
    assert parse_tools("") is None
    assert parse_tools(json.dumps(TOOLS)) == TOOLS
    with pytest.raises(ValueError, match="line 1"):
        parse_tools("[{")
    with pytest.raises(ValueError, match="list"):
        parse_tools('{"a": 1}')


def test_field_name_hints_point_at_the_usual_keys():
    from playground.session import field_name_hints

    spec = json.loads(TPL)
    assert field_name_hints(TPL) == []
    spec["fields"]["thinking"] = spec["fields"].pop("reasoning_content")
    assert field_name_hints(json.dumps(spec)) == ["field 'thinking': chat templates read 'reasoning_content'"]
    assert field_name_hints("{not json") == []
