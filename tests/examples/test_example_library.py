"""The template library (examples/families): every transcript parses to its hand-written message,
with the transformers reference and with our `parsing`, in one shot and under many chunkings.

Where a transcript records ``actual`` (the template language cannot express the format, or the
format makes the parse fail), the test asserts that recorded outcome and checks that it really
differs from the hand-written expectation, so a fix in `parsing` or the template shows up as a
failure to update the transcript.
"""

import random

import pytest

import examples
from transformers.utils import chat_parsing as reference

import parsing
from parsing.streams import feed_all, merged_events, random_chunks, replay_chunks


def get_parser_module(name):
    """``reference`` = transformers 5.23 chat_parsing (the oracle); ``parsing`` = ours."""
    return reference if name == "reference" else parsing


FAMILIES = examples.list_families()
CASES = [(name, t.id) for name in FAMILIES for t in examples.load_family(name).transcripts]
ERRORS = {"ValueError": ValueError, "KeyError": KeyError, "RuntimeError": RuntimeError}
STANDARD_FIELDS = {"reasoning_content", "content", "tool_calls"}


def chunkings(family, transcript):
    """The chunkings every transcript is parsed under (named, for failure messages)."""
    text = transcript.output
    yield "one chunk", [text]
    yield "one char per chunk", list(text)
    for seed in range(3):
        yield f"replay seed {seed}", replay_chunks(text, family.special_tokens, seed)
    for seed in range(2):
        yield f"random cuts seed {seed}", random_chunks(text, random.Random(seed), max_size=7)
    if transcript.chunks is not None:
        yield "recorded chunks", list(transcript.chunks)


def stream(module, family, transcript, chunks):
    """Feed chunks to a ResponseParser; return (message, events)."""
    return feed_all(module.ResponseParser(family.template, prefix=transcript.prefix, tools=transcript.tools), chunks)


def assert_outcome(outcome, run, label):
    if "error" in outcome:
        with pytest.raises(ERRORS[outcome["error"]]):
            run()
    else:
        assert run() == outcome["message"], label


@pytest.mark.parametrize("parser_name", ["reference", "parsing"])
@pytest.mark.parametrize("family_name,transcript_id", CASES, ids=[f"{f}/{t}" for f, t in CASES])
def test_transcript_parses_to_expected(parser_name, family_name, transcript_id):
    module = get_parser_module(parser_name)
    fam = examples.load_family(family_name)
    t = fam.transcript(transcript_id)
    outcome = t.outcome

    def one_shot():
        return module.parse_response(t.output, fam.template, prefix=t.prefix, tools=t.tools)

    assert_outcome(outcome, one_shot, "one-shot parse_response")
    for label, chunks in chunkings(fam, t):
        assert "".join(chunks) == t.output
        assert_outcome(outcome, lambda: stream(module, fam, t, chunks)[0], f"streamed, {label}")


MESSAGE_CASES = [(f, t) for f, t in CASES if "message" in examples.load_family(f).transcript(t).outcome]


@pytest.mark.parametrize("family_name,transcript_id", MESSAGE_CASES, ids=[f"{f}/{t}" for f, t in MESSAGE_CASES])
def test_parsing_events_match_reference(family_name, transcript_id):
    """Same events as the reference (after merging adjacent chunks of one region), including the
    prefix's initial events, in one chunk and in replayed chunks."""
    fam = examples.load_family(family_name)
    t = fam.transcript(transcript_id)
    ref = get_parser_module("reference")
    for label, chunks in [("one chunk", [t.output]), ("replay", replay_chunks(t.output, fam.special_tokens, 7))]:
        ours = merged_events(stream(parsing, fam, t, chunks)[1])
        theirs = merged_events(stream(ref, fam, t, chunks)[1])
        assert ours == theirs, label


@pytest.mark.parametrize("family_name", FAMILIES)
def test_family_is_complete(family_name):
    fam = examples.load_family(family_name)
    tpl = fam.template
    assert set(tpl["fields"]) <= STANDARD_FIELDS, "field names must be the ones chat templates read"
    assert "content" in tpl["fields"]
    assert tpl.get("defaults") == {"role": "assistant"}
    assert fam.notes.startswith("# ") and len(fam.notes) > 300
    for key in ("title", "models", "source", "special_tokens", "markers"):
        assert fam.meta.get(key), key
    assert len(fam.transcripts) >= 5
    covers = {c for t in fam.transcripts for c in t.covers}
    not_applicable = fam.meta.get("not_applicable", {})
    for kind in ("plain", "tool_call", "parallel_tool_calls", "truncated"):
        assert kind in covers or not_applicable.get(kind), kind
    for kind, why in not_applicable.items():
        assert kind not in covers and len(why) > 20, kind
    if "reasoning_content" in tpl["fields"]:
        assert "reasoning" in covers
    for t in fam.transcripts:
        assert t.title
        if t.actual is not None:
            assert t.why, f"{t.id}: a recorded difference needs its explanation"
            assert f"`{t.id}`" in fam.notes, f"{t.id}: NOTES.md must explain the recorded difference"
            assert t.actual != ({"message": t.expected} if t.expected is not None else {"error": t.expected_error})
            assert set(t.actual) in ({"message"}, {"error"})
    # every special token of the family occurs in its prompts or outputs (no stale metadata)
    corpus = "".join(fam.prefixes.values()) + "".join(t.output for t in fam.transcripts)
    for tok in fam.special_tokens:
        assert tok in corpus, tok


@pytest.mark.parametrize("family_name", FAMILIES)
def test_template_loads_and_anchor_is_in_every_prefix(family_name):
    fam = examples.load_family(family_name)
    ref = get_parser_module("reference")
    ref.ResponseParser(fam.template, prefix="")  # validates like load_response_template
    parsing.load_template(fam.template)
    pattern = anchor_pattern(fam.template)
    for name, text in fam.prefixes.items():
        matches = list(pattern.finditer(text))
        assert matches, f"prefix {name!r} lacks the start anchor"
        # the last anchor is the generation prompt: what follows is at most a short prefill
        assert len(text) - matches[-1].end() <= 40, f"prefix {name!r}: last anchor is not the generation prompt"


def anchor_pattern(template):
    import regex

    if "start_anchor" in template:
        anchors = template["start_anchor"]
        anchors = [anchors] if isinstance(anchors, str) else anchors
        return regex.compile("|".join(regex.escape(a) for a in anchors), regex.DOTALL)
    return regex.compile(template["start_anchor_pattern"], regex.DOTALL)


@pytest.mark.parametrize("family_name", FAMILIES)
def test_prefix_variants_exist(family_name):
    """The multi-turn prefix holds an earlier assistant turn (and, where the family calls tools,
    an earlier call and its tool result: at least three anchors); the tool-response variant exists."""
    fam = examples.load_family(family_name)
    calls_tools = not fam.meta.get("not_applicable", {}).get("tool_call")
    assert "multi_turn" in fam.prefixes
    anchors = len(anchor_pattern(fam.template).findall(fam.prefixes["multi_turn"]))
    assert anchors >= (3 if calls_tools else 2)
    if calls_tools:
        assert "after_tool_response" in fam.prefixes
        assert any("after_tool_response" in t.covers for t in fam.transcripts)
    assert any("multi_turn" in t.covers for t in fam.transcripts)


def test_readme_lists_every_family():
    from pathlib import Path

    readme = (Path(examples.__file__).parent / "README.md").read_text(encoding="utf-8")
    for name in FAMILIES:
        assert f"| `{name}` |" in readme, name
