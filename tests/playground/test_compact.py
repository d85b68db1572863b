"""Compact runs and parses (issue #10 item 3): the same values back, a fraction of the memory."""

import gc
import json
import random
import tracemalloc

import examples
from parsing import ResponseParser
from parsing.streams import tokenish_chunks
from playground.compact import ChunkedText, IntArray, Offsets, event_log, segment_log
from playground.session import Run, parse_run, template_to_text
from playground.state import Session

# The literal ChatML template of the measurement (~90,000 events for 200 KB): a tag per region, so every
# token-sized chunk is an event (the project default, SKELETON_TEMPLATE, uses patterns that hold more).
TPL = template_to_text(examples.literal_chatml_template())
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def realistic_output(chars: int, seed: int = 0) -> str:
    """Reasoning, answers and tool calls in ChatML markup, about ``chars`` characters."""
    rng = random.Random(seed)
    words = "the of and a to in is you that it he was for on are as with his they at be this have from".split()
    parts, size = [], 0
    while size < chars:
        call = json.dumps({"name": "get_weather", "arguments": {"city": " ".join(rng.choices(words, k=2))}})
        part = (f"<think>{' '.join(rng.choices(words, k=300))}</think>{' '.join(rng.choices(words, k=100))}"
                f"<tool_call>{call}</tool_call>")
        parts.append(part)
        size += len(part)
    return "".join(parts) + "<|im_end|>"


def test_int_array_widens_only_when_needed():
    a = IntArray([1, 200])
    assert a.nbytes == 2
    a.append(70_000)
    assert list(a) == [1, 200, 70_000] and a.nbytes == 12
    a.append(2**40)
    assert a[-1] == 2**40 and a.nbytes == 32


def test_chunked_text_is_the_chunks():
    chunks = ["<think>", "", "héllo", " wörld", "</think>", "\ud83d\ude00"]
    ct = ChunkedText(chunks)
    kept = [c for c in chunks if c]
    assert list(ct) == kept and len(ct) == len(kept) and ct[1] == "héllo" and ct[-1] == kept[-1]
    assert ct[1:3] == tuple(kept[1:3]) and ct.text == "".join(kept)
    assert ct == tuple(kept) and ct == ChunkedText(kept)
    starts = Offsets(ct, 10)
    expected, pos = [], 10
    for c in kept:
        expected.append(pos)
        pos += len(c)
    assert list(starts) == expected


def test_records_give_back_every_event_segment_and_delimiter():
    text = realistic_output(5_000)
    chunks = list(tokenish_chunks(text))
    parser = ResponseParser(TPL, prefix=PREFIX, spans=True, recover=True)
    events = [dict(e, phase="prefix") for e in parser.initial_events]
    for c in chunks:
        events += [dict(e, phase="stream") for e in parser.feed(c)]
    message, final = parser.finalize()
    events += [dict(e, phase="final") for e in final]
    log = event_log()
    for e in events:
        log.append(e)
    log.bind(parser.stream_text)
    assert list(log) == [dict(e, index=i) for i, e in enumerate(events)]
    segs = segment_log()
    for s in parser.segments():
        segs.append(s)
    assert list(segs) == parser.segments()
    # A window holds exactly the rows touching it.
    a, b = 1000, 1400
    want = [dict(e, index=i) for i, e in enumerate(events)
            if e["type"] == "region_chunk" and e["end"] >= a and e["start"] <= b]
    assert log.window(a, b, type="region_chunk") == want


def test_a_200kb_run_keeps_under_3mb_per_session():
    raw = realistic_output(200_000)
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        sess = Session()
        run = Run(prefix=PREFIX, chunks=tokenish_chunks(raw), template_text=TPL, source="paste")
        view = parse_run(run)
        sess.keep(run, view, {"agree": True, "ref_message": view.message, "differences": [], "skipped": None})
        del run, view
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(sess.run.chunks) > 90_000 and len(sess.view.events) > 90_000  # the shape: ~90,000 events
    assert held < 3 * 2**20, f"{held / 2**20:.2f} MB"  # was 38 MB before the compact form
    assert abs(sess.nbytes - held) < held  # the estimate used for eviction is in the right range
    fresh = parse_run(sess.run)  # what was kept is what a parse of the kept run gives
    assert sess.view.message == fresh.message and len(sess.view.message["tool_calls"]) > 100
    assert sess.view.events[-50:] == fresh.events[-50:] and list(sess.view.chunk_starts) == list(fresh.chunk_starts)
