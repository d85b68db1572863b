"""A region whose value cannot be built is shown in the page's words: a JSON value nested deeper than the decoder's
stack says how deep it nests, not Python's "RecursionError: maximum recursion depth exceeded ..."; the parse result
(its region_error event) keeps the parser's message and exception type."""

import pytest

from examples import default_template
from parsing.streams import tokenish_chunks
from playground import handlers, views
from playground.session import Run, bracket_depth, parse_run, template_to_text
from playground.state import Session

TPL = template_to_text(default_template())
PREFIX = "<|im_start|>assistant\n"


@pytest.mark.parametrize("text, depth", [
    ("", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('{"a": "[[[[{{"}', 1), ('"\\"[[" [', 1),
    ("]]][", 1), ("[" * 3000 + "]" * 3000, 3000),
])
def test_bracket_depth_counts_nesting_outside_strings(text, depth):
    assert bracket_depth(text) == depth


def test_deeply_nested_tool_call_arguments_are_said_in_the_pages_words():
    out = '<tool_call>\n{"name": "f", "arguments": ' + "[" * 3000 + "]" * 3000 + "}\n</tool_call><|im_end|>"
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(out)), template_text=TPL, source="paste")
    view = parse_run(run)
    words = "tool_calls: the value is nested too deeply to decode (3,001 levels of brackets)"
    assert [e["message"] for e in view.errors] == [words]
    # the parse result keeps what the parser reported, exception type included
    (event,) = [ev for ev in view.events if ev.get("type") == "region_error"]
    assert event["message"].startswith("RecursionError:")
    # the page: the timeline's error line and the status line use the words, never Python's
    sess = Session(TPL)
    sess.finish_run(run, view, None)
    handlers._say_done(sess, view, "Parsed.")
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert words in drawn["timeline"] and "RecursionError" not in drawn["timeline"]
    assert "nested too deeply to decode (3,001 levels" in sess.notice.text
    assert "RecursionError" not in sess.notice.text
