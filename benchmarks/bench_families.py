"""Every library family, our parser against transformers 5.23's, measured in the same process.

Two measures, each the best of several runs that alternate the two parsers (so a burst of load on a shared
machine hits both alike), taken round after round over all the families (so one burst cannot hit all of one
family's runs):

1. Transcripts: every transcript of a family streamed through the family's own template in fixed-size chunks
   (4 characters by default): parser construction with the prefix and tools, every feed, finalize. Ours starts
   from a template compiled once (`parsing.load_template`), as a server or the playground does. The reference
   is measured two ways in the same run: built from the template dict for every response, as a caller of
   ``tokenizer.parse_response`` does (the measure issue #14 set its targets on), and from its own compiled
   template (``load_response_template``, reused), the fastest way to call it.
2. Long streams: per family, one of its transcripts with its reasoning (or, where the family has none, its
   answer text) replaced by 25 KB and 200 KB of reasoning-like words, followed by the transcript's tool call in
   the family's own syntax. Reported per feed, against the reference and against our parser running the
   literal-only template of ``bench_stream.py`` on a stream of the same size in the same run (ours and the
   literal-only template run `OURS_PER_REFERENCE_RUN` times per run of the reference, alternating).

Every run checks that both parsers give the same message (or raise the same exception type). Times are CPU
time of the process (``--wall``: wall-clock), which a shared machine's load disturbs far less.

    .venv/bin/python benchmarks/bench_families.py                      # everything
    .venv/bin/python benchmarks/bench_families.py --families gpt_oss kimi_k2 --sizes 25
    .venv/bin/python benchmarks/bench_families.py --profile gpt_oss    # where our time goes (cProfile)

Targets (issue #14): every family at least 2x faster than the reference (built from the dict) on its
transcripts, geometric mean at least 3x; on the 25 KB / 200 KB streams at least 3x / 10x; our µs per feed with each family's template within
1.5x of the literal-only template's.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from bench_stream import PREFIX as LITERAL_PREFIX  # noqa: E402
from bench_stream import TEMPLATE as LITERAL_TEMPLATE  # noqa: E402
from bench_stream import make_generation, make_reasoning  # noqa: E402

from examples import list_families, load_family  # noqa: E402

# Long streams: runs of ours and of the literal-only template per run of the reference. A run of ours takes a tenth
# of the reference's time or less, so more of them cost little, and one burst of load on a shared machine then no
# longer decides a family's row (a single pair of runs put one family under its target once in three runs).
OURS_PER_REFERENCE_RUN = 3

# CPU time of this process, not wall-clock time: on a shared machine a burst of load stretches wall-clock time
# of whichever parser happens to run then, while CPU time stays close to the work done (--wall for wall-clock).
CLOCK = time.process_time
from parsing import ResponseParser, load_template  # noqa: E402
from parsing.streams import fixed_chunks  # noqa: E402


@dataclass
class Case:
    """One stream to parse: its prefix, the tools offered, and the chunks of generated text."""

    prefix: str
    tools: list
    chunks: list


def run_case(parser_cls, template, case: Case):
    """Parse one case; returns the message, or the exception type name where parsing raised."""
    try:
        parser = parser_cls(template, prefix=case.prefix, tools=case.tools or None)
        for piece in case.chunks:
            parser.feed(piece)
        return parser.finalize()[0]
    except Exception as exc:  # noqa: BLE001 - some transcripts are meant to raise (truncated calls)
        return type(exc).__name__


def time_cases(parser_cls, template, cases: list, inner: int) -> float:
    """Seconds for ``inner`` passes over every case (garbage collection paused, as in bench_stream)."""
    gc.collect()
    gc.disable()
    try:
        start = CLOCK()
        for _ in range(inner):
            for case in cases:
                run_case(parser_cls, template, case)
        return CLOCK() - start
    finally:
        gc.enable()


def time_feeds(parser_cls, template, case: Case) -> tuple[float, object]:
    """Seconds spent in ``feed`` over the case's chunks, and the final message."""
    parser = parser_cls(template, prefix=case.prefix, tools=case.tools or None)
    gc.collect()
    gc.disable()
    try:
        start = CLOCK()
        for piece in case.chunks:
            parser.feed(piece)
        elapsed = CLOCK() - start
    finally:
        gc.enable()
    return elapsed, parser.finalize()[0]


def transcript_cases(family, chunk: int) -> list:
    return [Case(t.prefix, t.tools, fixed_chunks(t.output, chunk)) for t in family.transcripts]


def long_stream_case(family, kb: int, chunk: int) -> tuple[Case, str]:
    """A transcript of ``family`` whose reasoning (else its answer, else nothing: the words go first, as answer
    text) is replaced by ``kb`` KB of words, keeping the family's tool call after it. Returns the case and the
    words, which must reach the message intact."""
    words = make_reasoning(kb)
    ranked = []
    for t in family.transcripts:
        message = t.outcome.get("message")
        if not message or t.chunks is not None:
            continue
        has_call = bool(message.get("tool_calls"))
        reasoning, content = message.get("reasoning_content"), message.get("content")
        if has_call and isinstance(reasoning, str) and reasoning and reasoning in t.output:
            ranked.append((0, t, reasoning))
        elif has_call and isinstance(content, str) and content and content in t.output:
            ranked.append((1, t, content))
        elif has_call:
            ranked.append((2, t, None))
        elif isinstance(content, str) and content in t.output:
            ranked.append((3, t, content))
    if not ranked:
        raise SystemExit(f"{family.name}: no transcript to build a long stream from")
    _, t, replaced = min(ranked, key=lambda r: r[0])
    output = t.output.replace(replaced, words, 1) if replaced else words + "\n" + t.output
    return Case(t.prefix, t.tools, fixed_chunks(output, chunk)), words


def contains(value, words: str) -> bool:
    if isinstance(value, str):
        return words in value
    if isinstance(value, dict):
        return any(contains(v, words) for v in value.values())
    if isinstance(value, list):
        return any(contains(v, words) for v in value)
    return False


def geomean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def profile(name: str, chunk: int, inner: int, kb: int) -> None:
    import cProfile
    import pstats

    family = load_family(name)
    compiled = load_template(family.template)
    cases = transcript_cases(family, chunk)
    print(f"== {name}: transcripts x {inner}")
    prof = cProfile.Profile()
    prof.runcall(time_cases, ResponseParser, compiled, cases, inner)
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    case, _ = long_stream_case(family, kb, chunk)
    print(f"== {name}: {kb} KB stream")
    prof = cProfile.Profile()
    prof.runcall(time_feeds, ResponseParser, compiled, case)
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", default=None, help="family names (default: all)")
    ap.add_argument("--chunk", type=int, default=4, help="characters per feed")
    ap.add_argument("--repeat", type=int, default=5, help="alternating runs per measure; the fastest is kept")
    ap.add_argument("--inner", type=int, default=10, help="passes over a family's transcripts per run")
    ap.add_argument("--sizes", type=int, nargs="*", default=[25, 200], help="long-stream reasoning sizes in KB")
    ap.add_argument("--no-transcripts", action="store_true", help="only the long streams")
    ap.add_argument("--profile", metavar="FAMILY", help="profile our parser on one family and exit")
    ap.add_argument("--wall", action="store_true", help="measure wall-clock time instead of CPU time")
    args = ap.parse_args()
    if args.wall:
        global CLOCK
        CLOCK = time.perf_counter
    if args.profile:
        profile(args.profile, args.chunk, args.inner, (args.sizes or [25])[0])
        return

    from transformers.utils.chat_parsing import ResponseParser as ReferenceParser
    from transformers.utils.chat_parsing.response_templates import load_response_template

    names = args.families or list_families()
    families = [load_family(n) for n in names]
    disagreements = []

    if not args.no_transcripts:
        prepared = []
        for family in families:
            ours_t = load_template(family.template)
            ref_t = load_response_template(family.template)
            cases = transcript_cases(family, args.chunk)
            for case in cases:
                if run_case(ResponseParser, ours_t, case) != run_case(ReferenceParser, ref_t, case):
                    disagreements.append(f"{family.name}: a transcript parses differently")
            prepared.append((family, ours_t, ref_t, cases, [], [], []))
        # Round after round over all families (not one family's runs back to back): a family's runs are spread
        # over the whole measure, so one burst of load on a shared machine cannot hit all of them.
        for _ in range(args.repeat):
            for family, ours_t, ref_t, cases, ours_runs, dict_runs, ref_runs in prepared:
                ours_runs.append(time_cases(ResponseParser, ours_t, cases, args.inner))
                dict_runs.append(time_cases(ReferenceParser, family.template, cases, args.inner))
                ref_runs.append(time_cases(ReferenceParser, ref_t, cases, args.inner))
        rows = []
        for family, _, _, cases, ours_runs, dict_runs, ref_runs in prepared:
            per = args.inner * len(cases)
            rows.append((family.name, len(cases), sum(len(c.chunks) for c in cases), min(ours_runs) / per * 1e6,
                         min(dict_runs) / per * 1e6, min(ref_runs) / per * 1e6))
        print(f"Transcripts: {args.chunk}-character chunks; {'wall-clock' if args.wall else 'CPU'} µs per transcript "
              f"(construction with prefix and tools, feeds, finalize), best of {args.repeat} alternating runs (rounds over all families) of "
              f"{args.inner} passes; ours from its compiled template; the reference built from the template dict "
              f"('from dict', as tokenizer.parse_response does) and from its own compiled template ('compiled')")
        print()
        print("| family | transcripts | feeds | ours µs | reference from dict µs | reference compiled µs "
              "| speed-up vs from dict | speed-up vs compiled |")
        print("|---|---|---|---|---|---|---|---|")
        for name, n, feeds, ours, ref_dict, ref in rows:
            print(f"| {name} | {n} | {feeds} | {ours:.1f} | {ref_dict:.1f} | {ref:.1f} | {ref_dict / ours:.2f}x "
                  f"| {ref / ours:.2f}x |")
        by_dict = [r[4] / r[3] for r in rows]
        by_compiled = [r[5] / r[3] for r in rows]
        print(f"| geometric mean | | | | | | {geomean(by_dict):.2f}x | {geomean(by_compiled):.2f}x |")
        print(f"\nslowest vs from dict: {min(rows, key=lambda r: r[4] / r[3])[0]} at {min(by_dict):.2f}x; "
              f"vs compiled: {min(rows, key=lambda r: r[5] / r[3])[0]} at {min(by_compiled):.2f}x; "
              f"families under 2x vs from dict: {sum(v < 2 for v in by_dict)}, under 1x vs compiled: "
              f"{sum(v < 1 for v in by_compiled)}")
        print()

    ref_repeat = max(2, args.repeat // 2)
    for kb in args.sizes:
        literal = Case(LITERAL_PREFIX, [], fixed_chunks(make_generation(kb), args.chunk))
        prepared = []
        for family in families:
            ours_t = load_template(family.template)
            ref_t = load_response_template(family.template)  # built before the feeds are timed either way
            case, words = long_stream_case(family, kb, args.chunk)
            prepared.append((family, ours_t, ref_t, case, words, [], [], []))
        for _ in range(ref_repeat):  # round after round over all families, as for the transcripts
            for family, ours_t, ref_t, case, words, ours_runs, ref_runs, lit_runs in prepared:
                elapsed, message = time_feeds(ReferenceParser, ref_t, case)
                ref_runs.append((elapsed, message if not ref_runs else None))  # (one message kept: memory)
                for _ in range(OURS_PER_REFERENCE_RUN):  # ours costs a tenth of the reference: more samples
                    elapsed, message = time_feeds(ResponseParser, ours_t, case)
                    ours_runs.append((elapsed, message if not ours_runs else None))
                    lit_runs.append(time_feeds(ResponseParser, LITERAL_TEMPLATE, literal)[0])
        rows = []
        for family, ours_t, ref_t, case, words, ours_runs, ref_runs, lit_runs in prepared:
            ours_msg, ref_msg = ours_runs[0][1], ref_runs[0][1]
            if ours_msg != ref_msg:
                disagreements.append(f"{family.name}: the {kb} KB stream parses differently")
            if not contains(ours_msg, words):
                disagreements.append(f"{family.name}: the {kb} KB of words did not reach the message intact")
            feeds = len(case.chunks)
            ours = min(r[0] for r in ours_runs) / feeds * 1e6
            ref = min(r[0] for r in ref_runs) / feeds * 1e6
            lit = min(lit_runs) / len(literal.chunks) * 1e6
            rows.append((family.name, feeds, ours, ref, lit))
        print(f"Long streams, {kb} KB of reasoning then a call: {'wall-clock' if args.wall else 'CPU'} µs per feed "
              f"({args.chunk}-character chunks), the reference's best of {ref_repeat} runs, ours and 'literal-only' "
              f"(our parser on the literal-only template of bench_stream.py, same size) each the best of "
              f"{ref_repeat * OURS_PER_REFERENCE_RUN}, all alternating in the same run, in rounds over all families")
        print()
        print("| family | feeds | ours µs/feed | reference µs/feed | speed-up | literal-only µs/feed "
              "| ours / literal-only |")
        print("|---|---|---|---|---|---|---|")
        for name, feeds, ours, ref, lit in rows:
            print(f"| {name} | {feeds} | {ours:.2f} | {ref:.2f} | {ref / ours:.1f}x | {lit:.2f} | {ours / lit:.2f} |")
        print(f"| geometric mean | | | | {geomean([r[3] / r[2] for r in rows]):.1f}x | "
              f"| {geomean([r[2] / r[4] for r in rows]):.2f} |")
        print(f"\nslowest against the reference: {min(rows, key=lambda r: r[3] / r[2])[0]} at "
              f"{min(r[3] / r[2] for r in rows):.1f}x; most above literal-only: "
              f"{max(rows, key=lambda r: r[2] / r[4])[0]} at {max(r[2] / r[4] for r in rows):.2f}")
        print()

    for line in disagreements:
        print("DISAGREEMENT:", line)
    if disagreements:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
