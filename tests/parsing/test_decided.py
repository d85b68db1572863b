"""`parsing.decided`: a branch called decided never changes its match, whatever text is appended after a complete
match that ends before the end of the text (or at it, for a branch called edge_final). Checked against the `regex` module itself on random and library
patterns and random continuations."""

from __future__ import annotations

import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examples import list_families, load_family
from parsing.decided import decided_branches

from test_prefilter import TEXTS, _compiled, _pattern

PIECES = ["a", "b", "<", ">", "\n", " ", "{", "x", "\"", ";", "<a>", "</a>", "ab"]
# Character classes and lookaheads of the kinds the library uses, beside the random patterns.
SHAPED = st.sampled_from([
    r"<a>\s*", r"<a>(?P<n>[^\s<]+)(?=\s*<(?:a|/b)>)", r"</a>\s*|(?=<b>)", r"a[^>\n]+>(?=\s*<)", r"<a>(?=\s*\{)",
    r"x\d+\s*", r"a\s*[^<]*", r"(?<=a\s*)<b>\s*", r"a[ab]*b", r"a\s{0,2}", r"a[^a]*a", r"<(?P<n>\w+)>\s*",
    r"^\s*<a>", r"^\s*<a>|^(?=\s*[^\s<])", r"\A<a>\s*", r"^", r"<b>|^\s*(?:<a>|(?=</a>))",
    r"(?=(?P<n>a\w*))", r"<a(?=(?P<n>[^>]+)>)",
])


def _matches(rx, text: str, start: int):
    m = rx.match(text, start, partial=True)
    return None if m is None else (m.span(), m.partial, m.groups())


def check(pattern: str, text: str, more: list[str]) -> None:
    compiled = _compiled(pattern)
    if compiled is None:
        return
    branches = decided_branches(pattern, compiled)
    if branches is None:
        return
    assert "|".join(b.regex.pattern for b in branches) == pattern
    for start in range(len(text) + 1):
        for i, branch in enumerate(branches):
            m = branch.regex.match(text, start, partial=True)
            if m is None:
                if not branch.sure_failure:
                    break  # the scanner calls nothing decided past a failure it cannot trust
                continue
            final = branch.decided if m.end() < len(text) else branch.edge_final
            if final and not m.partial:
                before = _matches(branch.regex, text, start)
                for tail in more:
                    assert _matches(branch.regex, text + tail, start) == before, (pattern, text, tail, start)
                    # Earlier branches failed even as partial matches: they still fail, so the whole pattern's
                    # match at this start is this branch's.
                    for earlier in branches[:i]:
                        assert earlier.regex.match(text + tail, start) is None, (pattern, earlier.regex.pattern)
                    whole = compiled.match(text + tail, start)
                    assert whole is not None and whole.span() == m.span(), (pattern, text, tail, start)
            break


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=st.one_of(_pattern(), SHAPED, st.tuples(SHAPED, _pattern()).map("|".join)), text=TEXTS,
       more=st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join), min_size=1,
                     max_size=4))
def test_decided_matches_never_change(pattern, text, more):
    check(pattern, text, more)


def test_library_delimiters():
    """Every library regex, at every position of every transcript, cut at every position."""
    extensions = ["", " ", "\n", "x", "<", "{", "}", "\"", ">", " {\"a\": 1}", "<|im_end|>"]
    for name in list_families():
        family = load_family(name)
        patterns = [spec[key] for spec in family.template["fields"].values()
                    for key in ("open_pattern", "close_pattern") if key in spec]
        for pattern in patterns:
            for transcript in family.transcripts[:4]:
                text = transcript.output[:400]
                for cut in range(0, len(text), 7):
                    check(pattern, text[:cut], [e for e in extensions if e] + [text[cut:]] if cut < len(text)
                          else extensions[1:])


def test_shapes():
    def decided(pattern):
        branches = decided_branches(pattern, regex.compile(pattern, regex.DOTALL))
        return None if branches is None else [b.decided for b in branches]

    assert decided(r"</think>\s*|(?=<eos>)") == [True, True]
    assert decided(r"<tool_call>(?P<name>[^\s<]+)(?=\s*<(?:arg_key|/tool_call)>)") == [True]
    assert decided(r"<a>(?=\s*\{)|(?<=^\s*|;\s*)(?=\{)") == [True, True]
    assert decided(r"a.*b") is None  # `.` gives characters back to `b`
    assert decided(r"a\s*\s*b") is None
    assert decided(r"x[ab]*b") is None
    # ``^`` / ``\A`` depend on the position alone; other anchors are left to the scanner's usual rule
    assert decided(r"^\s*<think>") == [True]
    assert decided(r"^\s*<think>|^(?=\s*[^\s<])") == [True, True]
    assert decided(r"\A<a>") == [True]
    assert decided(r"<a>$") is None
    assert decided(r"(?m)^<a>") is None
    assert decided(r"a\b") is None
    assert decided(r"(?i)<a>\s*|<b>") is None  # an inline flag
    assert decided(r"<a>\s*(?!x)") is None
    assert decided(r"a\s*(?<=\s)") is None  # a lookbehind after a variable repeat
    # a capture in a lookahead can still grow after the lookahead holds (trial 9); a plain group cannot capture
    assert decided(r"(?=(?P<name>b\w*))") is None
    assert decided(r"<c(?=(?P<name>\w+))") is None
    assert decided(r"<a>(?=(?:\s*)\{)") == [True]

    def at_edge(pattern):
        return [b.edge_final for b in decided_branches(pattern, regex.compile(pattern, regex.DOTALL))]

    assert at_edge(r"(?=>>>[\w.-]+\n)|<\|eot_id\|>") == [False, True]
    assert at_edge(r"</think>\s*|<a>(?=x)|<b>[^>]*>") == [False, False, True]
    sure = [b.sure_failure for b in decided_branches(r"ab\B|a|(?!x)b|c$|<d>",
                                                            regex.compile(r"ab\B|a|(?!x)b|c$|<d>", regex.DOTALL))]
    assert sure == [False, True, False, False, True]


def test_an_earlier_edge_blind_branch_is_never_trusted_to_fail():
    """`ab\\B|a` seeing `ab` at the edge: `regex` says `ab\\B` fails there (it decides `\\B` as if the text ended),
    but after `c` it matches `ab`. Streamed, the open must wait for that, as one-shot parsing sees it."""
    from parsing import parse_response
    from parsing.streams import parse_stream

    template = {"start_anchor": "S", "fields": {"content": {}, "x": {
        "open_pattern": r"ab\B|a", "close": "<e>", "repeats": True, "transform": {"v": "{content}"}}}}
    text = "xabc<e>"
    expected = parse_response(text, template, prefix="")
    assert expected == {"content": "x", "x": [{"v": "c"}]}
    for chunks in (["xab", "c<e>"], list(text), ["xa", "bc<e>"]):
        assert parse_stream(template, "", chunks).result() == expected, chunks
