"""The template library (examples/families): every transcript parses to its hand-written message,
with the transformers reference and with our engine, in one shot and under many chunkings.

Where a transcript records ``actual`` (the template language cannot express the format, or the
format makes the parse fail), the test asserts that recorded outcome and checks that it really
differs from the hand-written expectation, so a fix in the engine or the template shows up as a
failure to update the transcript.
"""

import random

import pytest

import examples
from transformers.utils import chat_parsing as reference

import parsing as engine  # our engine (docs/engine-api.md)


def get_parser_module(name):
    """``reference`` = transformers 5.23 chat_parsing (the oracle); ``engine`` = our ``parsing``."""
    return reference if name == "reference" else engine


FAMILIES = examples.list_families()
CASES = [(name, t.id) for name in FAMILIES for t in examples.load_family(name).transcripts]
ERRORS = {"ValueError": ValueError, "KeyError": KeyError, "RuntimeError": RuntimeError}
STANDARD_FIELDS = {"reasoning_content", "content", "tool_calls"}


def random_cuts(text, seed, max_len=7):
    """Chunks cut at arbitrary positions (markers split anywhere), seeded."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        step = rng.randint(1, max_len)
        out.append(text[i : i + step])
        i += step
    return out


def chunkings(family, transcript):
    """The chunkings every transcript is parsed under (named, for failure messages)."""
    text = transcript.output
    yield "one chunk", [text]
    yield "one char per chunk", list(text)
    for seed in range(3):
        yield f"replay seed {seed}", examples.replay_chunks(text, family.special_tokens, seed)
    for seed in range(2):
        yield f"random cuts seed {seed}", random_cuts(text, seed)
    if transcript.chunks is not None:
        yield "recorded chunks", list(transcript.chunks)


def stream(module, family, transcript, chunks):
    """Feed chunks to a ResponseParser; return (message, events)."""
    p = module.ResponseParser(family.template, prefix=transcript.prefix, tools=transcript.tools)
    events = list(p.initial_events)
    for c in chunks:
        events.extend(p.feed(c))
    message, final = p.finalize()
    return message, events + final


def assert_outcome(outcome, run, label):
    if "error" in outcome:
        with pytest.raises(ERRORS[outcome["error"]]):
            run()
    else:
        assert run() == outcome["message"], label


@pytest.mark.parametrize("parser_name", ["reference", "engine"])
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


def merge_chunks(events):
    """Merge adjacent region_chunk events of one field: hold-back may split text differently."""
    out = []
    for e in events:
        if out and e["type"] == "region_chunk" and out[-1]["type"] == "region_chunk" and out[-1]["field"] == e["field"]:
            out[-1] = {**out[-1], "text": out[-1]["text"] + e["text"]}
        else:
            out.append(dict(e))
    return out


MESSAGE_CASES = [(f, t) for f, t in CASES if "message" in examples.load_family(f).transcript(t).outcome]


@pytest.mark.parametrize("family_name,transcript_id", MESSAGE_CASES, ids=[f"{f}/{t}" for f, t in MESSAGE_CASES])
def test_engine_events_match_reference(family_name, transcript_id):
    """Same events as the reference (after merging adjacent chunks of one region), including the
    prefix's initial events, in one chunk and in replayed chunks."""
    fam = examples.load_family(family_name)
    t = fam.transcript(transcript_id)
    ref = get_parser_module("reference")
    for label, chunks in [("one chunk", [t.output]), ("replay", examples.replay_chunks(t.output, fam.special_tokens, 7))]:
        ours = merge_chunks(stream(engine, fam, t, chunks)[1])
        theirs = merge_chunks(stream(ref, fam, t, chunks)[1])
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
    engine.load_template(fam.template)
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
