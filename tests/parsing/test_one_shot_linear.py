"""A one-shot parse reads its text a bounded number of times per delimiter, however many commits it makes.

A hostile-visitor trial (trial 14 P1) found `parse_response` quadratic with many delimiters: 50 fields guarded by
lookbehinds, 64 KB of output, 12.8 s one-shot (transformers' reference: 7 s) where our streamed parse of the same
text took 0.27 s. Every commit scanned again from its end, and each delimiter's literal search ran to the end of
the buffer when its literal did not occur. The searches now reuse their last answer (`ScanState.candidates`):
counted here, not timed."""

import pytest

from parsing import parse_response
from parsing.prefilter import Prefilter
from parsing.streams import fixed_chunks
from tests.parsing.differential import ref

pytestmark = pytest.mark.unit

FIELDS = 30
TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        **{f"f{i}": {"open_pattern": f"(?<=\\n|o )<f{i}>", "close_pattern": f"(?<=<f{i}>[^<]*)</f{i}>"}
           for i in range(FIELDS)},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}
PREFIX = "<|im_start|>assistant\n"


def _output(repeats: int) -> str:
    return "hello <f3>x</f3> world <g1x2>y</g1x3> " * repeats + "<|im_end|>"


def _read_by_searches(monkeypatch, output: str) -> tuple[dict, int]:
    """The message of a one-shot parse, and how many characters the prefilters' searches read (up to the candidate
    each found, else to the end of the text)."""
    read = [0]
    candidate = Prefilter.candidate

    def counting(self, text, pos, past_start=False):
        found = candidate(self, text, pos, past_start)
        read[0] += (len(text) if found == -1 else found) - pos
        return found

    monkeypatch.setattr(Prefilter, "candidate", counting)
    try:
        message = parse_response(output, TEMPLATE, prefix=PREFIX)
    finally:
        monkeypatch.setattr(Prefilter, "candidate", candidate)
    return message, read[0]


def test_one_shot_searches_stay_linear_in_the_text(monkeypatch):
    small, large = _output(100), _output(200)
    message, read_small = _read_by_searches(monkeypatch, small)
    assert message == ref.parse_response(small, TEMPLATE, prefix=PREFIX)
    assert message["f3"] == "x" and message["content"].count("world") == 100
    message, read_large = _read_by_searches(monkeypatch, large)
    assert message == ref.parse_response(large, TEMPLATE, prefix=PREFIX)
    # Twice the text (and twice the commits): about twice the reading. Re-searching to the end of the buffer at
    # every commit made it about four times.
    assert read_large < 2.5 * read_small, (read_small, read_large)


@pytest.mark.parametrize("size", [1, 3, 7])
def test_the_reused_searches_give_the_streamed_message(size):
    """Streamed, the buffer grows between scans: a reused answer must hold for the text added since (a literal
    cut off by the buffer's end, then completed by the next chunk)."""
    from parsing import ResponseParser

    output = _output(12)
    parser = ResponseParser(TEMPLATE, prefix=PREFIX)
    for chunk in fixed_chunks(output, size):
        parser.feed(chunk)
    assert parser.finalize()[0] == ref.parse_response(output, TEMPLATE, prefix=PREFIX)
