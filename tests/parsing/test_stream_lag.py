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


@pytest.mark.parametrize("size", [1, 4])
def test_a_close_named_inside_a_json_string_does_not_hold_the_rest_of_the_call(size):
    """A model-author trial: a hermes call whose string argument mentions ``</tool_call>`` held everything after
    that mention (the ``regex`` module reports a partial match of the whole close alternation there, though no
    alternative matches even partially), re-reading it on every feed: 5 KB streamed ran out of its 1 s regex
    budget where the one-shot parse took 8 ms. The mention is now released as argument text once it is ruled out,
    and the streamed message is the one-shot one."""
    family = load_family("hermes")
    template = load_template(family.template)
    prefix = family.prefixes["tools"]
    half = "lorem ipsum dolor " * 30
    output = ('<tool_call>\n{"name": "f", "arguments": {"s": "%s</tool_call> %s"}}\n</tool_call><|im_end|>'
              % (half, half))
    mention = output.index("</tool_call>")
    parser = ResponseParser(template, prefix=prefix)
    streamed = []
    chunks = fixed_chunks(output, size)
    for i, chunk in enumerate(chunks):
        streamed += [e["text"] for e in parser.feed(chunk) if e["type"] == "region_chunk"]
        if sum(map(len, chunks[:i + 1])) >= mention + 200:
            break
    # the mention and most of what follows it have streamed as the call's text ('<tool_call>' went to no region)
    assert "</tool_call> lorem ipsum" in "".join(streamed)
    for chunk in chunks[i + 1:]:
        parser.feed(chunk)
    from parsing import parse_response

    assert parser.finalize()[0] == parse_response(output, template, prefix=prefix)


@pytest.mark.parametrize("family_name, head, fill, tail", [
    ("gpt_oss", "<|channel|>commentary to=functions.f ", "x", '<|message|>{"a": 1}<|call|>'),
    ("qwen3_coder", "<tool_call>\n<function=loo", "x y ",
     ">\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>"),
])
def test_a_long_partial_match_is_not_reread_on_every_feed(monkeypatch, family_name, head, fill, tail):
    """A model-author trial: a call header thousands of characters long (a partial match of the open pattern until
    its end arrives) was re-read from its start on every feed past `WAIT_CHARS`: quadratic, and streamed one
    character at a time it ran out of its 1 s regex budget at 8 KB where the one-shot parse took 14 ms. The
    rechecks now come after the held text has grown by a share of itself: the characters the regex reads stay
    linear in the stream (counted, not timed)."""
    from parsing import budget, parse_response

    family = load_family(family_name)
    template = load_template(family.template)
    prefix = family.transcripts[0].prefix
    output = head + fill * (6000 // len(fill)) + tail
    read = [0]
    run = budget.SearchClock.run

    def counting(self, delim, method, text, pos, *args, **kwargs):
        read[0] += len(text) - pos
        return run(self, delim, method, text, pos, *args, **kwargs)

    monkeypatch.setattr(budget.SearchClock, "run", counting)
    parser = ResponseParser(template, prefix=prefix)
    for chunk in fixed_chunks(output, 1):
        parser.feed(chunk)
    message = parser.finalize()[0]
    monkeypatch.setattr(budget.SearchClock, "run", run)
    assert message == parse_response(output, template, prefix=prefix)
    assert read[0] < 40 * len(output), f"the regex read {read[0]:,} characters for a {len(output):,}-character stream"


@pytest.mark.parametrize("family_name, head, fill, tail", [
    ("seed_oss", "<seed:tool_call>\n<function=", "x",
     ">\n<parameter=a>1</parameter>\n</function>\n</seed:tool_call>"),
    ("qwen3_coder", "<tool_call>\n<function=", "xy",
     ">\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>"),
    ("gpt_oss", "<|channel|>commentary to=functions.f ", "x", '<|message|>{"a": 1}<|call|>'),
    ("magistral", "[TOOL_CALLS]f[CALL_ID]", "x", '[ARGS]{"a": 1}</s>'),
    ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions_", "ab_",
     '0<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|><|tool_calls_section_end|><|im_end|>'),
])
def test_a_long_undecided_shape_is_not_reread_on_every_feed(monkeypatch, family_name, head, fill, tail):
    """A delimiter decided by string operations (`parsing.shapes`) whose run reaches the buffer edge (a function
    name or call header thousands of characters long, streamed a character at a time) was decided again from its
    start on every feed: quadratic (a 32 KB seed_oss name took 3.8 s). While more text only continues that run,
    the hold stands without reading the held text again: the characters the shapes read stay linear in the stream
    (counted, not timed), and the message is the one-shot one."""
    from parsing import parse_response
    from parsing.shapes import Shape

    family = load_family(family_name)
    template = load_template(family.template)
    prefix = family.transcripts[0].prefix
    output = head + fill * (6000 // len(fill)) + tail
    read = [0]
    decide = Shape.decide

    def counting(self, buf, at, *args, **kwargs):
        read[0] += len(buf) - at
        return decide(self, buf, at, *args, **kwargs)

    monkeypatch.setattr(Shape, "decide", counting)
    parser = ResponseParser(template, prefix=prefix)
    for chunk in fixed_chunks(output, 1):
        parser.feed(chunk)
    message = parser.finalize()[0]
    monkeypatch.setattr(Shape, "decide", decide)
    assert message == parse_response(output, template, prefix=prefix)
    assert read[0] < 40 * len(output), f"shapes read {read[0]:,} characters for a {len(output):,}-character stream"


@pytest.mark.parametrize("family_name", ["seed_oss", "gpt_oss", "qwen3_coder", "kimi_k2", "hunyuan_a13b"])
def test_a_held_shape_is_decided_once_per_feed_and_resumed_where_it_stopped(monkeypatch, family_name):
    """A held shape that the next feed decides (`ScanState.still_deferred`) hands that decision to `shape_step`
    instead of deciding the same shape on the same text again (seed_oss's call open decided it twice, four walks),
    and a shape still undecided resumes its walk where the last one stopped (`parsing.shapes.PAUSE_BRANCH`): no
    feed decides one shape twice at one place of one buffer, shapes read fewer characters than from their start,
    and every transcript streams to its one-shot message."""
    from parsing import parse_response
    from parsing.shapes import Shape

    family = load_family(family_name)
    template = load_template(family.template)
    decide = Shape.decide
    seen: list = []
    walked = [0, 0]  # characters from the walk's start to the buffer edge: resumed, from the shape's start

    def recording(self, buf, at, eos, captures=None, pause=None):
        seen.append((id(self), buf, at, eos))
        walked[pause is not None] += len(buf) - at
        return decide(self, buf, at, eos, captures, pause)

    monkeypatch.setattr(Shape, "decide", recording)
    def outcome(run):
        try:
            return run()
        except ValueError as exc:  # a transcript cut off inside a value: the same error both ways
            return type(exc)

    for transcript in family.transcripts:
        parser = ResponseParser(template, prefix=transcript.prefix, tools=transcript.tools or None)

        def streamed():
            for chunk in fixed_chunks(transcript.output, 4):
                seen.clear()
                parser.feed(chunk)
                assert len(seen) == len(set(seen)), (transcript.output, chunk)
            return parser.finalize()[0]

        got = outcome(streamed)
        monkeypatch.setattr(Shape, "decide", decide)
        assert got == outcome(lambda: parse_response(transcript.output, template, prefix=transcript.prefix,
                                                     tools=transcript.tools or None))
        monkeypatch.setattr(Shape, "decide", recording)
    assert walked[1] > 0, walked


@pytest.mark.parametrize("family_name", ["qwen3", "hermes", "hunyuan_a13b"])
def test_a_balanced_quote_lookbehind_reads_a_long_argument_once(monkeypatch, family_name):
    """A 25 KB argument that mentions the tool-call close 500 times inside its JSON string: each mention is a
    candidate whose balanced-quote lookbehind (`parsing.scanner._balanced_holds`) must be decided, and reading the
    argument from the region's open at every candidate was quadratic (5 s for 100 KB). The reading goes on from
    the last candidate: the characters it reads stay linear in the stream (counted, not timed), and the message is
    the one-shot one."""
    import json

    from parsing import parse_response, scanner

    family = load_family(family_name)
    template = load_template(family.template)
    prefix = family.transcripts[0].prefix
    close = {"qwen3": "</tool_call>", "hermes": "</tool_call>", "hunyuan_a13b": "</tool_calls>"}[family_name]
    code = f"x = 10  # the tag {close} ends one tool call\n" * 500
    call = json.dumps({"name": "run", "arguments": {"code": code}})
    if family_name == "hunyuan_a13b":
        output = f"<tool_calls>[{call}]{close}"
    else:
        output = f"<tool_call>\n{call}\n{close}"
    read = [0]
    states = scanner._quote_states

    def counting(state, text, start, stop, outside, inside):
        read[0] += stop - start
        return states(state, text, start, stop, outside, inside)

    monkeypatch.setattr(scanner, "_quote_states", counting)
    parser = ResponseParser(template, prefix=prefix)
    for chunk in fixed_chunks(output, 4):
        parser.feed(chunk)
    message = parser.finalize()[0]
    monkeypatch.setattr(scanner, "_quote_states", states)
    assert message == parse_response(output, template, prefix=prefix)
    assert message["tool_calls"][0]["function"]["arguments"] == {"code": code}
    assert 0 < read[0] < 3 * len(output), f"read {read[0]:,} characters for a {len(output):,}-character stream"
