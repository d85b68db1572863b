"""Escape-delimited-string lookbehinds (the gemma4 and functiongemma tool-call closes) read forwards without ``regex``
(`parsing.escape_strings`): recognised only in their exact form, holding exactly where ``regex`` holds (on the
text as it grows, reading on from earlier candidates), the parse equal to the transformers reference one-shot and
streamed, and each character of a long argument read a bounded number of times (counted, not timed)."""

from __future__ import annotations

import random

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import differential as d
from examples import load_family
from parsing import ResponseParser, budget, load_template, parse_response
from parsing import escape_strings as es
from parsing.prefilter import split_leading_lookbehinds
from parsing.streams import fixed_chunks

# family -> (the tool call's open literal, its close literal, the string marker)
LIBRARY = {"functiongemma": ("<start_function_call>", "<end_function_call>", "<escape>"),
           "gemma4": ("<|tool_call>", "<tool_call|>", '<|"|>')}
# family -> what ends the turn, and what a tool response starts with (both also end a call)
ENDS = {"functiongemma": ("<end_of_turn>", "<start_function_response>"), "gemma4": ("<turn|>", "<|tool_response>")}


def _behind(family_name: str) -> str:
    """The lookbehind body of the family's tool-call close pattern."""
    close = load_family(family_name).template["fields"]["tool_calls"]["close_pattern"]
    behinds, _ = split_leading_lookbehinds(close)
    assert len(behinds) == 1
    return behinds[0]


# Lookbehinds with a reading: the library's two, a marker that overlaps itself ("xx") and a name class of one letter.
READ = [_behind("functiongemma"), _behind("gemma4"),
        r"a[b]+(?:[^x]|x(?!x)|xx(?:(?!xx).)*xx)*",
        r"<c>[\w]+(?:[^<]|<(?!<e)|<<e(?:(?!<<e).)*<<e)*"]


@pytest.mark.parametrize("behind, literal, marker", [
    (READ[0], "<start_function_call>call:", "<escape>"),
    (READ[1], "<|tool_call>call:", '<|"|>'),
    (READ[2], "a", "xx"),
    (READ[3], "<c>", "<<e"),
    (r"<a>[\w]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<f>)*", None, None),  # the string closes with another marker
    (r"<a>[\w]+(?:[^<]|>(?!e>)|>e>(?:(?!>e>).)*>e>)*", None, None),  # the set is not the marker's first character
    (r"<a>[\w]+(?:[^<]|<(?!f>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # the lookahead is not the marker's rest
    (r"<a>[\w<]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # the name class takes the marker's "<"
    (r"<a>[\w]*(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # the name may be empty
    (r"<a>[[\w]]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # a nested set
    (r"<a>[\w]+(?:[^\s]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # a class escape in the set
    (r"<a>[\w]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*?<e>)*", None, None),  # a lazy string
    (r"^\s*[\w]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # anchored: the regex reads it
    (r"(?i)<a>[\w]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),
    (r"<a\b>[\w]+(?:[^<]|<(?!e>)|<e>(?:(?!<e>).)*<e>)*", None, None),  # an assertion in the literal
])
def test_only_the_exact_form_is_read(behind, literal, marker):
    quick = es.escape_strings(behind)
    if literal is None:
        assert quick is None
    else:
        assert (quick.literal, quick.marker) == (literal, marker)


def test_the_library_closes_are_split_with_a_reading():
    for family_name in LIBRARY:
        close = load_template(load_family(family_name).template).fields["tool_calls"].close
        (guard,) = close.split[0]
        assert type(guard[4]) is es.EscapeStrings


def _pieces(quick: es.EscapeStrings) -> list[str]:
    literal, marker = quick.literal, quick.marker
    return [literal, literal + "b", literal[:-1], marker, marker, marker[:2], marker[1:], marker[0], "<", "x", "f",
            "b", ".", "-", "_", ":", " ", "\n", "{", "}", "é", "ß", "٣", "\u0301", "😀", "xxx", "<end>"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(READ) - 1), opened=st.booleans(), parts=st.lists(st.integers(0, 26), max_size=18),
       more=st.integers(0, 24), seed=st.integers(0, 10 ** 6))
def test_reading_holds_where_regex_holds(which, opened, parts, more, seed):
    """On text that grows (a buffer fed in pieces) the reading holds at each position exactly when ``regex``'s
    lookbehind does on the same text (its lookaheads read past the position: a marker cut off by the buffer edge
    is not one yet, a whole one is one even where the position is inside it); reading from nothing, and reading on
    from earlier candidates with the consumed text gone (a stream offset base)."""
    behind = READ[which]
    quick = es.escape_strings(behind)
    engine = regex.compile(f"(?<={behind})", regex.DOTALL)
    pieces = _pieces(quick)
    rng = random.Random(seed)
    text = ((quick.literal + "b" if opened else "") + "".join(pieces[p] for p in parts)
            + "".join(rng.choice(pieces) for _ in range(more)))
    lo = rng.randint(0, len(text)) if rng.random() < 0.5 else 0
    memo: dict = {}
    end = lo
    while end < len(text):
        end = rng.randint(end + 1, len(text))
        buf = text[:end]
        expected = [engine.match(buf[lo:], at - lo) is not None for at in range(lo, end + 1)]
        assert [quick.holds(buf, lo, at, 0, {}, "k") for at in range(lo, end + 1)] == expected, (behind, buf, lo)
        for _ in range(rng.randint(0, 3)):
            at = rng.choice([end, end - 1, rng.randint(lo, end)])  # often at the edge, as a cut-off close is
            if at < lo:
                continue
            cut = rng.randint(0, lo)
            assert quick.holds(buf[cut:], lo - cut, at - cut, cut, memo, "k") is expected[at - lo], (behind, buf, lo, at)


def _call(rng: random.Random, family_name: str, well_formed: bool) -> str:
    """A tool call in the family's syntax: well-formed arguments whose strings hold the close, ``<`` not followed
    by the marker, cut-off markers and non-ASCII text, and a close or turn end after it; else any mix of those
    pieces (markers left open, odd counts) and any end. Names with dots, dashes (and colons for gemma4) and
    non-ASCII letters."""
    open_, close, marker = LIBRARY[family_name]
    name = rng.choice(["get_weather", "a.b-c", "wéather", "ß", "x:y", "f", "٣"])
    inner = ["text é", close, "<", "<b>", marker[:3], marker[1:], "\n", open_, "{", "}", ":", "😀"]
    if well_formed:
        safe = [piece for piece in inner if piece != "<"]  # ("<" then the marker's rest would close the string)
        strings = ["".join(rng.choice(safe) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 3))]
        body = ",".join(f"k{i}:{marker}{text}{marker}" for i, text in enumerate(strings))
    else:
        body = "".join(rng.choice([f"k{rng.randint(0, 9)}:", marker, marker, ",", "[1, 2]", *inner])
                       for _ in range(rng.randint(0, 6)))
    tails = [close, close + "\n", *ENDS[family_name], f"{close}{open_}call:g{{}}{close}"]
    tail = rng.choice(tails if well_formed else ["", "\n", *tails])
    return f"{open_}call:{name}{{{body}}}{tail}"


@pytest.mark.slow
@pytest.mark.parametrize("family_name", sorted(LIBRARY))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6))
def test_library_template_parses_as_the_reference(family_name, seed):
    """Outputs of text and tool calls whose strings hold the close, odd numbers of markers and the like, parsed with
    the family's library template: the message and events equal the installed reference's, one-shot and in
    chunk splits."""
    family = load_family(family_name)
    rng = random.Random(seed)
    well_formed = rng.random() < 0.6
    output = rng.choice(["", "Let me check. "]) + "".join(_call(rng, family_name, well_formed)
                                                         for _ in range(rng.randint(1, 3)))
    runner = d.CaseRunner(f"escape-{seed}", family.template, family.transcripts[0].prefix, output)
    report = runner.run_all(d.chunkings(output, f"escape-{seed}", n_random=2)[:5]
                            + d.chunkings(output, f"escape-{seed}", n_random=2)[-2:])
    assert not report.mismatches, d.format_report(report)


@pytest.mark.parametrize("family_name", sorted(LIBRARY))
def test_a_long_argument_that_mentions_the_close_is_read_once(monkeypatch, family_name):
    """A 25 KB string argument that mentions the tool-call close 500 times: each mention is a candidate whose
    lookbehind must be decided (inside the string it fails from the call's open, and is then decided on the whole
    stream). ``regex`` re-read the call backwards at each one (the streamed parse ran out of its 1 s regex budget);
    the reading goes on from the last candidate instead: no lookbehind runs through ``regex``, the characters read
    stay linear in the stream, and the message is the one-shot one with the argument intact."""
    open_, close, marker = LIBRARY[family_name]
    family = load_family(family_name)
    template = load_template(family.template)
    prefix = family.transcripts[0].prefix
    code = f"x = 10  # the tag {close} ends one tool call\n" * 500
    output = f"{open_}call:run{{code:{marker}{code}{marker}}}{close}"
    read, runs = [0], [0]
    advance, run = es.EscapeStrings._advance, budget.SearchClock.run

    def counting_advance(self, buf, start, stop, readings):
        read[0] += max(0, stop - start) * bin(readings).count("1")  # (each reading reads on from start to stop)
        return advance(self, buf, start, stop, readings)

    def counting_run(self, delim, method, text, pos, ctx, pattern=None, partial=False):
        runs[0] += pattern is not None and pattern.pattern.startswith("(?<=")
        return run(self, delim, method, text, pos, ctx, pattern, partial)

    monkeypatch.setattr(es.EscapeStrings, "_advance", counting_advance)
    monkeypatch.setattr(budget.SearchClock, "run", counting_run)
    parser = ResponseParser(template, prefix=prefix)
    for chunk in fixed_chunks(output, 4):
        parser.feed(chunk)
    message = parser.finalize()[0]
    assert message["tool_calls"][0]["function"] == {"name": "run", "arguments": {"code": code}}
    assert runs[0] == 0
    assert 0 < read[0] < 3 * len(output), f"read {read[0]:,} characters for a {len(output):,}-character stream"
    monkeypatch.undo()
    assert message == parse_response(output, template, prefix=prefix)


@pytest.mark.parametrize("family_name", sorted(LIBRARY))
def test_close_mentions_inside_strings_parse_as_the_reference(family_name):
    """The same kind of argument, shorter (the reference re-reads it backwards at every mention): ours equals the
    reference one-shot and in 4- and 7-character chunks."""
    open_, close, marker = LIBRARY[family_name]
    family = load_family(family_name)
    code = f"say {close} and {marker[:3]} then <b>\n" * 12
    output = f"{open_}call:run{{code:{marker}{code}{marker},n:1}}{close}Done."
    runner = d.CaseRunner(f"long-{family_name}", family.template, family.transcripts[0].prefix, output)
    report = runner.run_all([("size4", fixed_chunks(output, 4)), ("size7", fixed_chunks(output, 7))])
    assert not report.mismatches, d.format_report(report)
    assert runner.ref_oneshot.message["tool_calls"][0]["function"]["arguments"]["code"] == code
