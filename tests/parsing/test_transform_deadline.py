"""A transform built thousands of times in one region close stops at the parse's deadline (trial 7, finding b).

``transform_each`` over a 48 KB JSON list of 6,000 objects with a transform of 5,000 placeholders builds 30 million
values inside one region close: 4.5 s and 260 MB in `parse_response`, where the deadline was checked only between
delimiters. Now each item is built under the deadline (`parsing.transform.transform_value`).
"""

from __future__ import annotations

import time

import pytest

import parsing
from parsing import BudgetExceededError
from parsing.budget import ParseContext
from parsing.template import load_template
from parsing.transform import transform_value

REPEATS = 5000
EACH = {"start_anchor": "S", "fields": {"content": {"content": "json", "transform_each": True,
                                                    "transform": {"a": ["{x}"] * REPEATS}}}}
ITEMS = "[" + ",".join(['{"x":1}'] * 6000) + "]"


def test_each_item_of_a_transform_each_is_built_under_the_deadline():
    field = load_template(EACH).fields["content"]
    items = [{"x": 1}, {"x": 2}]
    passed = ParseContext(deadline=time.monotonic() - 1.0, budget=2.0)
    with pytest.raises(BudgetExceededError) as e:
        transform_value(items, field, {}, passed)
    assert e.value.budget == 2.0
    # no deadline, or one not reached: the values the reference builds
    expected = [{"a": [1] * REPEATS}, {"a": [2] * REPEATS}]
    assert transform_value(items, field, {}) == expected
    assert transform_value(items, field, {}, ParseContext(deadline=time.monotonic() + 3600, budget=3600.0)) \
        == expected


def test_a_budgeted_parse_stops_inside_a_region_that_builds_millions_of_values():
    # 30 million values take seconds on any machine; the parse stops at its half-second budget instead of finishing
    with pytest.raises(BudgetExceededError) as e:
        parsing.parse_response(ITEMS, EACH, prefix="S", time_budget=0.5)
    assert e.value.budget == 0.5 and e.value.stage == "finalize"


def test_without_a_budget_the_values_are_the_references():
    from transformers.utils.chat_parsing import parse_response as reference_parse

    small = {"start_anchor": "S", "fields": {"content": {"content": "json", "transform_each": True,
                                                         "transform": {"a": ["{x}"] * 7, "k": {"v": "{x}"}}}}}
    text = "[" + ",".join(f'{{"x":{i}}}' for i in range(50)) + "]"
    assert parsing.parse_response(text, small, prefix="S") == reference_parse(text, small, prefix="S")


def test_a_values_limit_stops_the_build_before_it_starts_and_counts_the_whole_parse():
    from parsing import ValuesBudgetError

    with pytest.raises(ValuesBudgetError) as e:
        parsing.parse_response(ITEMS, EACH, prefix="S", max_values=1_000_000)
    assert e.value.limit == 1_000_000 and e.value.field == "content" and "1,000,000 values" in str(e.value)
    # the count is the parse's: values are containers and items built (here a dict, a list and its 2 items: 4 per region)
    many = {"start_anchor": "S", "fields": {"t": {"open": "<t>", "close": "</t>", "repeats": True,
                                                  "transform": {"k": ["{content}", "{content}"]}}, "content": {}}}
    text = "<t>a</t>" * 10 + "rest"
    expected = {"t": [{"k": ["a", "a"]}] * 10, "content": "rest"}
    assert parsing.parse_response(text, many, prefix="S", max_values=40) == expected
    with pytest.raises(ValuesBudgetError):
        parsing.parse_response(text, many, prefix="S", max_values=39)
    # with recover, the region that passes the limit and every later transformed one are region errors; the rest
    # of the message still parses
    parser = parsing.ResponseParser(many, "S", recover=True, max_values=30)
    events = parser.feed(text)
    message, final = parser.finalize()
    errors = [ev for ev in events + final if ev["type"] == "region_error"]
    assert len(errors) == 3 and all("max_values" in ev["message"] for ev in errors)
    assert message == {"t": [{"k": ["a", "a"]}] * 7, "content": "rest"}
    # a budgeted parse carries the count through its steps
    budgeted = parsing.ResponseParser(many, "S", time_budget=60.0, max_values=39)
    with pytest.raises(ValuesBudgetError):
        for chunk in text:
            budgeted.feed(chunk)
