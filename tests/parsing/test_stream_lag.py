"""Text streams as soon as no delimiter can start in it: a candidate whose pattern already fails is not held.

A fresh-user trial found gpt_oss reasoning held ~256 characters before anything streamed: the tool-call open
``<|channel|>(?:commentary|analysis) to=functions...`` has a candidate at ``<|channel|>analysis`` and waits for its
suffix ``<|message|>``, but the reasoning's own ``<|message|>`` rules the match out at once."""

import pytest

from examples import load_family
from parsing import ResponseParser, load_template
from parsing.scanner import RECHECK_CHARS
from parsing.streams import fixed_chunks

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("size", [1, 4])
def test_gpt_oss_reasoning_streams_right_after_its_open(size):
    """In 4-character chunks the candidate is already ruled out when its hold would be set up; one character at a
    time it is still possible then, and the hold is asked again every `RECHECK_CHARS` characters."""
    family = load_family("gpt_oss")
    parser = ResponseParser(load_template(family.template), prefix=family.prefixes["default"])
    words = "thinking hard. " * 3  # 45 characters
    streamed = []
    for chunk in fixed_chunks("<|channel|>analysis<|message|>" + words, size):
        streamed += [e["text"] for e in parser.feed(chunk) if e["type"] == "region_chunk"]
    text = "".join(streamed)
    # The words have streamed, but for at most RECHECK_CHARS and a chunk held while the candidate was still asked.
    assert words.startswith(text) and len(text) >= len(words) - RECHECK_CHARS - size, text
