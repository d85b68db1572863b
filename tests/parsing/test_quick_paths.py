"""The shortcuts a region close takes must give what the general code gives.

`parsing.content.quick_parser` stands in for `parse_content` (same value wherever it returns; a ValueError sends
the parser back to `parse_content`), and `parsing.tools.argument_types` decides which tool arguments can change
when cast, so `type_tool_calls` looks at no others.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsing.content import json_value, parse_content, quick_parser
from parsing.tools import argument_types, schema_types, type_tool_calls

BODIES = ["", "  plain text \n", '{"a": [1, 2.5, null, true]}', ' \n{"name": "f", "arguments": {}}\n ', "[1, 2",
          "{a: 1}", "not json", '"\\u00e9"', "12", "\x01x\x02"]

ARGS = [{}, {"strip": False}, {"strip": True}, {"allow_non_json": True}, {"allow_non_json": True, "strip": False},
        {"unquoted_keys": True}, {"string_delims": [["<<", ">>"]]}, {"string_delims": []}, {"string_delims": ""},
        {"string_delims": None}, {"string_delims": False}, {"string_delims": 0}, {"unquoted_keys": None}]


def _outcome(call):
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("name", ["text", "json", "int", "xml-inline", "kv-lines"])
@pytest.mark.parametrize("args", ARGS)
def test_quick_parser_agrees_with_parse_content(name, args):
    quick = quick_parser(name, args)
    if name not in ("text", "json"):
        assert quick is None
        return
    if name == "json" and (args.get("unquoted_keys") or args.get("string_delims", []) not in ([], "")):
        assert quick is None  # dialect rewrites run regexes (or a value parse_json cannot iterate): the full parser
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


def test_type_tool_calls_casts_castable_arguments_only():
    params = {"f": {"n": {"type": "integer"}, "s": {"type": "string"}, "xs": {"type": "number"}}, "g": {}}
    calls = [{"function": {"name": "f", "arguments": {"n": "3", "s": "4", "xs": ["1.5", "2", 7]}}},
             {"function": {"name": "g", "arguments": {"n": "3"}}},
             {"function": {"name": "h", "arguments": {"n": "3"}}}]
    expected = [{"function": {"name": "f", "arguments": {"n": 3, "s": "4", "xs": [1.5, 2, 7]}}},
                {"function": {"name": "g", "arguments": {"n": "3"}}},
                {"function": {"name": "h", "arguments": {"n": "3"}}}]
    assert type_tool_calls(copy.deepcopy(calls), params) == expected


def test_argument_types_are_read_at_every_close_as_the_reference_reads_them():
    """No argument types kept between two region closes of one parse: a schema the caller changes between two
    calls of the same tool types the second call by the new schema, as transformers does; and a schema of an
    argument the call does not have is never read (here one that recurses too deeply for `schema_types`)."""
    from transformers.utils.chat_parsing import ResponseParser as Reference

    from parsing import ResponseParser

    template = {"start_anchor": "S", "fields": {
        "tool_calls": {"open": "<c>", "close": "</c>", "content": "json", "repeats": True}, "content": {}}}
    deep: dict = {"type": "string"}
    for _ in range(5000):
        deep = {"anyOf": [deep]}

    def run(parser_class):
        properties = {"n": {"type": "integer"}, "unused": deep}
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": properties}}}]
        parser = parser_class(template, prefix="", tools=tools)
        parser.feed('<c>{"function": {"name": "f", "arguments": {"n": "1"}}}</c>')
        properties["n"]["type"] = "string"
        parser.feed('<c>{"function": {"name": "f", "arguments": {"n": "2"}}}</c>')
        properties["n"] = {"type": "number"}
        parser.feed('<c>{"function": {"name": "f", "arguments": {"n": "3.5"}}}</c>')
        return parser.finalize()[0]

    ours = run(ResponseParser)
    assert ours == run(Reference)
    assert [call["function"]["arguments"]["n"] for call in ours["tool_calls"]] == [1, "2", 3.5]


class _Schema(dict):
    """A dict subclass whose ``get`` answers differently from its items: the one-type shortcut of `argument_types`
    takes only exact dicts, so such a schema goes through `schema_types` as before."""

    def get(self, key, default=None):
        return "integer" if key == "type" else super().get(key, default)


class _Str(str):
    pass


def test_argument_types_one_type_shortcut_agrees_with_schema_types():
    properties = {
        "plain": {"type": "integer"},
        "text": {"type": "string"},
        "nullable_false": {"type": "integer", "nullable": False},
        "nullable": {"type": "string", "nullable": True},
        "any_of_none": {"type": "boolean", "anyOf": None},
        "one_of": {"type": "string", "oneOf": [{"type": "number"}]},
        "subclass": _Schema(type="string"),
        "str_subclass": {"type": _Str("integer")},
        "not_a_type": {"type": 3},
    }
    expected = {}
    for key, schema in properties.items():
        types = schema_types(schema)
        if set(types) & {"integer", "number", "boolean", "null", "object", "array"}:
            expected[key] = types
    assert argument_types(properties) == expected
    assert set(expected) == {"plain", "nullable_false", "nullable", "any_of_none", "one_of", "subclass",
                             "str_subclass"}


XML_PATTERNS = [
    r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>",
    r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
    r"<(?P<key>\w+)/>",  # no value group: the value is ""
    r"<(?P<key>\w+)>(?:(?P<value>\d+)|x)</(?P=key)>",  # a value group that may take no part: None
    r"(?:<(?P<key>\w+)>|<!>)(?P<value>[^<]*)",  # a key group that may take no part: an error
    r"<(?P<name>\w+)>(?P<value>[^<]*)",  # no key group: an error once something matches
    r"(?P<key>a)(?P<value>1)|(?P<key>b)(?P<value>2)",  # one name for two groups
]
XML_BODIES = ["", "nothing here", "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n",
              "<a>1</a><b>x</b><a>2</a>", "<a/><b/><a/>", "<!>loose<c>7", "a1b2a1", "<k>v"]


@pytest.mark.parametrize("pattern", XML_PATTERNS)
@pytest.mark.parametrize("merge", [False, True])
def test_xml_inline_agrees_with_the_reference_parser(pattern, merge):
    """`parse_xml_inline` reads its pattern's groups once per pattern (kept across calls and templates): every
    body, every pattern, called twice and in alternation, gives the reference's value or exception type."""
    from transformers.utils.chat_parsing.content_parsers import parse_content as reference

    args = {"tag_pattern": pattern, "merge_duplicates": merge}
    for _ in range(2):
        for body in XML_BODIES:
            ours = _outcome_any(lambda: parse_content(body, "xml-inline", args))
            theirs = _outcome_any(lambda: reference(body, "xml-inline", args))
            assert ours[0] == theirs[0], (pattern, body, ours, theirs)
            if ours[0] == "ok":
                assert ours[1] == theirs[1], (pattern, body)


@pytest.mark.parametrize("pattern", XML_PATTERNS + [r"(?P<key>\w+)=(?P<value>\w+)", "(", 5,
                                     "(?P<key>a{100000})(?P<value>b{100000})"])
@pytest.mark.parametrize("extra", [{}, {"merge_duplicates": True}, {"value_parser": {"name": "int"}},
                                   {"value_parser": {"name": "json"}, "merge_duplicates": 1}])
def test_xml_inline_reader_agrees_with_parse_content(pattern, extra):
    """`xml_inline_reader` (a field's xml-inline parser with its arguments read once) gives what `parse_content`
    gives, values and exceptions (type and text), or declines (None) and leaves the close to `parse_content`."""
    from parsing.budget import ParseContext
    from parsing.content import xml_inline_reader

    args = {"tag_pattern": pattern, **extra}
    reader = xml_inline_reader(args)
    if not isinstance(pattern, str):
        assert reader is None
        return
    assert reader is not None
    ctx = ParseContext(regex_timeout=1.0, field="tool_calls")
    for body in XML_BODIES + ["k=1 k=2 j=x", "<parameter=a>\n[1, 2]\n</parameter>"]:
        ours, theirs = _outcome_text(lambda: reader(body, ctx)), _outcome_text(
            lambda: parse_content(body, "xml-inline", args, ctx))
        assert ours == theirs, (pattern, body)


def test_xml_inline_reader_times_out_as_parse_content_does():
    from parsing.budget import ParseContext
    from parsing.content import xml_inline_reader
    from parsing.errors import PatternTimeoutError

    args = {"tag_pattern": r"(?P<key>(x|xx)+)$(?P<value>)"}
    ctx = ParseContext(regex_timeout=0.05, field="f")
    with pytest.raises(PatternTimeoutError) as ours:
        xml_inline_reader(args)("x" * 40 + "c", ctx)
    with pytest.raises(PatternTimeoutError) as theirs:
        parse_content("x" * 40 + "c", "xml-inline", args, ctx)
    assert str(ours.value) == str(theirs.value)


def _outcome_text(call):
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - compared by type and text
        return type(exc).__name__, str(exc)


def _outcome_any(call):
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - compared by type
        return type(exc).__name__, None


def test_xml_inline_refuses_a_huge_pattern_every_time_and_a_str_subclass_too():
    huge = "(?P<key>a{100000})(?P<value>b{100000})"
    for pattern in (huge, huge, _Str(huge)):
        with pytest.raises(ValueError, match="tag_pattern refused"):
            parse_content("ab", "xml-inline", {"tag_pattern": pattern})


JSON_TEXTS = ["", " ", "1", " 1 ", "1 2", "[1,", '{"a": 1}\n', '\ufeff{"a": 1}', '{"a": 1}\ufeff', "NaN", "-Infinity",
              "[1e400, -0.0, 12345678901234567890]", '"\\ud800"', "\t\r\n[]\t\r\n", "\x0c[]", "[] x", "nul", "true",
              '{"a": {"b": [1, {"c": null}]}}', '"abc', "[" * 100000 + "]" * 100000, "[" * 5 + "]" * 4,
              '{"a": 1, "a": 2}', "\u00a0[]", "[1,]", "{'a': 1}"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(JSON_TEXTS), st.text(alphabet=' \t\n\r{}[]":,.-+0123456789eEaflnrstu\\\ufeff',
                                                         max_size=24)))
def test_json_value_is_json_loads(text):
    """`json_value` (the region close's quick JSON parser) gives what ``json.loads`` gives, or fails where it fails:
    ValueError for ValueError, RecursionError for RecursionError."""
    def outcome(call):
        try:
            return "ok", call()
        except ValueError:
            return "ValueError", None
        except RecursionError:
            return "RecursionError", None

    ours, theirs = outcome(lambda: json_value(text)), outcome(lambda: json.loads(text))
    assert ours[0] == theirs[0], text
    if ours[0] == "ok":
        assert repr(ours[1]) == repr(theirs[1])  # repr: NaN != NaN, and -0.0 == 0.0


@pytest.mark.parametrize("delims", [None, False, 0, "", [], {}])
def test_json_string_delims_that_are_empty_or_not_iterable_as_the_reference(delims):
    """Only an empty ``string_delims`` may skip the dialect rewrites: null, false and 0 raise TypeError in the
    reference (it iterates them), one-shot and streamed alike."""
    from transformers.utils.chat_parsing import parse_response as reference

    from parsing import ResponseParser
    from parsing import parse_response as ours

    template = {"start_anchor": "S", "fields": {"content": {"content": "json", "content_args": {"string_delims": delims}}}}
    text = '{"a": [1, "x"]}'
    theirs = _outcome_any(lambda: reference(text, copy.deepcopy(template), prefix="S"))
    assert _outcome_any(lambda: ours(text, copy.deepcopy(template), prefix="S"))[0] == theirs[0]

    def streamed():
        parser = ResponseParser(copy.deepcopy(template), prefix="S")
        for i in range(0, len(text), 3):
            parser.feed(text[i:i + 3])
        return parser.finalize()[0]
    assert _outcome_any(streamed)[0] == theirs[0]
    if theirs[0] == "ok":
        assert ours(text, copy.deepcopy(template), prefix="S") == reference(text, copy.deepcopy(template), prefix="S")
    else:
        assert theirs[0] == "TypeError" and delims in (None, False, 0)


def test_arguments_cast_in_the_arguments_order_as_the_reference():
    """Two arguments whose casts both fail (JSON nested past the recursion limit): the reference casts in the order of
    the call's arguments, so the first of them in that order names the error, whatever the schema's order."""
    from transformers.utils.chat_parsing import parse_response as reference

    from parsing import parse_response as ours

    template = {"start_anchor": "S", "fields": {"tool_calls": {
        "content": "json", "transform": {"type": "function", "function": "{content}"}}}}
    deep_array, deep_object = "[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "object"}, "b": {"type": "array"}, "n": {"type": "integer"}}}}}]
    for arguments in ({"b": deep_array, "n": "1", "a": deep_object}, {"a": deep_object, "b": deep_array}):
        text = json.dumps({"name": "f", "arguments": arguments})
        outcomes = []
        for parse in (reference, ours):
            try:
                parse(text, copy.deepcopy(template), prefix="S", tools=copy.deepcopy(tools))
                outcomes.append(None)
            except RecursionError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] is not None and outcomes[0] == outcomes[1]
        first = next(iter(arguments))
        assert ("array" if first == "b" else "object") in outcomes[0]


def test_cast_argument_agrees_with_the_reference_coercion():
    """`cast_argument` (one function: the region close's casting) gives what transformers' ``_coerce`` gives, value
    and type, for every type list over texts that read as each type, as none, or as another."""
    import itertools

    from transformers.utils.chat_parsing.response_parser import _coerce

    from parsing.tools import cast_argument

    texts = ["7", " 7 ", "-3", "3.0", "3.5", "1e3", "1e400", "-1e400", "nan", "inf", "True", " false ", "1", "0",
             "yes", "null", "None", " null", "[1, 2]", '{"a": 1}', "[1,", '"s"', "\ufeff[1]", "[1] x", "", "07",
             "1_000", "٣", "0x10", "  [ ]  "]
    names = ["integer", "number", "boolean", "null", "object", "array", "string", "weird"]
    for n in (1, 2):
        for types in itertools.permutations(names, n):
            for text in texts:
                ours, theirs = cast_argument(text, types), _coerce(text, types)
                assert (type(ours), ours) == (type(theirs), theirs) or (ours != ours and theirs != theirs), \
                    (text, types)


@pytest.mark.parametrize("schema, argument", [
    ({"anyOf": 5}, 1), ({"anyOf": 5}, "1"), ({"type": "integer", "oneOf": 3}, 2.5), ({"anyOf": 5}, None),
    ({"anyOf": [{"type": "integer"}]}, ["1", 2]), ({"type": "integer"}, {"a": "1"}), ({"nullable": True}, True),
])
def test_every_present_arguments_schema_is_read_as_the_reference_reads_it(schema, argument):
    """The reference reads the schema of every argument the call has, whatever the argument's value: a schema it
    cannot read (``anyOf`` that is not a list) raises there for a number argument too, so it must here."""
    import json

    from transformers.utils.chat_parsing import parse_response as reference

    from parsing import parse_response

    template = {"start_anchor": "S", "fields": {
        "tool_calls": {"open": "<c>", "close": "</c>", "content": "json", "repeats": True}, "content": {}}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": schema}}}}]
    text = '<c>{"function": {"name": "f", "arguments": {"x": %s}}}</c>' % json.dumps(argument)

    def outcome(parse):
        try:
            return "ok", parse(text, template, prefix="", tools=tools)
        except Exception as exc:  # noqa: BLE001 - the exception type and text are compared
            return type(exc).__name__, str(exc)
    assert outcome(parse_response) == outcome(reference)


@pytest.mark.parametrize("content_args", [{}, {"strip": False}, {"strip": 0}, None])
@pytest.mark.parametrize("options", [{}, {"recover": True}, {"spans": True}])
def test_text_region_close_shortcut_agrees_with_the_reference(content_args, options):
    """A text field without a transform closes with its quick parser alone (`_Plan.text`): the same messages and
    events as the reference, stripped or not, joined or repeated, with tools offered or not."""
    from transformers.utils.chat_parsing import ResponseParser as Reference

    from parsing import ResponseParser

    fields = {"reasoning_content": {"open": "<think>", "close": "</think>"},
              "notes": {"open": "<n>", "close": "</n>", "repeats": True},
              "content": {"close": "<end>", "repeats": True, "join": ""}}
    for field in fields.values():
        if content_args is not None:
            field["content_args"] = content_args
    template = {"start_anchor": "S", "fields": fields}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"type": "integer"}}}}}]
    text = "<think> a b \n</think> hi <n> 1 </n><n>2</n> there <end> more "
    for offered in (None, tools):
        ours = ResponseParser(template, prefix="", tools=offered, **options)
        theirs = Reference(template, prefix="", tools=offered)
        our_events = [e for piece in (text[:9], text[9:30], text[30:]) for e in ours.feed(piece)]
        their_events = [e for piece in (text[:9], text[9:30], text[30:]) for e in theirs.feed(piece)]
        our_message, our_final = ours.finalize()
        their_message, their_final = theirs.finalize()
        assert our_message == their_message
        strip = lambda events: [{k: v for k, v in e.items() if k not in ("start", "end")} for e in events]  # noqa: E731
        assert strip(our_events + our_final) == their_events + their_final
