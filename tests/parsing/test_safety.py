"""Bad templates and hostile patterns: clear errors, no hang."""

import json
import time

import pytest

from parsing import PatternTimeoutError, ResponseParser, TemplateError, load_template, parse_response
from parsing.template import MAX_PATTERN_CHARS, locate_json_path

EVIL = {"start_anchor": "X", "fields": {"x": {"open_pattern": r"(a|aa)+$", "close": "</x>"}, "content": {}}}


def test_catastrophic_pattern_times_out_with_a_clear_error():
    start = time.monotonic()
    with pytest.raises(PatternTimeoutError) as info:
        parse_response("a" * 40 + "c", EVIL, prefix="", regex_timeout=0.2)
    assert time.monotonic() - start < 5
    err = info.value
    assert err.field == "x" and err.role == "open" and err.pattern == r"(a|aa)+$"
    assert "field 'x'" in str(err) and "(a|aa)+$" in str(err)


def test_catastrophic_tag_pattern_times_out():
    template = {"start_anchor": "X", "fields": {"args": {
        "open": "<a>", "close": "</a>", "content": "xml-inline",
        "content_args": {"tag_pattern": r"(?P<key>(x|xx)+)$(?P<value>)"}}}}
    with pytest.raises(PatternTimeoutError) as info:
        parse_response("<a>" + "x" * 40 + "c</a>", template, prefix="", regex_timeout=0.2)
    assert info.value.role == "tag_pattern" and info.value.field == "args"


def test_oversized_templates_refused():
    with pytest.raises(TemplateError) as info:
        load_template({"start_anchor": "X", "fields": {"x": {"open_pattern": "a" * (MAX_PATTERN_CHARS + 1)}}})
    assert info.value.path == "fields.x.open_pattern"
    many = {"start_anchor": "X", "fields": {f"f{i}": {"open": f"<{i}>"} for i in range(300)}}
    with pytest.raises(TemplateError):
        load_template(many)


def test_bad_regex_reports_path_and_position():
    with pytest.raises(TemplateError) as info:
        load_template({"start_anchor": "X", "fields": {"tool_calls": {"open_pattern": "<tool(_call>"}}})
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == "fields.tool_calls.open_pattern"
    assert err.pattern_pos == len("<tool(_call>")


def test_json_text_errors_carry_line_and_column():
    text = '{\n  "start_anchor": "X",\n  "fields": {\n    "a": {"open": "<a>", "close": ["</a>", ""]}\n  }\n}'
    with pytest.raises(TemplateError) as info:
        load_template(text)
    err = info.value
    assert err.path == "fields.a.close[1]"
    assert (err.line, err.column) == (4, text.splitlines()[3].index('""') + 1)
    with pytest.raises(TemplateError) as info:
        load_template('{"start_anchor": "X",\n "fields": {,}}')
    assert info.value.line == 2


def test_locate_json_path_finds_keys_and_items():
    spec = {"start_anchor": "X", "fields": {"a": {"open": ["<a>", "<b>"]}, "b.c": {"close": "y"}}}
    text = json.dumps(spec, indent=2)
    line, col = locate_json_path(text, "fields.a.open[1]")
    assert text.splitlines()[line - 1][col - 1:].startswith('"<b>"')
    line, col = locate_json_path(text, "fields.a")
    assert text.splitlines()[line - 1][col - 1:].startswith('"a"')


def test_template_file_and_text_inputs(tmp_path):
    spec = {"start_anchor": "X", "fields": {"content": {}}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(spec))
    assert load_template(path).spec == spec
    assert load_template(str(path)).spec == spec
    assert load_template(json.dumps(spec)).spec == spec
    compiled = load_template(spec)
    assert load_template(compiled) is compiled


def test_prefix_none_and_finalize_twice():
    with pytest.raises(ValueError):
        ResponseParser({"start_anchor": "X", "fields": {"content": {}}})
    parser = ResponseParser({"start_anchor": "X", "fields": {"content": {}}}, "")
    parser.finalize()
    with pytest.raises(RuntimeError):
        parser.feed("x")
    with pytest.raises(RuntimeError):
        parser.finalize()


def test_deeply_nested_templates_get_a_template_error():
    with pytest.raises(TemplateError) as info:
        load_template("[" * 5000 + "]" * 5000)
    assert "nested too deeply" in str(info.value)
    transform: object = "{content}"
    for _ in range(5000):
        transform = [transform]
    with pytest.raises(TemplateError):
        load_template({"start_anchor": "X", "fields": {"x": {"open": "<x>", "transform": transform}}})
