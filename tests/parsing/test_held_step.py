"""`feed`'s held path runs `shape_step` itself when the held text becomes a whole literal at the unconsumed position
(most often a special token completed by the chunk), instead of a `_process` pass: every feed must give what that
pass gives. A parser with a time budget takes the `_process` pass there, so the two are compared feed by feed
(events and held bytes), and both against the reference's one-shot result, on texts cut so that a literal completes
at the held position with each outcome: its delimiter undecided (held again), a match there, a failure there with
a match, a cut-off literal or nothing after it."""

from __future__ import annotations

import sys

import pytest

import parsing.parser as parser_module
from differential import ref_expected, same_outcome, Outcome
from parsing import ResponseParser, load_template

TEMPLATES = {
    # A shape open (a run, then a lookahead) and a literal close list in which one literal extends another, in one
    # state; nothing kept before the buffer (held text starts at index 0).
    "literals_and_shape": {"start_anchor": "A:", "fields": {
        "call": {"open_pattern": r"<call>(?P<name>\w+)(?=\()", "close": "</call>",
                 "transform": {"name": "{name}", "args": "{content}"}},
        "content": {"close": ["<end>", "<end>!"]}}},
    # A ^-shape in the implicit state: index 0 decides every delimiter, not the literal's candidates alone.
    "start_shape": {"start_anchor": "A:", "fields": {
        "think": {"open_pattern": r"^\s*<think>", "close": "</think>"},
        "call": {"open_pattern": r"<call>(?=\{)", "close": "</call>", "content": "json"},
        "content": {"close": ["<end>"]}}},
    # A close split by a lookbehind (its variant depends on the text before it), and kept context (index > 0).
    "split_close": {"start_anchor": "A:", "fields": {
        "call": {"open_pattern": r"<call>(?P<name>[^\s<]+)(?=\s*<arg>)",
                 "close_pattern": r"(?<=</arg>\s*|<call>[^\s<]+\s*)</call>\s*|(?=<stop>)",
                 "transform": {"name": "{name}", "args": "{content}"}},
        "content": {"close": ["<stop>"]}}},
}

TEXTS = {
    "literals_and_shape": ["a <call>foo(1)</call> b <call>x <cal <end>!", "<call>(x) <call>f <end>z",
                           "x<call>ab(</call><end>", "<end>"],
    "start_shape": ["  <think>hm</think> <call>{\"a\": 1}</call> <call>x <end>", "<call>{} </call><call>",
                    "<think></think><end>"],
    "split_close": ["<call>get <arg>1</arg> </call> t <call>f</call> x </call> <stop>y",
                    "<call>g</call><call>h <arg></arg></call>z<stop>"],
}


def _chunkings(text: str):
    """Every cut of ``text`` into two or three chunks, and one character at a time."""
    n = len(text)
    yield list(text)
    for i in range(1, n):
        yield [text[:i], text[i:]]
        for j in range(i + 1, n):
            yield [text[:i], text[i:j], text[j:]]


def _run(parser: ResponseParser, chunks: list[str]):
    """Per feed: its events and the held bytes after it; then finalize's (or the error's type and text)."""
    steps = []
    try:
        for chunk in chunks:
            steps.append((parser.feed(chunk), parser.held()))
        steps.append(parser.finalize())
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
        steps.append((type(exc).__name__, str(exc)))
    return steps


@pytest.fixture
def outcomes(monkeypatch):
    """Counts what `feed`'s own `shape_step` calls answered: a hit, or a hold at the literal, later, or nowhere."""
    seen: dict = {}
    step = parser_module.shape_step

    def counted(watch, buf, at, *args):
        hit, hold = step(watch, buf, at, *args)
        if sys._getframe(1).f_code.co_name == "feed":
            kind = "hit" if hit is not None else "held" if hold == at else "end" if hold == len(buf) else "later"
            seen[kind] = seen.get(kind, 0) + 1
        return hit, hold

    monkeypatch.setattr(parser_module, "shape_step", counted)
    return seen


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_literal_completed_at_the_held_position_is_scanned_as_process_would(name, outcomes):
    for text in TEXTS[name]:
        _assert_feed_is_process_and_reference(TEMPLATES[name], text)
    assert outcomes, "no literal completed at the held position"


def _assert_feed_is_process_and_reference(spec: dict, text: str) -> None:
    """Every chunking of ``text`` gives, through `feed`'s own steps, what `_process` gives (a time budget sends
    `feed` there) and the reference's one-shot result."""
    template = load_template(spec)
    expected = ref_expected(spec, "", text)
    for chunks in _chunkings(text):
        direct = _run(ResponseParser(template, ""), chunks)
        general = _run(ResponseParser(template, "", time_budget=3600.0), chunks)
        assert direct == general, (text, chunks)
        if type(direct[-1][0]) is dict:
            events = [e for events, _ in direct[:-1] for e in events] + direct[-1][1]
            got = Outcome(message=direct[-1][0], events=events)
            assert same_outcome(expected, got), (text, chunks, expected.describe(), got.describe())
        else:
            assert expected.error is not None and type(expected.error).__name__ == direct[-1][0], (text, chunks)


def test_every_outcome_of_the_held_scan_is_reached(outcomes):
    """The texts above reach each answer of `feed`'s `shape_step` (else the comparison proves less than it says)."""
    for name, texts in TEXTS.items():
        template = load_template(TEMPLATES[name])
        for text in texts:
            for chunks in _chunkings(text):
                _run(ResponseParser(template, ""), chunks)
    assert set(outcomes) == {"hit", "held", "later", "end"}, outcomes


@pytest.fixture
def start_steps(monkeypatch):
    """Counts `feed`'s own `shape_step` calls from index 0 with no literal (a ^-shape may still match there)."""
    seen = {"calls": 0}
    step = parser_module.shape_step

    def counted(watch, buf, at, eos, clock, base, ctx, before="", window=None, literal=None):
        if sys._getframe(1).f_code.co_name == "feed" and literal is None:
            assert at == 0
            seen["calls"] += 1
        return step(watch, buf, at, eos, clock, base, ctx, before, window, literal)

    monkeypatch.setattr(parser_module, "shape_step", counted)
    return seen


@pytest.mark.parametrize("text", ["  <think>hm</think> x", "\n<thin", " <thinker> <think>a</think>",
                                  "<call>{} </call><think>", "a  <think>b</think>"])
def test_index_zero_under_a_start_shape_is_scanned_as_process_would(text, start_steps):
    """The first chunk at index 0 (and a held text there) in a state whose ^-delimiters are shapes: `feed` runs
    `shape_step` from index 0 itself; every chunking gives what `_process` gives (a time budget sends `feed` there)
    and the reference's one-shot result."""
    _assert_feed_is_process_and_reference(TEMPLATES["start_shape"], text)
    assert start_steps["calls"], "feed never scanned index 0 itself"


@pytest.mark.parametrize("text", ["a < b <= c </call> <call>x</call>", "1 <cal 2 <call>y</ca</call>", "<<<call><</call>"])
def test_a_chunk_with_a_trigger_but_no_delimiter_takes_the_fast_path(text, monkeypatch):
    """A chunk holding a first character of a watched literal but neither a whole literal nor one cut off by its
    end goes to the region as a chunk without one would (no `_process` pass), with the reference's result."""
    spec = TEMPLATES["literals_and_shape"]
    template = load_template(spec)
    expected = ref_expected(spec, "", text)
    passes = {"n": 0}
    process = parser_module.ResponseParser._process

    def counted(self, *args, **kwargs):
        passes["n"] += 1
        return process(self, *args, **kwargs)

    monkeypatch.setattr(parser_module.ResponseParser, "_process", counted)
    for chunks in _chunkings(text):
        direct = _run(ResponseParser(template, ""), chunks)
        if type(direct[-1][0]) is dict:
            events = [e for events, _ in direct[:-1] for e in events] + direct[-1][1]
            got = Outcome(message=direct[-1][0], events=events)
            assert same_outcome(expected, got), (text, chunks, expected.describe(), got.describe())
        else:
            assert expected.error is not None and type(expected.error).__name__ == direct[-1][0], (text, chunks)
    # A trigger without a delimiter after a literal was consumed: the parser stays on its fast path.
    parser = ResponseParser(template, "")
    parser.feed("x")
    before = passes["n"]
    assert parser.feed("a < b") == [{"type": "region_chunk", "field": "content", "text": "a < b", "dirty": False}]
    assert passes["n"] == before and parser._fast is not None
