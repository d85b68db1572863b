"""The Run, live parsing with recovery, and the side-by-side check against transformers."""

import json

import pytest

from playground import engine
from playground.session import (
    SKELETON_TEMPLATE,
    LiveParse,
    Run,
    normalize_events,
    parse_run,
    parse_tools,
    reference_check,
    split_tokenish,
    template_to_text,
)

TPL = template_to_text(SKELETON_TEMPLATE)
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUT = 'Hmm.\n</think>\nSure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def test_split_tokenish_round_trips():
    for text in [OUT, "", "a", "  \n\t<|x|>é漢字 <<>>", "<" * 50]:
        assert "".join(split_tokenish(text)) == text


def test_parse_run_matches_reference_and_types_tool_args():
    run = Run(prefix=PREFIX, chunks=split_tokenish(OUT), template_text=TPL, tools=tuple(TOOLS))
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
    assert normalize_events(a.events) == normalize_events(b.events)


def test_segments_tile_the_stream():
    view = parse_run(Run(prefix=PREFIX, chunks=split_tokenish(OUT), template_text=TPL))
    pos = 0
    for seg in view.segments:
        assert seg["start"] == pos
        pos = seg["end"]
    assert pos == len(view.text)


def test_reparse_with_another_template_uses_the_same_chunks():
    run = Run(prefix=PREFIX, chunks=split_tokenish(OUT), template_text=TPL)
    spec = json.loads(TPL)
    spec["fields"]["reasoning_content"]["close"] = "</thinking>"
    view = parse_run(run, json.dumps(spec))
    assert "</think>" in view.message["reasoning_content"]
    assert not reference_check(run, view, json.dumps(spec))["differences"]


def test_broken_region_is_recovered_and_reported():
    bad = OUT.replace('{"name"', '{name')
    live = LiveParse(TPL, PREFIX)
    for c in split_tokenish(bad):
        live.feed(c)
    live.finalize()
    view = live.view()
    assert view.errors and view.errors[0]["field"] == "tool_calls"
    assert view.message["content"] == "Sure."  # the rest still parsed
    run = Run(prefix=PREFIX, chunks=split_tokenish(bad), template_text=TPL)
    chk = reference_check(run, view)
    assert chk["ref_error"]  # the reference raises; we recovered: both report the error


def test_a_disagreement_is_reported():
    run = Run(prefix=PREFIX, chunks=split_tokenish(OUT), template_text=TPL)
    view = parse_run(run)
    view.message = dict(view.message, content="tampered")
    chk = reference_check(run, view)
    assert not chk["agree"] and "message differs" in chk["differences"][0]


def test_invalid_template_raises_template_problem_with_location():
    with pytest.raises(engine.TemplateProblem) as e:
        LiveParse('{"fields": {}, "start_anchor": "x"}', "")
    assert e.value.message
    with pytest.raises(engine.TemplateProblem) as e:
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


def _catastrophic_run():
    spec = json.loads(TPL)
    spec["fields"]["reasoning_content"] = {"open": "<think>", "close_pattern": "(a|aa)+$"}
    out = "<think>\n" + "a" * 40 + "b</think>"
    return Run(prefix="<|im_start|>assistant\n", chunks=split_tokenish(out), template_text=json.dumps(spec))


def test_reference_check_skips_quickly_when_our_parse_timed_out():
    import time

    run = _catastrophic_run()
    view = parse_run(run)
    assert any(e.get("timeout") for e in view.errors)
    t0 = time.monotonic()
    chk = reference_check(run, view)
    assert time.monotonic() - t0 < 1.0
    assert chk["skipped"] and not chk["agree"] and not chk["differences"]


def test_reference_check_runs_transformers_under_a_time_budget():
    import time

    from playground.render import check_html
    from playground.session import ParseView

    run = _catastrophic_run()
    t0 = time.monotonic()
    chk = reference_check(run, ParseView(final=True))  # a view without our timeout: the reference runs
    took = time.monotonic() - t0
    assert took < engine.REFERENCE_BUDGET_S + 2, took
    assert chk["skipped"] == ("reference check skipped: the transformers parser exceeded the time budget "
                              f"({engine.REFERENCE_BUDGET_S:g}s) on this template")
    assert not chk["differences"] and chk["ref_error"] is None
    html_ = check_html(chk)
    assert "exceeded the time budget" in html_ and "Traceback" not in html_ and "differs" not in html_
