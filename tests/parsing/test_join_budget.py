"""A repeated field's ``join``: the same message as the reference, built in linear time, and bounded.

``join`` repeats its string between every two matches, so the joined string grows by the join's length per
match: built as ``previous + join + value`` on every match, a 60 KB join over 400 one-character regions copied
about 5 GB (a public server's 5 s request budget ran out), and 4,000 such regions make a 240 MB message from a
12 KB output. The pieces are now joined once, when the message is read, and their characters count against
``max_join_chars`` (`ValuesBudgetError`, the error the values limit raises).
"""

from __future__ import annotations

import copy

import pytest
from transformers.utils.chat_parsing import parse_response as reference_parse

from parsing import ResponseParser, ValuesBudgetError, parse_response
from parsing.parser import DEFAULT_MAX_JOIN_CHARS
from parsing.streams import fixed_chunks


def joined(join, **extra):
    return {"start_anchor": "S", "fields": {"content": {}, "t": {
        "open": "<t>", "close": "</t>", "repeats": True, "join": join, **extra}}}


JOINS = [
    (joined("\n"), "a<t>one</t> b <t>two</t><t></t><t>three</t>c"),
    (joined(", "), "<t> x </t>"),
    (joined(""), "<t>1</t><t>2</t><t>3</t>"),
    ({"start_anchor": "S", "fields": {"content": {}, "t": {"open_pattern": r"<t (?P<n>\w+)>", "close": "</t>",
                                                       "repeats": True, "join": " | ", "transform": "{n}"}}},
     "x<t a>1</t>y<t bc>2</t>"),
    (dict(joined("-"), defaults={"t": "start"}), "<t>a</t><t>b</t>"),
    (dict(joined("-"), defaults={"t": "start"}), "no region at all"),
]


@pytest.mark.parametrize("case", range(len(JOINS)))
def test_joins_give_the_reference_message_one_shot_and_streamed(case):
    template, text = JOINS[case]
    expected = reference_parse(text, copy.deepcopy(template), prefix="")
    assert parse_response(text, copy.deepcopy(template), prefix="") == expected
    for size in (1, 3):
        parser = ResponseParser(copy.deepcopy(template), "")
        for chunk in fixed_chunks(text, size):
            parser.feed(chunk)
        assert parser.finalize()[0] == expected


def test_the_message_so_far_holds_the_joined_string_while_streaming():
    template, text = JOINS[0]
    parser = ResponseParser(copy.deepcopy(template), "")
    parser.feed("a<t>one</t> b <t>two</t>")
    assert parser.message["t"] == "one\ntwo"
    parser.feed("<t>three</t>")
    assert parser.message["t"] == "one\ntwo\nthree"
    assert parser.finalize()[0] == reference_parse(
        "a<t>one</t> b <t>two</t><t>three</t>", copy.deepcopy(template), prefix="")


def test_a_join_that_would_amplify_a_small_output_stops_with_the_values_error():
    template = joined("x" * 60_000)
    text = "<t>a</t>" * 4_000  # 32 KB of output; joined, 240 MB
    with pytest.raises(ValuesBudgetError) as info:
        parse_response(text, template, prefix="")
    error = info.value
    assert (error.limit, error.field, error.kind) == (DEFAULT_MAX_JOIN_CHARS, "t", "join")
    assert "max_join_chars" in str(error) and "10,000,000 characters" in str(error)
    # the limit is an option; the count is the joined text's characters (values and joins between them)
    small = joined("--")
    assert parse_response("<t>ab</t>" * 3, small, prefix="", max_join_chars=10) == {"t": "ab--ab--ab"}
    with pytest.raises(ValuesBudgetError):
        parse_response("<t>ab</t>" * 3, small, prefix="", max_join_chars=9)
    # None: no limit (the reference's behaviour)
    many = "<t>ab</t>" * 2_000
    assert parse_response(many, joined("x" * 6_000), prefix="", max_join_chars=None) == reference_parse(
        many, joined("x" * 6_000), prefix="")


def test_with_recover_the_region_past_the_join_limit_and_later_ones_are_region_errors():
    template = joined("--")
    parser = ResponseParser(template, "", recover=True, max_join_chars=10)
    events = parser.feed("<t>ab</t>" * 5 + "rest")
    message, final = parser.finalize()
    errors = [e for e in events + final if e["type"] == "region_error"]
    assert len(errors) == 2 and all(e["message"].startswith("ValuesBudgetError:") for e in errors)
    assert all("max_join_chars" in e["message"] and e["raw"] == "ab" for e in errors)
    assert message == {"t": "ab--ab--ab", "content": "rest"}
