"""Text streams as soon as no delimiter can start in it: a candidate whose pattern already fails is not held.

A fresh-user trial found gpt_oss reasoning held ~256 characters before anything streamed: the tool-call open
``<|channel|>(?:commentary|analysis) to=functions...`` has a candidate at ``<|channel|>analysis`` and waits for its
suffix ``<|message|>``, but the reasoning's own ``<|message|>`` rules the match out at once."""

import pytest

from examples import load_family
from parsing import ResponseParser, load_template
from parsing.streams import fixed_chunks

pytestmark = pytest.mark.unit


def test_gpt_oss_reasoning_streams_right_after_its_open():
    family = load_family("gpt_oss")
    parser = ResponseParser(load_template(family.template), prefix=family.prefixes["default"])
    words = "thinking hard. " * 3  # 45 characters
    streamed = []
    for chunk in fixed_chunks("<|channel|>analysis<|message|>" + words, 4):
        streamed += [e["text"] for e in parser.feed(chunk) if e["type"] == "region_chunk"]
    text = "".join(streamed)
    # Everything but what could still be the start of a delimiter ("<" never occurs in the words) has streamed.
    assert words.startswith(text) and len(text) >= len(words) - 4, text
