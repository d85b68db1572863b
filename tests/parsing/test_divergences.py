"""Documented divergences: inputs where the reference's streaming result differs from its own
one-shot result. Ours must give the one-shot result for every chunking (spec section 4: a delimiter
whose match can still change with more input is held until it is decided; holding longer only changes
how a region's text is split into region_chunk events, so events are compared after merging).
(The end of the prefix is not among them: there ours behaves as the reference's one-shot parse does,
see test_edges.py.)

Each test pins (a) the reference's flawed streaming result for one chunking, so we notice if transformers
changes, (b) the reference's one-shot (uncut) result, written out by hand, and (c) ours == (b), for
that chunking and for chunk sizes 1-4.
"""

from __future__ import annotations

import pytest

import differential as d
from parsing.streams import fixed_chunks, merged_events

ANCHOR = "<|a|>"


def _tpl(fields):
    return {"start_anchor": ANCHOR, "fields": fields}


DIVERGENCES = [
    pytest.param(
        # Reason: a capture inside a lookahead reads on to the buffer edge. The lookahead holds whatever
        # follows, so the reference commits the zero-width open at once, with the capture cut where the chunk
        # ended (`b`); uncut, the greedy `\w*` takes `bcd`.
        _tpl({"content": {}, "t": {"open_pattern": r"(?=(?P<name>b\w*))",
                                   "transform": {"v": "{content}", "name": "{name}"}}}),
        "", "x bcd", ["x b", "cd"],
        {"content": "x", "t": {"v": "bcd", "name": "bcd"}}, {"content": "x", "t": {"v": "bcd", "name": "b"}},
        id="lookahead_capture_at_edge",
    ),
    pytest.param(
        # Reason: the same with a consuming open before the lookahead (`<c` is final, its capture is not).
        _tpl({"content": {}, "t": {"open_pattern": r"<c(?=(?P<name>\w+))",
                                   "transform": {"v": "{content}", "name": "{name}"}}}),
        "", "x <cabc y", ["x <ca", "bc y"],
        {"content": "x", "t": {"v": "abc y", "name": "abc"}}, {"content": "x", "t": {"v": "abc y", "name": "a"}},
        id="lookahead_capture_after_literal",
    ),
    pytest.param(
        # Reason: a regex match that stops before the buffer edge is treated as final by the reference
        # even though the optional tail `(?:\s*</wrap>)?` could still extend it: with the buffer ending in
        # `</x>\n` it commits `</x>`, and `\n</wrap>` then leaks into the implicit content region.
        _tpl({"content": {}, "x": {"open": "<x>", "close_pattern": r"</x>(?:\s*</wrap>)?"}}),
        "", "hi<x>1</x>\n</wrap>tail", ["hi<x>1</x>\n", "</wrap>tail"],
        {"content": "tail", "x": "1"}, {"content": "</wrap>tail", "x": "1"},
        id="regex_close_optional_tail",
    ),
    pytest.param(
        # Reason: the same flaw for a literal list whose literals overlap: `[TOOL]` is complete and followed
        # by `[`, so it no longer ends at the edge and the reference commits it, although `[` starts the
        # longer literal `[TOOL][ARGS]` (which the one-shot run picks, longest match wins).
        _tpl({"content": {}, "tool": {"open": ["[TOOL]", "[TOOL][ARGS]"], "close": "\n"}}),
        "", "[TOOL][ARGS]x\n", ["[TOOL][", "ARGS]x\n"],
        {"tool": "x"}, {"tool": "[ARGS]x"},
        id="literal_list_prefix_overlap",
    ),
    pytest.param(
        # Reason: `$` without MULTILINE also matches just before a final newline of the searched text. A chunk
        # ending in `\n` lets the zero-width implicit close match before that newline; it does not end at
        # the buffer edge, so the reference commits it; with more text the match would not exist there.
        _tpl({"content": {"close_pattern": "$"}}),
        "", "abc\ndef", ["abc\n", "def"],
        {"content": "abc\ndef"}, {"content": "def"},
        id="dollar_before_trailing_newline",
    ),
    pytest.param(
        # Reason: `\K` makes the reported match start after text the pattern consumed (`\n`). The reference
        # searches from its flush position; once a chunk ends right after `\n`, that `\n` is emitted into the
        # body and `\n\K</x>` can never match again: the region runs to the end of the stream.
        _tpl({"content": {}, "x": {"open": "<x>", "close_pattern": r"\n\K</x>"}}),
        "", "a<x>1\n</x>b", ["a<x>1\n", "</x>b"],
        {"content": "b", "x": "1"}, {"content": "a", "x": "1\n</x>b"},
        id="regex_keep_out_K",
    ),
    pytest.param(
        # Reason: `\G` anchors at the search start. The reference searches from its flush position, which
        # moves with every chunk boundary; uncut, `\G` only matches at the stream start or right after the
        # previous delimiter, so `y<g>3</g>` stays content.
        _tpl({"content": {}, "a": {"open_pattern": r"\G<g>", "close": "</g>", "repeats": True}}),
        "", "<g>1</g><g>2</g>y<g>3</g>", ["<g>1</g><g>2</g>y", "<g>3</g>"],
        {"content": "y<g>3</g>", "a": ["1", "2"]}, {"content": "y", "a": ["1", "2", "3"]},
        id="regex_G_anchor",
    ),
]


@pytest.mark.parametrize("template,prefix,output,chunks,uncut,flawed", DIVERGENCES)
def test_reference_streaming_flaw_is_real(template, prefix, output, chunks, uncut, flawed):
    """The reference really diverges here (if transformers fixes it, this documents the change)."""
    assert d.ref_expected(template, prefix, output).message == uncut
    assert d.run_oneshot(d.ref, template, prefix, output).message == uncut
    streamed = d.run_stream(d.ref, template, prefix, chunks)
    assert streamed.message == flawed
    assert flawed != uncut


@pytest.mark.skipif(d.SELF_CHECK, reason="self-check mode: 'ours' is the reference, which has the flaw")
@pytest.mark.parametrize("template,prefix,output,chunks,uncut,flawed", DIVERGENCES)
def test_ours_gives_uncut_result(template, prefix, output, chunks, uncut, flawed):
    ideal = d.ref_expected(template, prefix, output)
    chunkings = [chunks] + [fixed_chunks(output, n) for n in (1, 2, 3, 4)]
    for ch in chunkings:
        got = d.run_stream(d.ours, template, prefix, ch)
        assert got.error is None, f"{ch!r}: {got.describe()}"
        assert got.message == uncut, f"chunks={ch!r}"
        assert merged_events(got.events) == merged_events(ideal.events), f"chunks={ch!r}"
    assert d.run_oneshot(d.ours, template, prefix, output).message == uncut


# The same flaw through many spellings of "a delimiter with an optional tail": subroutine calls, recursion,
# bounded repeats, possessive/atomic groups, verbose mode, inline flags, escapes, lookarounds inside the tail,
# named groups and backreferences. For each, every cut of the output into two chunks must give the uncut
# result (ours), and the reference must show the flaw for at least one cut (documenting it).
GROWABLE_CLOSES = [
    r"</x>(?:\s*</wrap>)?", r"</x>(?:\s*(?1))?(</wrap>)?", r"(</x>)(?:\s*(?1)|\s*</wrap>)?", r"</x>(?:\n(?R))?|</wrap>",
    r"(?:</x>\s*){1,2}(?:</wrap>)?", r"</x>(?:\s*+</wrap>)?", r"</x>(?>\s*</wrap>)?", r"</x>(?:\N{LINE FEED}</wrap>)?",
    r"(?x) </x> (?: \s* </wrap> )?", r"(?i)</X>(?:\s*</WRAP>)?", r"</x>(?#c)(?:\s*</wrap>)?", r"\x3c/x>(?:\s*\u003c/wrap>)?",
    r"</x>(?:\s*</wrap>){0,1}", r"</x>(?:\s*</wrap>|\s*</wr)?", r"</x>(?:\s*</(?:wrap|wr)>)?", r"</x>(?:[\s]*[<]/wrap>)?",
    r"</x>(?:\s*</wrap>(?=t))?", r"</x>(?:\s*</wrap>(?!q))?", r"(?<=1)</x>(?:\s*</wrap>)?", r"</x>(?:(?<=>)\s*</wrap>)?",
    r"</x>(?:\s*</wrap>)?+", r"</x>\s*(?:</wrap>)?", r"(?V1)</x>(?:\s*</wrap>)?", r"</x>(?:\s*(?P<w></wrap>))?",
    r"(?P<c></x>)(?:\s*(?P=c))?",
]


@pytest.mark.parametrize("close", GROWABLE_CLOSES)
def test_growable_close_spellings_every_cut(close):
    template = _tpl({"content": {}, "x": {"open": "<x>", "close_pattern": close}})
    if "(?P<" in close:
        template["fields"]["x"]["transform"] = "{content}"
    output = "hi<x>1</x>\n</x>tail" if "(?P=c)" in close else "hi<x>1</x>\n</wrap>tail"
    ideal = d.ref_expected(template, "", output)
    assert ideal.message == {"content": "tail", "x": "1"}
    cuts = [[output[:k], output[k:]] for k in range(1, len(output))]
    flawed = [ch for ch in cuts if not d.same_outcome(d.run_stream(d.ref, template, "", ch), ideal)]
    assert flawed, "the reference no longer shows the flaw for this spelling"
    if d.SELF_CHECK:
        return
    for ch in cuts:
        got = d.run_stream(d.ours, template, "", ch)
        assert d.same_outcome(ideal, got), f"{ch!r}: {d.diff_text(ideal, got)}"
