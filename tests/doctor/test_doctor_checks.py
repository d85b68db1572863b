"""Run checks on one recorded run: overwrites, regions open at the end, chunking dependence, errors."""

import parsing
from parsing import streams
from parsing.doctor.checks import run_checks

from doctor_templates import CHATML_PROMPT, CLEAN, GUIDE

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def by_code(report, code):
    return [f for f in report.findings if f.code == code]


def test_overwrite_shows_both_values():
    report = run_checks(GUIDE, CHATML_PROMPT, "Answer." + CALL + "\n")
    [f] = by_code(report, "overwrite")
    assert f.field == "content"
    assert f.details["previous"] == "Answer." and f.details["value"] == ""
    assert "dropped" in f.message
    # The spans point at the two regions in the parsed stream.
    assert f.details["previous_span"][0] < f.details["span"][0]
    assert "content" not in report.message


def test_overwrite_quiet_when_field_repeats():
    report = run_checks(CLEAN, CHATML_PROMPT, "Answer." + CALL + "\n")
    assert by_code(report, "overwrite") == []
    assert report.message["content"] == "Answer."


def test_open_at_end_for_truncated_explicit_region():
    report = run_checks(CLEAN, CHATML_PROMPT, "<think>Let me think about")
    [f] = by_code(report, "open-at-end")
    assert f.field == "reasoning_content" and f.severity == "warning"
    assert f.details["body"] == "Let me think about" and f.details["close"] == "</think>"


def test_open_at_end_for_region_opened_by_the_prefix():
    report = run_checks(CLEAN, CHATML_PROMPT + "<think>\n", "Still thinking")
    [f] = by_code(report, "open-at-end")
    assert f.field == "reasoning_content" and f.details["body"] == "\nStill thinking"


def test_open_at_end_info_for_implicit_field_without_its_stop_token():
    report = run_checks(CLEAN, CHATML_PROMPT, "Hello")
    [f] = by_code(report, "open-at-end")
    assert f.field == "content" and f.severity == "info"


def test_open_at_end_quiet_for_complete_output():
    report = run_checks(CLEAN, CHATML_PROMPT, "<think>x</think>Hello" + CALL + "<|im_end|>")
    assert report.ok, report.format()
    assert "No problems found" in report.format()


def test_open_at_end_quiet_for_zero_width_close_at_the_end():
    spec = {"start_anchor": "A", "fields": {"content": {}, "x": {"open": "<x>", "close_pattern": r"\Z"}}}
    report = run_checks(spec, "", "<x>abc")
    assert by_code(report, "open-at-end") == []


def test_region_error_and_parse_error_are_reported():
    report = run_checks(CLEAN, CHATML_PROMPT, '<tool_call>{"name": "f", "argu')
    [f] = by_code(report, "region-error")
    assert f.field == "tool_calls" and "JSON" in f.message
    spec = {"start_anchor": "A", "fields": {"content": {}, "x": {"open": "<x>", "close": "</x>", "optional": False}}}
    report = run_checks(spec, "", "no x here")
    [f] = by_code(report, "parse-error")
    assert "'x'" in f.details["error"] or "x" in f.details["error"]


class _ReferenceParser:
    """The transformers reference parser behind `parsing.streams`' constructor: it has the known chunking flaw."""

    def __new__(cls, template, prefix=None, *, tools=None, spans=False, recover=False, **kw):
        from transformers.utils.chat_parsing import ResponseParser

        parser = ResponseParser(template.spec if hasattr(template, "spec") else template, prefix, tools=tools)
        parser.stream_text, parser.delimiters = "", []
        return parser


WRAP = {"start_anchor": "A", "fields": {"content": {}, "x": {"open": "<x>", "close_pattern": r"</x>(?:\s*</wrap>)?"}}}


def test_chunking_dependence_is_reported_with_cuts_and_diff(monkeypatch):
    monkeypatch.setattr(streams, "ResponseParser", _ReferenceParser)
    report = run_checks(WRAP, "", ["<x>a</x>\n", "</wrap>tail"], chunkings_count=0)
    [f] = by_code(report, "chunking")
    assert f.details["cuts"] == [9] and f.details["what"] == "message"
    assert f.details["one_shot"]["content"] == "tail" and f.details["chunked"]["content"] == "</wrap>tail"
    assert f.details["diff"] == [{"path": "content", "kind": "changed", "expected": "tail",
                                  "actual": "</wrap>tail"}]
    assert "chunk boundaries: [9]" in report.format()


def test_chunking_quiet_with_our_parser():
    report = run_checks(WRAP, "", ["<x>a</x>\n", "</wrap>tail"], chunkings_count=5)
    assert by_code(report, "chunking") == [] and report.chunkings_tried == 6
