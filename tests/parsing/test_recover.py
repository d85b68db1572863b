"""Recovery mode: a region that cannot be parsed is reported and skipped; default mode raises."""

import pytest

from parsing import ResponseParser, parse_response

TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": {"name": "{content.name}",
                                                                       "arguments": "{content.arguments}"}}},
        "count": {"open": "<n>", "close": "</n>", "content": "int"},
        "content": {},
    },
}
OUTPUT = ('<think>ok</think><tool_call>{"name": "a", "arguments": {}}</tool_call>'
          '<tool_call>{"name": "b", "arguments": {broken</tool_call>'
          '<tool_call>{"nome": "c"}</tool_call><n>seven</n>'
          '<tool_call>{"name": "d", "arguments": {"x": 1}}</tool_call>Bye')


def test_default_mode_raises_like_the_reference():
    with pytest.raises(ValueError):
        parse_response(OUTPUT, TEMPLATE, prefix="")


@pytest.mark.parametrize("size", [1, 3, 8, 1000])
def test_recover_reports_and_continues(size):
    parser = ResponseParser(TEMPLATE, "", recover=True)
    events = [e for i in range(0, len(OUTPUT), size) for e in parser.feed(OUTPUT[i:i + size])]
    message, final = parser.finalize()
    events += final
    errors = [e for e in events if e["type"] == "region_error"]
    assert [(e["field"], e["raw"]) for e in errors] == [
        ("tool_calls", '{"name": "b", "arguments": {broken'),
        ("tool_calls", '{"nome": "c"}'),
        ("count", "seven"),
    ]
    assert errors[0]["message"].startswith("ValueError")
    assert message == {
        "reasoning_content": "ok",
        "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {}}},
                       {"type": "function", "function": {"name": "d", "arguments": {"x": 1}}}],
        "content": "Bye",
    }
    # A failed region closes: its open has no region_close but a region_error instead.
    opened = sum(e["type"] == "region_open" for e in events)
    ended = sum(e["type"] in ("region_close", "region_error") for e in events)
    assert opened == ended


def test_recover_on_missing_transform_variable():
    template = {"start_anchor": "X", "fields": {"x": {"open": "<x>", "close": "</x>",
                                                      "transform": {"v": "{nothing}"}}, "content": {}}}
    parser = ResponseParser(template, "", recover=True)
    events = parser.feed("<x>1</x>rest")
    message, final = parser.finalize()
    assert [e["type"] for e in events + final if e["type"] == "region_error"] == ["region_error"]
    assert message == {"content": "rest"}
    with pytest.raises(KeyError):
        parse_response("<x>1</x>rest", template, prefix="")
