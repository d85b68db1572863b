"""Differential harness: our `parsing` engine against the transformers 5.23 reference.

For one case (template, prefix, output, tools) and one chunking of the output it runs

* the reference one-shot `parse_response`, and the same as a stream: the prefix, then the whole output
  in one `feed` (its events are the expected events),
* the reference `ResponseParser` fed the given chunks,
* our `ResponseParser` fed the same chunks (and our one-shot `parse_response`),

and compares final messages (type-strict, NaN-safe) or exceptions (category, type and text), and the event lists
after merging adjacent `region_chunk` events of the same field.

Expected result for ours, for every chunking: the reference's ONE-SHOT result. The reference's own
streaming result equals it for most chunkings; where it does not (its known flaw: committing a delimiter
match that more text could still change, or searching from where it last flushed), the chunking is
recorded as a divergence. The end of the prefix is a chunk boundary even in the reference's one-shot
parse (it runs the prefix through the parser before the output), and ours behaves the same there;
`ref_ideal` (prefix tail and output as ONE stream, no boundary at all) only shows where that boundary
changes the result.

`DIFF_SELF_CHECK=1` makes "ours" the reference itself (to validate corpus and harness without `parsing`);
in that mode divergent chunkings are expected to reproduce the reference's streaming result.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from transformers.utils import chat_parsing as ref  # noqa: E402

from parsing.streams import feed_all, fixed_chunks, merged_events, random_cuts  # noqa: E402
from transformers.utils.chat_parsing.response_templates import load_response_template as ref_load  # noqa: E402

SELF_CHECK = os.environ.get("DIFF_SELF_CHECK", "") not in ("", "0")

if SELF_CHECK:
    ours = ref
else:
    import parsing as ours  # noqa: E402

FIXTURES = HERE / "fixtures"

RANDOM_CHUNKINGS = 30
FIXED_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 13, 31)


# ----------------------------------------------------------------------------------------------
# corpus


def load_cases() -> list[dict]:
    cases: list[dict] = []
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data:
            case = dict(case)
            case["_file"] = path.name
            cases.append(case)
    ids = [c["id"] for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise AssertionError(f"duplicate case ids: {sorted(dupes)}")
    return cases


def resolve_tools(spec: Any) -> Any:
    """`"py:NAME"` names a list of real Python functions in `pytools.py`; anything else is JSON tools."""
    if isinstance(spec, str) and spec.startswith("py:"):
        import pytools

        return list(getattr(pytools, spec[3:]))
    return copy.deepcopy(spec)


# ----------------------------------------------------------------------------------------------
# chunkings


def chunkings(text: str, case_id: str, n_random: int = RANDOM_CHUNKINGS) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = [("whole", [text])]
    out += [(f"size{s}", fixed_chunks(text, s)) for s in FIXED_SIZES]
    for k in range(n_random):
        rng = random.Random(f"{case_id}#{k}")
        out.append((f"random{k}", random_cuts(text, rng, empty_rate=0.05)))
    return out


# ----------------------------------------------------------------------------------------------
# outcomes and comparison


def error_category(exc: BaseException) -> str:
    for cls in (KeyError, RuntimeError, ValueError, TypeError, TimeoutError):
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


@dataclass
class Outcome:
    message: Any = None
    events: list | None = None  # None when an exception was raised
    error: BaseException | None = None
    post: dict = field(default_factory=dict)  # after-finalize calls -> error category or "no error"

    @property
    def error_cat(self) -> str | None:
        return None if self.error is None else error_category(self.error)

    def describe(self) -> str:
        if self.error is not None:
            return f"raises {self.error_cat}: {str(self.error)[:200]}"
        return f"message={self.message!r}"


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that distinguishes True/1/1.0, treats NaN as equal to NaN and requires the same dict key
    order (the reference's message order: defaults first, then first assignment; it shows in JSON)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def same_error(expected: BaseException, got: BaseException) -> bool:
    """Same exception category, `got` an instance of `expected`'s exact type (ours may subclass it, as
    `TemplateError` does `ValueError`), and the same text to the letter: callers match on the reference's
    messages."""
    return (error_category(expected) == error_category(got) and isinstance(got, type(expected))
            and str(got) == str(expected))


def same_outcome(a: Outcome, b: Outcome, events: bool = True) -> bool:
    if (a.error is None) != (b.error is None):
        return False
    if a.error is not None:
        return same_error(a.error, b.error)
    if not strict_equal(a.message, b.message):
        return False
    if events and a.events is not None and b.events is not None:
        return strict_equal(merged_events(a.events), merged_events(b.events))
    return True


def diff_text(expected: Outcome, got: Outcome) -> str:
    if (expected.error is None) != (got.error is None) or expected.error is not None:
        return f"expected {expected.describe()} | got {got.describe()}"
    if not strict_equal(expected.message, got.message):
        return f"expected message {expected.message!r} | got {got.message!r}"
    ee, ge = merged_events(expected.events or []), merged_events(got.events or [])
    for i, (x, y) in enumerate(zip(ee, ge)):
        if not strict_equal(x, y):
            return f"merged event #{i}: expected {x!r} | got {y!r}"
    return f"merged event count: expected {len(ee)} | got {len(ge)}; extra: {(ee[len(ge):] or ge[len(ee):])[:3]!r}"


# ----------------------------------------------------------------------------------------------
# runners


def run_stream(impl, template, prefix, chunks, tools=None, post=()) -> Outcome:
    out = Outcome()
    try:
        parser = impl.ResponseParser(copy.deepcopy(template), prefix, tools=resolve_tools(tools))
        out.message, out.events = feed_all(parser, chunks)
    except Exception as exc:  # noqa: BLE001 - the category is what gets compared
        out.error = exc
        return out
    for call in post:
        try:
            parser.feed("more") if call == "feed" else parser.finalize()
            out.post[call] = "no error"
        except Exception as exc:  # noqa: BLE001
            out.post[call] = error_category(exc)
    return out


def run_oneshot(impl, template, prefix, output, tools=None) -> Outcome:
    out = Outcome()
    try:
        out.message = impl.parse_response(output, copy.deepcopy(template), prefix=prefix, tools=resolve_tools(tools))
    except Exception as exc:  # noqa: BLE001
        out.error = exc
    return out


def ref_expected(template, prefix, output, tools=None) -> Outcome:
    """What ours must give for any chunking: the reference's one-shot result, with the events of the same run
    (the prefix, then the whole output in one feed)."""
    return run_stream(ref, template, prefix, [output], tools)


def ref_ideal(template, prefix, output, tools=None) -> Outcome:
    """Reference with the truncated prefix and the whole output as one single stream (no boundary at the end
    of the prefix). Not what ours must give; it shows where the prefix boundary changes the result."""
    try:
        compiled = ref_load(copy.deepcopy(template))
    except Exception as exc:  # noqa: BLE001
        return Outcome(error=exc)
    if prefix is None:
        return run_stream(ref, template, prefix, [output], tools)
    stream = compiled.truncate_past_last_anchor(prefix) + output
    return run_stream(ref, template, "", [stream], tools)


@dataclass
class Report:
    case_id: str
    mismatches: list[str] = field(default_factory=list)  # "chunking: detail"
    divergences: list[str] = field(default_factory=list)  # chunkings where the reference streaming != its one-shot


class CaseRunner:
    """Runs one case against many chunkings, reusing the reference baselines."""

    def __init__(self, case_id, template, prefix, output, tools=None, post=()):
        self.case_id, self.template, self.prefix, self.output = case_id, template, prefix, output
        self.tools, self.post = tools, tuple(post)
        self.ref_oneshot = run_oneshot(ref, template, prefix, output, tools)
        self.ref_oneshot_stream = run_stream(ref, template, prefix, [output], tools, self.post)
        self.report = Report(case_id)
        # sanity of the oracle itself: parse_response == feed(whole) + finalize
        assert same_outcome(self.ref_oneshot, self.ref_oneshot_stream, events=False)

    def check_oneshot(self) -> None:
        got = run_oneshot(ours, self.template, self.prefix, self.output, self.tools)
        expected = self.ref_oneshot
        if not same_outcome(expected, got, events=False):
            self.report.mismatches.append(f"parse_response one-shot: {diff_text(expected, got)}")

    def check(self, label: str, chunks: list[str]) -> None:
        ref_stream = run_stream(ref, self.template, self.prefix, chunks, self.tools, self.post)
        got = run_stream(ours, self.template, self.prefix, chunks, self.tools, self.post)
        divergent = not same_outcome(ref_stream, self.ref_oneshot_stream)
        if divergent:
            self.report.divergences.append(label)
        expected = ref_stream if (SELF_CHECK or not divergent) else self.ref_oneshot_stream
        where = f"{label} chunks={_short(chunks)}"
        if not same_outcome(expected, got):
            self.report.mismatches.append(f"{where}: {diff_text(expected, got)}")
        elif got.events is not None:
            empty = [e for e in got.events if e.get("type") == "region_chunk" and not e.get("text")]
            if empty:
                self.report.mismatches.append(f"{where}: empty region_chunk events {empty[:2]!r}")
        if got.error is None and got.post != ref_stream.post:
            self.report.mismatches.append(f"{where}: after finalize expected {ref_stream.post} | got {got.post}")

    def run_all(self, chunk_list) -> Report:
        self.check_oneshot()
        for label, chunks in chunk_list:
            self.check(label, chunks)
        return self.report


def _short(value: Any, width: int = 240) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width // 2] + " ... " + text[-width // 2 :]


def format_report(report: Report, limit: int = 6, width: int = 900) -> str:
    lines = [f"case {report.case_id}: {len(report.mismatches)} mismatching chunkings"]
    lines += ["  " + (m if len(m) <= width else m[: width // 2] + " ... " + m[-width // 2 :]) for m in report.mismatches[:limit]]
    if len(report.mismatches) > limit:
        lines.append(f"  ... and {len(report.mismatches) - limit} more")
    return "\n".join(lines)


class Hangs(Exception):
    """Raised by SIGALRM in a parse that runs past its time (the reference's loop is Python code, so it stops)."""


# `run_with_alarm`: after its first ring, the alarm rings again this often (seconds) until the call stops.
ALARM_REPEAT_S = 0.25


def run_with_alarm(fn, seconds: float = 5.0):
    """``fn()`` (an `Outcome`), or the string "hangs" when it runs past ``seconds`` of wall time (main thread only).
    For templates the reference never returns on (zero-width delimiters that keep firing at one place).

    The alarm rings again every `ALARM_REPEAT_S` until ``fn`` stops: a property run on a loaded machine was found
    31 minutes into the reference's endless loop inside this call, its events grown to 19 GB (its one ring had not
    stopped it; why was not found). A ring between ``fn``'s end and the timer's stop is caught too."""
    import signal

    def ring(*_):
        raise Hangs

    old = signal.signal(signal.SIGALRM, ring)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, ALARM_REPEAT_S)
            out = fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Hangs:
        return "hangs"
    finally:
        signal.signal(signal.SIGALRM, old)
    return "hangs" if isinstance(getattr(out, "error", None), Hangs) else out
