"""Streaming speed and memory: our parser against transformers 5.23's, measured in the same run.

Streams N KB of reasoning text followed by a tool call, in 4-character chunks, through both parsers and prints
microseconds per `feed`, their ratio, and the characters each parser holds in its scan buffer at the end.

    .venv/bin/python benchmarks/bench_stream.py            # 50 KB and 800 KB
    .venv/bin/python benchmarks/bench_stream.py --sizes 50 --chunk 4

Targets (issue #2): ours at least 3x faster at 50 KB and 20x at 800 KB; our cost per feed at 800 KB within
1.5x of ours at 50 KB; with spans off, the scan buffer does not grow with the text already emitted.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import examples  # noqa: E402
from parsing import ResponseParser  # noqa: E402
from parsing.streams import fixed_chunks  # noqa: E402

# ChatML with literal delimiters only: the baseline that bench_families.py compares every library template against
# (the project default, examples.default_template(), uses patterns).
TEMPLATE = examples.literal_chatml_template()
PREFIX = "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
WORDS = ("the user wants weather for a city so I should call the tool with the city name and then answer "
         "briefly, checking units < and > signs, tags like <b> and partial </thin words").split()


def make_reasoning(kb: int, seed: int = 0) -> str:
    """About ``kb`` thousand characters of reasoning-like words (with ``<``, ``>``, tags and a cut ``</thin``)."""
    rng = random.Random(seed)
    parts, size = [], 0
    while size < kb * 1000:
        word = rng.choice(WORDS)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


def make_generation(kb: int, seed: int = 0) -> str:
    """The literal-only template's test stream: ``kb`` KB of reasoning, then one tool call, then the end token."""
    reasoning = make_reasoning(kb, seed)
    call = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
    return f"<think>\n{reasoning}\n</think>\n\n<tool_call>\n{call}\n</tool_call><|im_end|>"


def stream(parser_cls, text: str, chunk: int) -> tuple[float, int, dict, int]:
    """Returns (seconds spent in feed, number of feeds, message, chars in the scan buffer at the end)."""
    parser = parser_cls(TEMPLATE, prefix=PREFIX)
    chunks = fixed_chunks(text, chunk)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for piece in chunks:
            parser.feed(piece)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    held = len(getattr(parser, "_buf", getattr(parser, "_buffer", "")))
    message, _ = parser.finalize()
    return elapsed, len(chunks), message, held


def held_memory(parser_cls, text: str, chunk: int) -> tuple[float, float]:
    """(MB held by the parser after streaming all chunks, peak MB while streaming), via tracemalloc.

    Events are dropped as they come, as a consumer that renders them would; what remains allocated is what
    the parser itself holds (scan buffer, body of the open region, message so far).
    """
    import tracemalloc

    chunks = fixed_chunks(text, chunk)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    parser = parser_cls(TEMPLATE, prefix=PREFIX)
    for piece in chunks:
        parser.feed(piece)
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del parser
    return (held - base) / 1e6, (peak - base) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 800], help="reasoning sizes in KB")
    ap.add_argument("--chunk", type=int, default=4, help="characters per feed")
    ap.add_argument("--repeat", type=int, default=3, help="runs per parser and size; the fastest is kept")
    args = ap.parse_args()
    from transformers.utils.chat_parsing import ResponseParser as ReferenceParser

    rows = []
    for kb in args.sizes:
        text = make_generation(kb)
        # Best of N, alternating the two parsers, so a burst of load on a shared machine hits both alike.
        ours_runs, ref_runs = [], []
        for _ in range(args.repeat):
            ours_runs.append(stream(ResponseParser, text, args.chunk))
            ref_runs.append(stream(ReferenceParser, text, args.chunk))
        ours_s, feeds, ours_msg, ours_held = min(ours_runs, key=lambda r: r[0])
        ref_s, _, ref_msg, ref_held = min(ref_runs, key=lambda r: r[0])
        if ours_msg != ref_msg:
            raise SystemExit(f"messages differ at {kb} KB")
        ours_mem = held_memory(ResponseParser, text, args.chunk)
        ref_mem = held_memory(ReferenceParser, text, args.chunk)
        rows.append((kb, feeds, ours_s / feeds * 1e6, ref_s / feeds * 1e6, ours_held, ref_held, ours_mem, ref_mem))

    print(f"chunk = {args.chunk} chars; time per feed in microseconds; buffer = chars held in the scan buffer "
          "at the end of the stream; held/peak MB = memory the parser holds after the last feed / peak while "
          "streaming (tracemalloc, events discarded as they come)")
    print()
    print("| reasoning | feeds | ours µs/feed | reference µs/feed | speed-up | ours buffer | reference buffer "
          "| ours held / peak MB | reference held / peak MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kb, feeds, ours, ref, oh, rh, om, rm in rows:
        print(f"| {kb} KB | {feeds} | {ours:.2f} | {ref:.2f} | {ref / ours:.1f}x | {oh} | {rh} "
              f"| {om[0]:.2f} / {om[1]:.2f} | {rm[0]:.2f} / {rm[1]:.2f} |")
    if len(rows) >= 2:
        print()
        print(f"ours, µs per feed at {rows[-1][0]} KB / at {rows[0][0]} KB: {rows[-1][2] / rows[0][2]:.2f}")


if __name__ == "__main__":
    main()
