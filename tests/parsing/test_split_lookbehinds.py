"""A pattern whose alternatives begin with different lookbehinds (hermes's tool-call close: one per way a call can
start) is split into one variant per combination of their truths (`parsing.prefilter.split_leading_lookbehinds`,
`Delimiter.split`). At every position the variant its lookbehinds select must match exactly as the whole pattern:
same complete match (span and named groups), same partial match (or, where ``regex`` reports a partial match of
the whole pattern that a failing lookbehind guards, none that more text can complete), checked against ``regex``
itself on random patterns and texts."""

import random

import pytest
import regex

from parsing import load_template
from parsing.prefilter import lookbehind_variant, split_leading_lookbehinds

pytestmark = pytest.mark.unit

BEHINDS = [r'<a>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*', r'^\s*(?:[^"\\<]|"(?:[^"\\]|\\.)*")*', r"^\s*```j\s*[^<]*", r";\s*",
           r"a[^<]*", r"(?:^|<b>)\s*"]
BODIES = [r"</a>\s*", r"```\s*", r"(?=\{\s*x)", r"<b\s*", r"(?P<n>\w+)>", r"</a>(?:\s*</w>)?", r";"]
ALPHABET = ['"', "\\", "<a>", "</a>", "```", "j", " ", "\n", "x", "{", ";", "<b", ">", "a", "</w>", "<e>"]


def _pattern(rng: random.Random) -> str:
    alternatives = []
    for _ in range(rng.randint(2, 4)):
        body = rng.choice(BODIES)
        if rng.random() < 0.75:
            body = f"(?<={rng.choice(BEHINDS)}){body}"
        alternatives.append(body)
    if rng.random() < 0.3:
        alternatives.append("(?=<e>)")
    return "|".join(alternatives)


def _partial(pattern, text: str, at: int):
    """The partial match at ``at``, None for an empty one at the end of the text (``regex`` reports one there for
    some patterns whatever their lookbehinds say; it holds nothing back)."""
    m = pattern.match(text, at, partial=True)
    return None if m is not None and m.partial and m.start() == m.end() == len(text) else m


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a.span() == b.span() and a.partial == b.partial and _groups(a) == _groups(b)


def _groups(match) -> dict:
    """The named groups that took part (a variant lacks the groups of the alternatives it dropped)."""
    return {k: v for k, v in match.groupdict().items() if v is not None}


def test_the_selected_variant_matches_as_the_whole_pattern():
    rng = random.Random(1418)
    checked = 0
    while checked < 4000:
        source = _pattern(rng)
        parts = split_leading_lookbehinds(source)
        if parts is None:
            continue
        behinds, alternatives = parts
        whole = regex.compile(source, regex.DOTALL)
        guards = [regex.compile(f"(?<={b})", regex.DOTALL) for b in behinds]
        variants = [regex.compile(lookbehind_variant(alternatives, h), regex.DOTALL) for h in range(1 << len(behinds))]
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14)))
        for at in range(len(text) + 1):
            holds = sum(1 << i for i, g in enumerate(guards) if g.match(text, at) is not None)
            variant = variants[holds]
            assert _same(whole.match(text, at), variant.match(text, at)), (source, text, at)
            found = _partial(variant, text, at)
            if found is not None:
                assert _same(_partial(whole, text, at), found), (source, text, at)
            elif variant.match(text, at, partial=True) is None:
                # ``regex`` may report a partial match of the whole pattern where a lookbehind that fails there
                # guards it (the alternative's own partial match, its lookbehind unread): no text makes it match.
                for more in ("", "x>", " ", "\n", "</a>", "```", "{ x", ";"):
                    assert whole.match(text + more, at) is None, (source, text, at, more)
            checked += 1


def test_hermes_close_is_split_into_shapes():
    """The hermes tool-call close has three different lookbehinds: it is split (8 variants), and every variant is
    decided by string operations (`parsing.shapes`), so its state never runs the whole pattern over the stream."""
    from examples import load_family

    close = load_template(load_family("hermes").template).fields["tool_calls"].close
    assert close.split is not None and len(close.split[0]) == 3 and len(close.split[1]) == 8
    assert close.split_shapes is not None and close.split_lookbehind == 0


def test_too_many_lookbehinds_are_not_split():
    source = "|".join(f"(?<=x{i})<a>" for i in range(4))
    assert split_leading_lookbehinds(source) is None
    assert split_leading_lookbehinds("(?<=x0)<a>|(?<=x1)<b>|(?<=x0)<c>|<d>") == (
        ("x0", "x1"), ((0, "<a>"), (1, "<b>"), (0, "<c>"), (-1, "<d>")))


@pytest.mark.parametrize("behind, read", [
    (r'<a>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*', True),
    (r'<\|tool_call_argument_begin\|>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*', True),  # kimi-k2's
    (r'<a>(?:[^"\\]|"(?:[^"\\]|\\.)*")*', True),
    (r'<a>(?:[^"\\<\n]|"(?:[^"\\]|\\.)*")*', True),
    (r'^\s*(?:[^"\\<]|"(?:[^"\\]|\\.)*")*', False),  # anchored: the regex reads it
    (r'<a>(?:[^"<]|"(?:[^"\\]|\\.)*")*', False),  # a backslash outside strings is a plain character here
    (r'<a>(?:[^\s"\\]|"(?:[^"\\]|\\.)*")*', False),  # a class escape in the set
    (r'<a>[^"]*(?:"(?:[^"\\]|\\.)*"[^"]*)*', False),
])
def test_balanced_quote_lookbehinds_are_read_without_regex_as_regex_reads_them(behind, read):
    """The library's tool-call closes guard their literal with a lookbehind that re-reads the region back to its open
    (`parsing.template.balanced_quotes`): read without ``regex`` (``str.find`` of the literal, standard
    library runs in jumps, going on from the last candidate), it holds at exactly the places ``regex`` finds the
    lookbehind holding, from any start of the text, on random texts of quotes, escapes, ``<``, newlines and the
    literal, whether the reading goes on from an earlier candidate or starts afresh."""
    from parsing.scanner import _balanced_holds
    from parsing.template import balanced_quotes

    quick = balanced_quotes(behind)
    assert (quick is not None) is read
    if quick is None:
        return
    literal = quick[0]
    engine = regex.compile(f"(?<={behind})", regex.DOTALL)
    rng = random.Random(1417)
    pieces = ['"', "\\", "\\\\", '\\"', literal, literal[:3], "<", "x", " ", "\n", "{", "}", ":", "é"]
    held = 0
    for _ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        lo = rng.randint(0, len(text))
        memo: dict = {}  # read on from one candidate to the next, as a region's scans do
        for at in range(lo, len(text) + 1):
            expected = engine.match(text[lo:], at - lo) is not None
            if rng.random() < 0.5:  # a candidate the scans skip
                continue
            assert _balanced_holds(quick, text, lo, at, 0, memo, "k") is expected, (behind, text, lo, at)
            # The same from nothing read, and with the buffer's consumed text gone (a stream offset base).
            assert _balanced_holds(quick, text, lo, at, 0, {}, "k") is expected, (behind, text, lo, at)
            cut = rng.randint(0, lo)
            assert _balanced_holds(quick, text[cut:], lo - cut, at - cut, cut, memo, "k") is expected
            held += expected
    assert held > 25
