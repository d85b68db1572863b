"""The scanner's shortcuts (prefilters, holding a cut-off or suffix-less candidate without its regex, matches
that wait for the end of the stream, the per-state search of all literals, lookbehinds evaluated once per
position, patterns decided by string operations) change no result: under any chunking, a template parsed with them gives the message and (merged)
events of the same template parsed one-shot with every shortcut switched off. Templates mix library-style
patterns with random ones."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examples import list_families, load_family
from parsing import ResponseParser, load_template, parse_response
from parsing.streams import fixed_chunks, merged_events, parse_stream, random_chunks
from parsing.template import CompiledTemplate, _pattern_shape

from test_prefilter import TEXTS, _compiled, _pattern


def without_shortcuts(template: CompiledTemplate) -> CompiledTemplate:
    """The same template with no prefilter, suffix, stability or shape facts: every regex runs on every scan."""

    def plain(delim):
        if delim is None or delim.literals is not None:
            return delim  # literal delimiters keep their (exact) prefilter: it is how they are searched
        return dataclasses.replace(delim, prefilter=None, suffixes=None, stable=False, split=None,
                                   branches=None, shape=None, split_shapes=None)

    fields = {name: dataclasses.replace(f, open=plain(f.open), close=plain(f.close))
              for name, f in template.fields.items()}
    return dataclasses.replace(template, fields=fields, derived={})


def outcome(template, prefix, chunks, tools=None):
    out = parse_stream(template, prefix, chunks, tools=tools)
    return out.result(), merged_events(out.events)


def assert_same(template_dict, prefix, text, seed, tools=None):
    """One shot, the template with shortcuts gives what it gives without. Streamed, in any chunking, it gives what
    the template without shortcuts gives in that chunking, or else the one-shot result: where `regex`'s partial
    matching misses a match cut by the buffer edge (``a\\Ba`` seeing ``a``: neither match nor partial match),
    holding the literal ``aa`` cut off there gives the one-shot result that the plain scan misses."""
    fast = load_template(template_dict)
    slow = without_shortcuts(fast)
    rng = random.Random(seed)
    one_shot = outcome(slow, prefix, [text], tools)
    assert agrees(outcome(fast, prefix, [text], tools), one_shot), template_dict
    for chunks in ([c for c in text], random_chunks(text, rng, 5), random_chunks(text, rng, 3)):
        got = outcome(fast, prefix, chunks, tools)
        assert agrees(got, one_shot) or agrees(got, outcome(slow, prefix, chunks, tools)), (template_dict, chunks)


def agrees(got, expected) -> bool:
    """Same message and events. When the parse fails, the call that raises may come sooner or later with the
    shortcuts: a shortcut that proves a match final (a literal whose lookaheads held) commits it at once, as the
    reference does, where the plain scan holds it to the end of the stream, so the region's value fails in the
    feed that commits it instead of in finalize. The events before the error then agree as far as both go."""
    if got == expected:
        return True
    (message, events), (want, want_events) = got, expected
    if message != want or "error" not in message:
        return False
    if len(events) > len(want_events):
        events, want_events = want_events, events
    if not events:
        return True
    *head, last = events
    there = want_events[len(head)]
    # With as many events on both sides, either side's last chunk may be the one the error cut short.
    either = len(events) == len(want_events)
    return want_events[:len(head)] == head and (there == last or (
        there.get("type") == last.get("type") == "region_chunk" and there["field"] == last["field"]
        and (there["text"].startswith(last["text"]) or (either and last["text"].startswith(there["text"])))))


@pytest.mark.parametrize("name", list_families())
def test_library_transcripts_with_and_without_shortcuts(name):
    family = load_family(name)
    for i, transcript in enumerate(family.transcripts):
        assert_same(family.template, transcript.prefix, transcript.output, i, transcript.tools or None)


DELIMS = st.one_of(_pattern(), st.sampled_from([
    r"<a>", r"</a>(?:\s*</w>)?", r"(?=<b)", r"<c (?P<n>\w+)>", r"(?=\{\s*x)", r"ab+", r"(?=>>[ab]+\n)|<e>",
    r"<\|t\|>(?P<n>[^<]*)<\|m\|>", r"^", r"\A<s>|<b>",
    r'(?<=<a>(?:[^"<]|"[^"]*")*)</a>\s*|(?=<e>)', r"(?<=^\s*|;\s*)(?=\{\s*x)|<b>", r"(?<=a[^<]*)<b\s*",
    r"<a>(?=\s*\{)", r"<b(?=>>)(?=>*a)", r"ab(?=[ab]*\n)",
    # different lookbehinds per alternative (hermes's tool-call close), split per combination of their truths
    r'(?<=<a>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*)</a>\s*|(?<=^\s*(?:[^"\\<]|"(?:[^"\\]|\\.)*")*)</a>\s*'
    r'|(?<=^\s*```j\s*(?:[^"<]|"[^"]*")*)```\s*|(?=<e>)',
    r"(?<=a[^<]*)<b\s*|(?<=;\s*)</a>|<e>|(?<=a[^<]*)(?=\{\s*x)",
]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(open_=DELIMS, close=DELIMS, text=TEXTS, extra=st.lists(st.sampled_from(
    ["<a>", "</a>", "<b", "<c ab>", "{ x", ">>ab\n", "<e>", "<|t|>n<|m|>", "<|t|>", "\n", " ", "\"x\"", ";",
     "\"</a>", "```j", "```"]), max_size=6),
    seed=st.integers(0, 1000))
def test_random_templates_with_and_without_shortcuts(open_, close, text, extra, seed):
    if _compiled(open_) is None or _compiled(close) is None or _pattern_shape(close)[0] == 0:
        return  # a close that can match empty text can re-fire forever (the reference loops too)
    rng = random.Random(seed)
    pieces = [text] + extra
    rng.shuffle(pieces)
    template = {"start_anchor": "S", "fields": {
        "content": {},
        "x": {"open_pattern": open_, "close_pattern": close, "repeats": True, "transform": {"v": "{content}"}},
    }}
    try:
        load_template(template)
    except ValueError:
        return
    assert_same(template, "", "".join(pieces), seed)


def test_a_partial_match_at_the_end_of_the_text_that_no_alternative_makes_ends_the_search():
    """Found by the random test above: the plain scan of this open searched on from one past a rejected partial
    match, and a search from past the end of the text starts at its end again, so it found the same partial match
    at the end forever (the full suite hung). The reference gives the same message."""
    from transformers.utils import chat_parsing as reference

    template = {"start_anchor": "S", "fields": {"content": {}, "x": {
        "open_pattern": r"\A{1,2}\n??$\<|\A{1,2}\n??$\<", "close_pattern": "ab+", "repeats": True,
        "transform": {"v": "{content}"}}}}
    text = '<a></a><a>"</a>{ x<c ab>'
    assert_same(template, "", text, 193)
    parser = reference.ResponseParser(template, prefix="")
    parser.feed(text)
    assert parser.finalize()[0] == parse_response(text, template, prefix="") == {"content": text}


@pytest.mark.parametrize("text", ["", "b", "a", "xa<a>"])
def test_a_zero_width_start_shape_fires_only_where_there_is_text(text):
    """A ``^`` open decided by string operations at index 0 (`WatchSet.start_steps`) matches empty text there, but
    the reference never fires a delimiter at the end of the text: an empty response opens nothing, one-shot or
    streamed (found by the random test above with hypothesis seeds 117 and 135)."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    template = {"start_anchor": "S", "fields": {
        "content": {}, "x": {"open_pattern": "^|a", "close_pattern": "<a>", "repeats": True,
                             "transform": {"v": "{content}"}}}}
    expected = reference_parse(text, template, prefix="")
    assert parse_response(text, template, prefix="") == expected
    for chunks in ([text], ["", text], [c for c in text]):
        assert parse_stream(load_template(template), "", chunks).result() == expected, chunks
    assert_same(template, "", text, 0)


@pytest.mark.parametrize("start", ["A", "B"])
@pytest.mark.parametrize("bang", [False, True])
def test_unbounded_lookbehind_sees_the_whole_stream_after_trimming(start, bang):
    """The scan buffer is trimmed as the stream goes; a lookbehind of unbounded reach still reads back to the
    start of the stream (the trimmed text is put back for its scans), so streaming gives the one-shot result."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    template = {"start_anchor": "S", "fields": {
        "content": {"close": "<end>"},
        "x": {"open": "<x>", "close_pattern": r"(?<=^A[^!]*)</x>|<y>"},
    }}
    filler = "lorem ipsum dolor " * 400  # 7 KB: far past what the scan buffer keeps
    text = start + filler + ("!" if bang else "") + filler + "<x>body</x> more<y>tail<end>"
    expected = reference_parse(text, template, prefix="")
    for chunks in ([text], fixed_chunks(text, 4), fixed_chunks(text, 7)):
        out = parse_stream(template, "", chunks)
        assert out.result() == expected, chunks[:2]


@settings(max_examples=400, deadline=None)
@given(anchors=st.lists(st.text("ab<|>", min_size=1, max_size=4), min_size=1, max_size=3, unique=True),
       prefix=st.text("ab<|>x", max_size=16))
def test_prefix_cut_after_the_last_anchor_match(anchors, prefix):
    """Literal anchors are searched as plain text when no two occurrences can overlap: the cut must be where the
    last non-overlapping match of the escaped alternation (the reference's finditer) ends."""
    import regex

    template = load_template({"start_anchor": anchors, "fields": {"content": {}}})
    rx = regex.compile("|".join(regex.escape(a) for a in sorted(anchors, key=len, reverse=True)))
    ends = [m.end() for m in rx.finditer(prefix)]
    expected = ("", prefix) if not ends else (prefix[:ends[-1]], prefix[ends[-1]:])
    assert template.truncate_prefix(prefix) == expected


def test_a_start_anchored_open_that_failed_at_index_0_costs_no_more_scans(monkeypatch):
    """qwen3_coder's ``^\\s*<think>`` can match at index 0 whatever the text there, so while the text from index 0
    is held every feed used to run a full scan. A response that starts with a call: once ``<to`` rules the open
    out at index 0 for good, the call open's literal alone says where to hold, and the pending call open costs no
    scan per character. The message is the one-shot one, and the one the template without shortcuts gives."""
    import parsing.parser as parser_module

    family = load_family("qwen3_coder")
    transcript = next(t for t in family.transcripts if t.output.startswith("<tool_call>\n<function="))
    template = load_template(family.template)
    scans = []
    real_scan = parser_module.scan

    def counting_scan(*args, **kwargs):
        scans.append(args[2])  # the scan position
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(parser_module, "scan", counting_scan)
    parser = ResponseParser(template, prefix=transcript.prefix, tools=transcript.tools or None)
    opened = None
    for i, char in enumerate(transcript.output):
        events = parser.feed(char)
        if opened is None and any(e["type"] == "region_open" and e["field"] == "tool_calls" for e in events):
            opened, scans_to_open = i, len(scans)
    message, _ = parser.finalize()
    assert opened is not None and opened > 30
    assert scans_to_open <= 8, scans  # one per character before: more than 30
    monkeypatch.setattr(parser_module, "scan", real_scan)
    assert message == transcript.outcome["message"]
    assert message == parse_response(transcript.output, template, prefix=transcript.prefix,
                                     tools=transcript.tools or None)
    slow = without_shortcuts(template)
    assert outcome(slow, transcript.prefix, list(transcript.output), transcript.tools or None)[0] == \
        outcome(template, transcript.prefix, list(transcript.output), transcript.tools or None)[0]


# Opens whose leading literals share prefixes (one a prefix of another, one a lookahead, alternatives of several
# heads), and implicit closes of several branches: where the finder reports one literal, others may still match.
OVERLAPPING_OPENS = [r"<a", r"<ab>", r"<a>(?P<n>\w+)>", r"(?=<ab)", r"<abc>\s*|<b>", r"<b>|<a>(?=\s*x)",
                     r"<ax\s*", r"<c|<a", r"^\s*<a>", r"b+<"]
OVERLAPPING_CLOSES = [r"<ab>\s*|</a>\s*|<e>", r"(?=<ab)|<e>", r"</a>", r"<e>\s*|<eee>"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(opens=st.lists(st.sampled_from(OVERLAPPING_OPENS), min_size=2, max_size=4, unique=True),
       content_close=st.sampled_from(OVERLAPPING_CLOSES),
       pieces=st.lists(st.sampled_from(["<a", "<ab>", "<a>", "b", ">", "x", " ", "<abc>", "<b>", "</a>", "<e>",
                                        "<eee>", "<ax", "<c", "\n", "y>"]), max_size=10),
       seed=st.integers(0, 1000))
def test_fields_whose_literals_overlap_with_and_without_shortcuts(opens, content_close, pieces, seed):
    """`shape_step` decides, where the finder reported a literal past index 0, only the delimiters one of whose
    leading literals starts with it or it with one (`WatchSet.candidates`), and a shape of several branches fails
    at once where no head starts with the character there (`Shape.head_firsts`). Several opens and a close of
    several branches whose literals share prefixes, streamed a character at a time and in random chunks: the
    message and events of the template without shortcuts, and one-shot the reference's message."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    fields = {"content": {"close_pattern": content_close, "repeats": True, "join": ""}}
    for i, open_ in enumerate(opens):
        fields[f"f{i}"] = {"open_pattern": open_, "close_pattern": r"</f>|(?=<e>)", "repeats": True,
                           "transform": {"v": "{content}"}}
    template = {"start_anchor": "S", "fields": fields}
    try:
        load_template(template)
    except ValueError:
        return
    text = "".join(pieces)
    assert_same(template, "", text, seed)
    try:
        expected = reference_parse(text, template, prefix="")
    except Exception as exc:  # noqa: BLE001 - the reference's own error: ours must raise the same type
        with pytest.raises(type(exc)):
            parse_response(text, template, prefix="")
        return
    assert parse_response(text, template, prefix="") == expected
    assert parse_stream(load_template(template), "", [c for c in text]).result() == expected


def test_many_literals_skip_the_candidate_table():
    """`WatchSet.candidates` compares every literal of a state with every delimiter's: past
    `parsing.scanner.MAX_CANDIDATE_PAIRS` pairs (a template of many fields, each with many literals) there is none,
    and `shape_step` decides every delimiter as before; the parse is the reference's either way."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    from parsing.scanner import MAX_CANDIDATE_PAIRS, watch_sets

    fields = {"content": {}}
    for i in range(60):
        fields[f"f{i}"] = {"open_pattern": "(?:" + "|".join(f"<t{i}_{j}>" for j in range(8)) + r")\s*",
                           "close_pattern": f"</t{i}>"}
    template = {"start_anchor": "S", "fields": fields}
    watch = watch_sets(load_template(template))["content"]
    assert len(watch.literal_set) ** 2 > MAX_CANDIDATE_PAIRS and watch.candidates == {}
    small = {"start_anchor": "S", "fields": dict(list(fields.items())[:3])}
    assert watch_sets(load_template(small))["content"].candidates  # a few fields: the table is there
    for spec in (template, small):
        text = "x<t1_3> one </t1> y <t0_7>\ntwo</t0> <t2_0"
        expected = reference_parse(text, spec, prefix="")
        assert parse_response(text, spec, prefix="") == expected
        assert parse_stream(load_template(spec), "", list(text)).result() == expected
