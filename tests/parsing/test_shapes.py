"""`parsing.shapes`: which patterns are shapes, and that a shape's decisions are the regex engine's.

A decision is checked against ``regex`` itself on random patterns and texts: MATCH must be the engine's match at
that position for the text as it is and for every continuation tried; FAIL must mean no match, complete or
partial, there; UNDECIDED (a hold, which only delays text) must mean the engine sees a partial or complete
match there, and, where a run reaching the edge or a literal cut off by it is the cause, stay so while more text
only continues that run or that literal.
"""

import copy
import random
import sys

import pytest
import regex

from parsing.shapes import (_Run, FAIL, MATCH, PAUSE_BRANCH, PAUSE_EDGE, PAUSE_ITEM, PAUSE_LITERALS, PAUSE_RUN,
                            UNDECIDED, shape_of)

pytestmark = pytest.mark.unit

FLAGS = regex.compile("", regex.DOTALL).flags

PIECES = ["<a>", "</a>", "<|e|>", "ab", "a", "<", ">", "|", "\\n", " ", "x"]
RUNS = ["\\s*", "\\s+", "[\\w.-]+", "\\d*", "[^<]*", "\\w+", "(?P<n>[\\w.-]+)", "(?:<a>|x|b\\n)", "(?!ab|<e)",
        # written out as alternatives (`parsing.shapes._expanded`), and runs that may follow runs
        "[^\\s<]+", "[^<\\n]*", "s?", "\\n?", "(?:<a>\\s*)?", "(?:x|ab\\s*)", "(?:a|ab)", "(?:\\s*<e>|x)?",
        # named groups of more than one run, runs that give characters back to the literal after them
        "(?P<m>a|x\\s*b)", "(?P<k>[^<\\s]+)_\\d+", "\\w+a", "(?P<i>(?:f\\.)?(?P<j>[^:<\\s]+):\\d+|f_(?P<j>\\w+)_\\d+)"]
ALPHABET = "<>/a|ebx.- \n\t1_:f"


def _literal(rng: random.Random) -> str:
    return "".join(regex.escape(p) if p != "\\n" else p for p in rng.sample(PIECES, rng.randint(1, 2)))


def _sequence(rng: random.Random) -> str:
    parts = ["^" if rng.random() < 0.1 else "", _literal(rng)]
    for _ in range(rng.randint(0, 2)):
        parts.append(rng.choice(RUNS))
        if rng.random() < 0.6:
            parts.append(_literal(rng))
    return "".join(parts)


def _groups(match) -> dict:
    return {} if match is None else {k: v for k, v in match.groupdict().items() if v is not None}


def _pattern(rng: random.Random) -> str:
    branches = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.15:
            branches.append(_sequence(rng) + "(?:" + "|".join(_sequence(rng) for _ in range(2)) + ")")
            continue
        ahead = "(?=" + "|".join(_sequence(rng) for _ in range(rng.randint(1, 2))) + ")"
        if roll < 0.25:
            branches.append(ahead)
        elif roll < 0.5:
            branches.append(_sequence(rng) + ahead)
        else:
            branches.append(_sequence(rng))
    return "|".join(branches)


@pytest.mark.parametrize("source, is_shape", [
    (r"</think>\s*|(?=<\|im_end\|>)", True),
    (r"(?=>>>[\w.-]+\n)|<\|eot_id\|>", True),
    (r"</function>\s*</tool_call>\s*|(?=<\|im_end\|>)", True),
    (r"<response>\s*|</response>\s*|<\|im_end\|>", True),
    (r"<tool_call>(?=\s*\{)", True),
    (r"<a>\s*(?=<b>|\{)", True),
    (r"<a>\s*(?=\s\{)", False),  # the run could give back a character the lookahead reads
    (r"<a>(?=b)c", False),  # a lookahead inside a sequence
    (r"Here(?: is|'s) my response:\s*|(?=<\|end_of_text\|>)", True),
    (r"<f=(?P<name>[^>\n]+)>(?=\s*<(?:p=|/f>))", True),
    (r"```(?:<e>\s*|\s*(?=<f>|<g>))", True),  # a trailing group: two alternatives
    (r"```(?:<e>\s*|\s*(?=\s<f>))", False),
    (r"(?:a|ab)c", True),  # written out: ac|abc
    (r"(?:a|ab)??c", False),  # lazy
    (r"(?:ab)+", False),  # a quantified group
    (r"(?P<n>\w+)(?P<m>\d+)", False),
    (r"Here(?: is|\w+) my response:", True),  # written out: two alternatives
    (r"a\s*\s", False),  # a run followed by a run
    (r"x\s*\n", True),  # a run followed by a literal it accepts: the walk gives back as the engine does
    (r"x\s*(?=\n)", False),  # ... not into a lookahead
    (r"x\s*\s*\n", False),  # ... nor through another run
    (r"tool_calls?", True),  # written out: tool_calls|tool_call
    (r"tool_calls??", False),  # lazy
    (r"<a>\s*[^<]*<b>", True),  # a shorter \s* leaves to [^<]*, which ends where it would have
    (r"<a>[^\s<]+\s*<b>", True),  # the run after it takes nothing it takes
    (r"<a>\w+\s*x", False),  # \s* may be empty, and \w takes x
    (r"<a>[^<]*\s*<b>", False),
    # library delimiters (gpt-oss, glm-4.5, kimi-k2, qwen3-coder, magistral)
    (r"(?:<\|channel\|>(?:commentary|analysis) to=functions\.(?P<name>[^\s<]+)|<\|start\|>assistant "
     r"to=functions\.(?P<name>[^\s<]+)<\|channel\|>(?:commentary|analysis))[^<]*(?:<\|constrain\|>[^<]*)?"
     r"<\|message\|>", True),
    (r"<tool_call>(?P<name>[^\s<]+)(?=\s*<(?:arg_key|/tool_call)>)", True),
    (r"</think>\s*|(?=<\|tool_calls?_section_begin\|>|<\|im_end\|>)", True),
    (r"<tool_call>\s*<function=(?P<name>[^>\n]+)>|<function=(?P<name>[^>\n]+)>(?=\n?<parameter=|\s*</function>)",
     True),
    (r"\[TOOL_CALLS\](?P<name>[^\[\]{}\s]+)(?:\[CALL_ID\][^\[]*)?\[ARGS\]", True),
    (r"<a>\s*(?P<id>(?:f\.)?(?P<name>[^:<\s]+):\d+|f_(?P<name>[^<\s]+)_\d+)", True),  # kimi-k2's call id
    (r"<a>(?P<n>\w+)", True),  # a named run
    (r"<a>\s*?", False),  # lazy
    (r"(?i)<a>", False),  # inline flag
    (r">>>(?!all\n)(?P<name>[\w.-]+)\n", True),
    (r"\w+(?!b)", False),  # a negative lookahead after a run
    (r"(?<=x)<a>", False),  # lookbehind
    (r"<a>\b", False),  # assertion
    (r"^\s*(?:<think>|(?=</think>))", True),
    (r"^\s*<think>|^(?=\s*[^\s<])", True),  # deepseek-r1: one character of a class in a lookahead
    (r"<a>(?=[^<])", True),
    (r"<a>[^<]", False),  # ... not in consumed text
    (r"<a>(?=[ab]b)", False),  # ... nor before a literal it takes
    (r"<a>(?=[ab][bc])", False),
    (r"<a>(?=[ab]?)", False),
    (r"<a>(?=[ab]{2})", False),
    (r"<a>|^", True),
    (r"<a>^", False),  # ^ not first
    (r"(?m)^<a>", False),
    (r"<a>[[:alpha:]]+", False),  # nested set
    # a written-out group right after a run that gives characters back (trial 9): the engine tries the group
    # (or its "without") at the run's greedy end first
    (r"b[^>]*(?:a)?", False),
    (r"b[a-z]*(?:a\d+)?", False),
    (r"b[a-z]*(?:a|x)y", False),
    (r"b[a-z]*a(?:x)?", False),
    (r"(?:x)?b[a-z]*a", True),  # the group before the run: as the engine
    (r"<(?P<n>\w+)b(?P<n>[^>]+)>", False),  # one name twice in one alternative: the engine keeps the last
    (r"<\|tool_call_begin\|>\s*(?P<id>(?:functions\.)?(?P<name>[^:<\s]+):\d+|functions_(?P<name>[^<\s]+)_\d+)"
     r"\s*<\|tool_call_argument_begin\|>", True),  # kimi-k2: one name per alternative, the group before the run
])
def test_which_patterns_are_shapes(source, is_shape):
    assert (shape_of(source, FLAGS) is not None) is is_shape


@pytest.mark.parametrize("pattern,text", [
    (r"b[a-z]*(?:a\d+)?", "xba2:"), (r"b[^>]*(?:a\d+)?", "xba2:"), (r"b[^>]*(?:a)?", "xba2:"),
    (r"=(?P<k>[^\"]*)(?:<a>)?", "=<a>"), (r"<(?P<k>\w+)b(?P<k>[^>]+)>", "x<aabcd>y"),
])
def test_written_out_groups_after_a_run_match_as_the_engine(pattern, text):
    """Trial 9: one-shot and streamed a character at a time, the open's match and its captures are the
    reference's (these patterns are no shapes: the regex runs)."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    from parsing import load_template, parse_response
    from parsing.streams import parse_stream

    names = regex.compile(pattern).groupindex
    transform = {"v": "{content}", **{name: "{%s}" % name for name in names}}
    template = {"start_anchor": "S", "fields": {"c": {}, "r": {"open_pattern": pattern, "transform": transform}}}
    expected = reference_parse(text, copy.deepcopy(template), prefix="")
    assert parse_response(text, copy.deepcopy(template), prefix="") == expected
    assert parse_stream(load_template(template), "", list(text)).result() == expected


def _continuations(rng: random.Random) -> list[str]:
    return ["", *("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8))) for _ in range(12)),
            "<|e|>", "</a>", " \n x", "a>"]


def _text_with_a_piece_of(source: str, rng: random.Random) -> tuple[str, int]:
    """Random text with a piece of the pattern ``source`` planted in it (so that matches are common), and a position
    to decide at: most often where the piece starts."""
    text = "".join(rng.choice(ALPHABET + "<>") for _ in range(rng.randint(0, 12)))
    planted = "".join(regex.sub(r"\\(.)", r"\1", piece) + rng.choice(["", " ", "\n ", "ab", "x."])
                      for piece in regex.findall(r"(?:\\.|[^\\|()?=*+\[\]])+", source)[:rng.randint(1, 3)])
    cut = rng.randint(0, len(text))
    text = text[:cut] + planted[:rng.randint(1, len(planted) or 1)] + text[cut:]
    return text, cut if rng.random() < 0.7 else rng.randint(0, len(text))


def test_decisions_agree_with_the_regex_engine():
    rng = random.Random(1414)
    checked = edge_runs = cut_literals = cut_ahead = resumed = 0
    resumed_kinds = set()
    while checked < 3000:
        source = _pattern(rng)
        shape = shape_of(source, FLAGS)
        if shape is None:
            continue
        try:
            compiled = regex.compile(source, regex.DOTALL)
        except regex.error:
            continue
        text, at = _text_with_a_piece_of(source, rng)
        final = compiled.match(text, at)
        captures = {}
        status, end = shape.decide(text, at, True, captures)
        assert (status, end) == ((MATCH, final.end()) if final else (FAIL, -1)), (source, text, at)
        assert captures == _groups(final), (source, text, at)
        status, end = shape.decide(text, at, False)
        later = [compiled.match(text + more, at) for more in _continuations(rng)]
        if status == MATCH:
            assert all(m is not None and m.end() == end for m in later), (source, text, at)
            assert all(_groups(m) == _groups(later[0]) for m in later), (source, text, at)
        elif status == FAIL:
            assert compiled.match(text, at, partial=True) is None, (source, text, at)
            assert all(m is None for m in later), (source, text, at)
        else:
            assert status == UNDECIDED
            # Holding is always safe (it only delays text); it must not happen where nothing can match.
            assert compiled.match(text, at, partial=True) is not None, (source, text, at)
            if end is not None and end[PAUSE_LITERALS] is not None:
                # A literal cut off by the edge at q (`Shape.decide`): while the text still ends inside one of the
                # literals, the match stays undecided (the scanner then holds without deciding again).
                literals, q = end[PAUSE_LITERALS], at + end[PAUSE_EDGE]  # in the consumed text or a lookahead
                for literal in literals:
                    for stop in range(len(text) - q + 1, len(literal)):
                        if literal.startswith(text[q:]):
                            more = literal[len(text) - q:stop]
                            assert shape.decide(text + more, at, False)[0] == UNDECIDED, (source, text, more)
                            assert compiled.match(text + more, at, partial=True) is not None, (source, text, more)
                            cut_literals += 1
                            cut_ahead += end[PAUSE_ITEM] == len(shape.branches[end[PAUSE_BRANCH]][0])
            elif end is not None and end[PAUSE_RUN] is not None:
                # The run that reached the edge (`Shape.decide`): more of its characters keep the match undecided
                # (the scanner then holds without deciding again).
                accepted = [c for c in ALPHABET if end[PAUSE_RUN].rx.match(c).end()]
                for n in (1, 3, 9):
                    more = "".join(rng.choice(accepted) for _ in range(n))
                    assert shape.decide(text + more, at, False)[0] == UNDECIDED, (source, text, more)
                    assert compiled.match(text + more, at, partial=True) is not None, (source, text, more)
                    edge_runs += 1
            if end is not None:
                # Deciding again from where the walk stopped (a pause, `parsing.shapes.PAUSE_BRANCH`) gives what
                # deciding from the start gives, on every continuation, streaming or at the end of the stream,
                # captures included.
                for more in _continuations(rng):
                    for eos in (False, True):
                        from_pause, from_start = {}, {}
                        status_r, end_r = shape.decide(text + more, at, eos, from_pause, end)
                        status_d, end_d = shape.decide(text + more, at, eos, from_start)
                        by_walk = {}
                        assert shape.walk(text + more, at, eos, by_walk, end) == (status_r, end_r), (source, text, more)
                        assert by_walk == from_pause, (source, text, more, eos)
                        if not source.startswith("^") and "|^" not in source:
                            # The buffer may lose (or gain) text before ``at`` between two feeds: a pause holds
                            # offsets from the shape's start (group marks too), not buffer indexes.
                            shifted, from_start = {}, {}
                            assert (shape.decide("zz" + text + more, at + 2, eos, shifted, end)
                                    == shape.decide("zz" + text + more, at + 2, eos, from_start)), (source, text, more)
                            assert shifted == from_start, (source, text, more, eos)
                        assert status_r == status_d, (source, text, more, eos)
                        if status_r != UNDECIDED:
                            assert (end_r, from_pause) == (end_d, from_start), (source, text, more, eos)
                        elif end_r is not None:
                            assert end_r[:3] == end_d[:3], (source, text, more)
                        item = end[PAUSE_ITEM]
                        resumed_kinds.add("ahead" if item == len(shape.branches[end[PAUSE_BRANCH]][0])
                                          else "inner" if item < 0 else "item")
                        resumed += 0 if status_r == UNDECIDED else 1
        checked += 1
    assert edge_runs > 100 and cut_literals > 100 and cut_ahead > 20 and resumed > 1000, (
        edge_runs, cut_literals, cut_ahead, resumed)
    assert {"ahead", "item"} <= resumed_kinds, resumed_kinds


# One character of a class standing alone (`parsing.shapes._Run.single`; a shape in a lookahead only).
SINGLES = ["[^\\s<]", "\\d", "[a<]", "[^>]", "\\w", "\\s"]


_PLAIN_PATTERN = _pattern


def _pattern_with_singles(rng: random.Random) -> str:
    """`_pattern`, with a class standing alone after the last item of every lookahead's sequences."""
    pattern = _PLAIN_PATTERN(rng)
    return regex.sub(r"\(\?=(.*?)\)$", lambda m: "(?=" + "|".join(
        part + rng.choice(SINGLES) for part in m.group(1).split("|")) + ")", pattern) if rng.random() < 0.5 else pattern


def test_one_character_of_a_class_decides_as_the_regex_engine(monkeypatch):
    """deepseek-r1's reasoning open ``^(?=\\s*[^\\s<])``: the two random checks above, with a class standing alone
    at the end of lookaheads: decisions as the regex engine's, resumed from their pauses as from the start, and
    compiled as walked."""
    monkeypatch.setattr(sys.modules[__name__], "_pattern", _pattern_with_singles)
    test_decisions_agree_with_the_regex_engine()
    rng = random.Random(1417)
    singles = 0
    while singles < 300:
        source = _pattern_with_singles(rng)
        shape = shape_of(source, FLAGS)
        if shape is None or shape.compiled is None or not any(
                type(item) is _Run and item.single for _, ahead in shape.branches for sequence in ahead or ()
                for item in sequence):
            continue
        singles += 1
        for _ in range(4):
            text, at = _text_with_a_piece_of(source, rng)
            for eos in (False, True):
                assert shape.decide(text, at, eos) == shape.walk(text, at, eos), (source, text, at)


def test_a_pause_inside_a_run_that_gives_characters_back_walks_the_branch_again():
    """The edge cutting off a literal after a run that gave characters back (kimi-k2's ``functions_NAME_0``) is no
    place to resume from (the walk was inside the run's give-back): deciding again walks the branch from its start,
    with the same answer as the engine."""
    source = r"<a>(?P<name>[^<\s]+)_\d+<b>|<c>"
    shape = shape_of(source, FLAGS)
    compiled = regex.compile(source, regex.DOTALL)
    status, pause = shape.decide("<a>get_x_1<", 0, False, {})
    assert status == UNDECIDED and pause[PAUSE_ITEM] == -1 and pause[PAUSE_LITERALS] == ("<b>",)
    for text in ("<a>get_x_1<b>", "<a>get_x_1<c", "<a>get_x_1<bz"):
        captures = {}
        status, end = shape.decide(text, 0, False, captures, pause)
        final = compiled.match(text, 0)
        assert (status, end, captures) == ((MATCH, final.end(), final.groupdict()) if final else (FAIL, -1, {}))


def test_compiled_shapes_answer_as_the_walk():
    """`Shape.decide` runs the shape written out as Python (`parsing.shapes._compiled_decide`): on random shapes and
    texts, at the end of the stream and while streaming, it gives `Shape.walk`'s answer: status, end or pause (the
    same tuple), captures."""
    rng = random.Random(1415)
    compared = compiled_shapes = grouped = 0
    while compared < 6000:
        source = _pattern(rng)
        if rng.random() < 0.3:  # a named group of several items (group marks), as kimi-k2's call id
            source = f"{_sequence(rng)}(?P<g>{_sequence(rng)}{_sequence(rng)}){_sequence(rng)}|{source}"
        shape = shape_of(source, FLAGS)
        if shape is None:
            continue
        if shape.compiled is None:
            continue
        compiled_shapes += 1
        grouped += shape.order is not None
        for _ in range(4):
            text, at = _text_with_a_piece_of(source, rng)
            for eos in (False, True):
                for captures in (None, {}):
                    by_walk = None if captures is None else {}
                    compiled = shape.decide(text, at, eos, captures)
                    assert compiled == shape.walk(text, at, eos, by_walk), (source, text, at)
                    assert captures == by_walk, (source, text, at, eos)
                    compared += 1
                    if compiled[0] == UNDECIDED and compiled[1] is not None:
                        # Resumed from its pause on more text: compiled as walked.
                        more = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))
                        resumed, by_walk = {}, {}
                        assert (shape.decide(text + more, at, False, resumed, compiled[1])
                                == shape.walk(text + more, at, False, by_walk, compiled[1])), (source, text, more)
                        assert resumed == by_walk, (source, text, more)
    assert compiled_shapes > 200 and grouped > 50, (compiled_shapes, grouped)


def test_library_shapes_are_compiled():
    """Every library delimiter decided by string operations runs as a compiled shape (kimi-k2's call id with its
    named group of several items and its run that gives characters back included)."""
    from examples import list_families, load_family
    from parsing import load_template

    walked = []
    for name in list_families():
        template = load_template(load_family(name).template)
        for field in template.fields.values():
            for delim in (field.open, field.close):
                shapes = [] if delim is None else [delim.shape] if delim.shape is not None else list(
                    delim.split_shapes or ())
                walked += [(name, delim.source) for shape in shapes if shape.compiled is None]
    assert not walked, walked


def test_runs_read_their_class_as_the_regex_module_does():
    """A run's matcher is the standard library's ``re`` where the class reads the same there
    (`parsing.shapes._run_matcher`): ``\\s`` written out as `REGEX_WHITESPACE` is ``regex``'s ``\\s`` over every code
    point (the standard library's also takes \\x1c-\\x1f), and bracket sets of characters, ranges and ``\\s`` give the
    same runs as ``regex`` on text of every kind of character; ``\\w`` and ``\\d`` stay with ``regex``."""
    import re
    import sys

    from parsing.shapes import REGEX_WHITESPACE, _run_matcher

    every = "".join(map(chr, range(sys.maxunicode + 1))).replace("\ud800", "")  # one string, one findall each
    ours = "".join(re.findall(f"[{REGEX_WHITESPACE}]", every))
    assert ours == "".join(regex.findall(r"\s", every, flags=FLAGS))
    sample = "".join(chr(c) for c in [*range(0, 0x250), 0x85, 0xA0, 0x1680, *range(0x2000, 0x2030), 0x205F, 0x3000,
                                      0x1C, 0x1D, 0x1E, 0x1F, 0xFEFF, 0x10000, 0x1F600])
    rng = random.Random(1416)
    classes = [r"\s", r"[^\s<]", r"[^>\n]", r"[^<]", r"[^:<\s]", r"[^\[\]{}\s]", r"[\w.-]", r"\d", r"\w", r"[a-z_]",
               r"[^\s\-\]]", r"[ \t]"]
    for cls in classes:
        matcher = _run_matcher(cls, FLAGS)
        assert (type(matcher) is re.Pattern) == ("\\w" not in cls and "\\d" not in cls), cls
        reference = regex.compile(f"(?:{cls})*", FLAGS)
        for _ in range(200):
            text = "".join(rng.choice(sample) for _ in range(rng.randint(0, 12)))
            at = rng.randint(0, len(text))
            assert matcher.match(text, at).end() == reference.match(text, at).end(), (cls, text, at)


@pytest.mark.parametrize("text", ["xx<|b|> functions.get_w:0 <|a|>{", "xx<|b|>functions_get_w_12<|a|>", "xx<|b|> f:1 <|c",
                                  "xx<|b|>functions_a_b_<|a|>", "xx<|b|> functions.x:12:3 <|a|>"])
def test_a_pause_inside_a_named_group_resumes_after_the_buffer_moves(text):
    """kimi-k2's call id: a named group holding several items (group marks). Streamed character by character, every
    pause resumes to the answer deciding from the start gives, captures included, also once the buffer has lost or
    gained text before the shape (positions in a pause are offsets from the shape's start)."""
    source = (r"<\|b\|>\s*(?P<id>(?:functions\.)?(?P<name>[^:<\s]+):\d+|functions_(?P<name>[^<\s]+)_\d+)\s*"
              r"<\|a\|>")
    shape = shape_of(source, FLAGS)
    assert shape is not None and shape.order is not None
    compiled = regex.compile(source, regex.DOTALL)
    resumed = 0
    for cut in range(3, len(text)):
        status, pause = shape.decide(text[:cut], 2, False, {})
        assert (status, pause) == shape.walk(text[:cut], 2, False, {}), cut  # compiled, as the walk
        if status != UNDECIDED or pause is None:
            continue
        for stop in range(cut + 1, len(text) + 1):
            for buf, at in ((text[:stop], 2), (text[1:stop], 1), ("zzz" + text[:stop], 5)):  # same, lost, gained
                from_pause, from_start = {}, {}
                answer = shape.decide(buf, at, False, from_pause, pause)
                assert answer == shape.decide(buf, at, False, from_start), (cut, stop, buf)
                assert from_pause == from_start, (cut, stop, buf)
                by_walk = {}
                assert answer == shape.walk(buf, at, False, by_walk, pause) and by_walk == from_pause, (cut, stop)
                if answer[0] == MATCH:
                    assert from_start == {k: v for k, v in compiled.match(buf, at).groupdict().items() if v is not None}
                resumed += 1
    assert resumed > 20


def test_cut_off_is_a_proper_prefix_at_the_edge():
    """`parsing.shapes.cut_off`: whether the buffer ends inside one of the literals, from ``at`` (also at or past
    the buffer's end), against its definition on random literals and buffers."""
    from parsing.shapes import cut_off

    rng = random.Random(1418)
    for _ in range(20000):
        literals = tuple("".join(rng.choice("ab<") for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 3)))
        buf = "".join(rng.choice("ab<") for _ in range(rng.randint(0, 6)))
        at = rng.randint(0, len(buf) + 2)
        tail = buf[at:] if at <= len(buf) else None
        expected = tail is not None and any(len(lit) > len(tail) and lit.startswith(tail) for lit in literals)
        assert cut_off(literals, buf, at) is expected, (literals, buf, at)


def _runs_template(n: int) -> dict:
    return {"start_anchor": "S", "fields": {"content": {}, "x": {"open_pattern": "<a>" + "[^<]*<b>" * n,
                                                                 "close": "</x>", "repeats": True}}}


def test_a_long_shape_keeps_the_walk_and_streams_within_its_budget():
    """A hostile template (found by the lead): ``<a>`` then 300 times ``[^<]*<b>``, streamed 3 characters at a time.
    Written out as Python, every pause compiled a resume of the rest of the shape (generated code quadratic in the
    shape: a 5 s time budget ran out at character 0). A shape of more than `MAX_COMPILED_ITEMS` items keeps the
    generic walk: the stream parses within the budget to the one-shot message."""
    from parsing import ResponseParser, load_template, parse_response
    from parsing.shapes import MAX_COMPILED_ITEMS

    template = load_template(_runs_template(300))
    shape = template.fields["x"].open.shape
    assert shape is not None and shape.compiled is None
    assert sum(len(items) for items, _ in shape.branches) > MAX_COMPILED_ITEMS
    text = "<a>" + "x<b>" * 300 + "</x>"
    parser = ResponseParser(template, prefix="S", time_budget=5)
    for start in range(0, len(text), 3):
        parser.feed(text[start:start + 3])
    assert parser.finalize()[0] == parse_response(text, template, prefix="S")


def test_a_shape_keeps_a_bounded_number_of_resumes():
    """A compiled shape near `MAX_COMPILED_ITEMS` streamed a character at a time pauses at every item: it compiles at
    most `MAX_RESUMES` resume functions, then resumes by the walk, with the one-shot message."""
    from parsing import ResponseParser, load_template, parse_response
    from parsing.shapes import MAX_RESUMES

    template = load_template(_runs_template(20))
    shape = template.fields["x"].open.shape
    assert shape.compiled is not None
    text = "<a>" + "x<b>" * 20 + "</x>"
    parser = ResponseParser(template, prefix="S")
    for char in text:
        parser.feed(char)
    assert parser.finalize()[0] == parse_response(text, template, prefix="S")
    assert len(shape.resumes) == MAX_RESUMES  # every item paused: the cap was reached, not passed


def _compiled_shapes(template) -> list:
    """The shapes of a compiled template's delimiters (split variants included) that are written out as Python."""
    shapes = []
    delimiters = [template.start_anchor] + [d for f in template.fields.values() for d in (f.open, f.close)]
    for delim in delimiters:
        if delim is None:
            continue
        found = [delim.shape] + list(getattr(delim, "split_shapes", None) or ())
        shapes += [s for s in found if s is not None and s.compiled is not None]
    return shapes


def test_the_shapes_of_one_template_share_a_budget_of_generated_code():
    """A hostile template (trial 8): 230 fields, each open pattern a shape of 46 items (under the per-shape cap),
    streamed a character at a time, compiled each shape and made resume functions for all of them: 1.5 s to load,
    and the parse ran past a 10 s budget where the walk takes 0.3 s. The shapes of one template now share
    `CodeBudget`: at most MAX_TEMPLATE_COMPILED_ITEMS items at compile and MAX_TEMPLATE_RESUME_ITEMS in resumes;
    past it they walk, with the same messages (checked against transformers)."""
    from transformers.utils.chat_parsing import parse_response as reference

    from parsing import ResponseParser, load_template, parse_response
    from parsing.shapes import MAX_TEMPLATE_COMPILED_ITEMS, MAX_TEMPLATE_RESUME_ITEMS

    fields = {"content": {}}
    for f in range(40):
        fields[f"f{f}"] = {"open_pattern": f"<{f:02x}" + r"[^<]*<b>" * 10, "close": f"</{f:02x}>", "repeats": True}
    spec = {"start_anchor": "S", "fields": fields}
    template = load_template(copy.deepcopy(spec))
    compiled = _compiled_shapes(template)
    assert 0 < sum(s.size for s in compiled) <= MAX_TEMPLATE_COMPILED_ITEMS
    assert len(compiled) < 40  # the budget ran out: the later shapes walk
    text = "".join(f"<{f:02x}" + "x<b>" * 10 + f"y</{f:02x}>" for f in range(40))
    parser = ResponseParser(template, prefix="S")
    for char in text:
        parser.feed(char)
    streamed = parser.finalize()[0]
    made = sum(s.size * len(s.resumes) for s in compiled)
    assert 0 < made <= MAX_TEMPLATE_RESUME_ITEMS
    assert streamed == parse_response(text, template, prefix="S") == reference(text, copy.deepcopy(spec), prefix="S")


def test_every_library_template_is_written_out_whole():
    """The template budget is far above what the library needs: every library shape within the per-shape cap is
    compiled, and streaming every transcript in 1- to 7-character feeds never runs out of resume budget."""
    from examples import list_families, load_family
    from parsing import ResponseParser, load_template
    from parsing.shapes import MAX_COMPILED_ITEMS
    from parsing.streams import fixed_chunks

    for name in list_families():
        family = load_family(name)
        template = load_template(family.template)
        budget = None
        for shape in _compiled_shapes(template):
            budget = shape.budget
        delimiters = [template.start_anchor] + [d for f in template.fields.values() for d in (f.open, f.close)]
        for delim in delimiters:
            for shape in [getattr(delim, "shape", None)] + list(getattr(delim, "split_shapes", None) or ()):
                if shape is not None and shape.size <= MAX_COMPILED_ITEMS and shape.branches:
                    assert shape.compiled is not None or shape.size == 0, (name, shape)
        for size in (1, 3, 7):
            for transcript in family.transcripts:
                parser = ResponseParser(template, prefix=transcript.prefix, tools=transcript.tools or None)
                try:
                    for chunk in fixed_chunks(transcript.output, size):
                        parser.feed(chunk)
                    parser.finalize()
                except ValueError:
                    pass  # a transcript that records an error
        if budget is not None:
            assert budget.resume_left > 0, name


def test_many_runs_giving_characters_back_keep_the_regex():
    """Trial 8: ``<q>`` then 24 times ``[a-z]*a`` (171 characters): each run that gives characters back holds the rest
    of its sequence, and reading them grew exponentially (over a minute to load the template). Past
    MAX_GIVE_BACK_RUNS such runs the pattern is no shape: it keeps the regex, with the reference's messages."""
    from transformers.utils.chat_parsing import parse_response as reference

    from parsing import ResponseParser, load_template, parse_response
    from parsing.shapes import MAX_GIVE_BACK_RUNS, shape_of

    assert shape_of("<q>" + "[a-z]*a" * MAX_GIVE_BACK_RUNS, FLAGS) is not None
    assert shape_of("<q>" + "[a-z]*a" * (MAX_GIVE_BACK_RUNS + 1), FLAGS) is None
    spec = {"start_anchor": "S", "fields": {"content": {}, "x": {"open_pattern": "<q>" + "[a-z]*a" * 24,
                                                                 "close": "</x>", "repeats": True}}}
    template = load_template(copy.deepcopy(spec))
    assert template.fields["x"].open.shape is None
    for text in ("<q>" + "ba" * 30 + "</x>rest", "<q>" + "ba" * 10 + "</x>", "plain"):
        parser = ResponseParser(template, prefix="S")
        for char in text:
            parser.feed(char)
        assert parser.finalize()[0] == parse_response(text, template, prefix="S") \
            == reference(text, copy.deepcopy(spec), prefix="S")
