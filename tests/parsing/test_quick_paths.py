"""The shortcuts a region close takes must give what the general code gives.

`parsing.content.quick_parser` stands in for `parse_content` (same value wherever it returns; a ValueError sends
the parser back to `parse_content`), and `parsing.tools.argument_types` decides which tool arguments can change
when cast, so `type_tool_calls` looks at no others.
"""

from __future__ import annotations

import copy

import pytest

from parsing.content import parse_content, quick_parser
from parsing.tools import argument_types, schema_types, type_tool_calls

BODIES = ["", "  plain text \n", '{"a": [1, 2.5, null, true]}', ' \n{"name": "f", "arguments": {}}\n ', "[1, 2",
          "{a: 1}", "not json", '"\\u00e9"', "12", "\x01x\x02"]

ARGS = [{}, {"strip": False}, {"strip": True}, {"allow_non_json": True}, {"allow_non_json": True, "strip": False},
        {"unquoted_keys": True}, {"string_delims": [["<<", ">>"]]}, {"string_delims": []}]


def _outcome(call):
    try:
        return "ok", call()
    except ValueError as exc:
        return "ValueError", str(exc)


@pytest.mark.parametrize("name", ["text", "json", "int", "xml-inline", "kv-lines"])
@pytest.mark.parametrize("args", ARGS)
def test_quick_parser_agrees_with_parse_content(name, args):
    quick = quick_parser(name, args)
    if name not in ("text", "json"):
        assert quick is None
        return
    if name == "json" and (args.get("unquoted_keys") or args.get("string_delims")):
        assert quick is None  # dialect rewrites run regexes: the full parser
        return
    assert quick is not None
    for body in BODIES:
        full = _outcome(lambda: parse_content(body, name, args))
        fast = _outcome(lambda: quick(body))
        if fast[0] == "ok":
            assert fast == full, (name, args, body)
        else:
            assert name == "json"  # the parser falls back to parse_content, whose answer stands


def test_quick_parser_refuses_args_that_are_not_a_dict():
    assert quick_parser("text", ["strip"]) is None


def test_argument_types_keeps_only_castable_arguments_in_schema_order():
    properties = {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer"},
        "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "either": {"type": ["string", "number"]},
        "free": {},
        "odd": "not a schema",
    }
    assert argument_types(properties) == {
        "days": ("integer",),
        "when": ("string", "null"),
        "tags": ("array",),
        "either": ("string", "number"),
    }
    for key, types in argument_types(properties).items():
        assert types == schema_types(properties[key])


def test_type_tool_calls_with_a_kept_cache_casts_as_without():
    params = {"f": {"n": {"type": "integer"}, "s": {"type": "string"}, "xs": {"type": "number"}}, "g": {}}
    calls = [{"function": {"name": "f", "arguments": {"n": "3", "s": "4", "xs": ["1.5", "2", 7]}}},
             {"function": {"name": "g", "arguments": {"n": "3"}}},
             {"function": {"name": "h", "arguments": {"n": "3"}}}]
    expected = [{"function": {"name": "f", "arguments": {"n": 3, "s": "4", "xs": [1.5, 2, 7]}}},
                {"function": {"name": "g", "arguments": {"n": "3"}}},
                {"function": {"name": "h", "arguments": {"n": "3"}}}]
    assert type_tool_calls(copy.deepcopy(calls), params) == expected
    typed: dict = {}
    assert type_tool_calls(copy.deepcopy(calls), params, typed) == expected
    assert typed == {"f": {"n": ("integer",), "xs": ("number",)}, "g": {}, "h": {}}
    assert type_tool_calls(copy.deepcopy(calls), params, typed) == expected  # from the cache
