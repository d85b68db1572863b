"""Probe suite: does a response template survive the ways real model output goes wrong?

`probe(template, prefixes=..., tools=...)` writes model outputs from the template's own delimiters
(and the family's prompt prefixes when given) for each failure class seen in bug reports against
deployed parsers (vLLM, SGLang, llama.cpp, Ollama, mlx-lm), parses each one in one shot and under
several chunkings, and reports per class: pass, fail, not applicable, or a known limit of the
template language. The message each probe should give is known from how the probe was built
(which text went into the reasoning, the answer, each call), never from a parser.

Classes (issue #11):

====  =====================================================================================
a     generation stops inside a region (reasoning, a call, right after an open marker, token limit)
b     delimiter text inside a value (a close tag in a JSON string, in an XML value, in code)
c     an open marker as ordinary text (``<think>`` named in the answer, a call drafted in the reasoning)
d     whitespace and text around tool calls (nothing overwritten, no whitespace streamed as content)
e     repeated blocks (several calls, several tool sections, a second reasoning block)
f     prompt-side state (prefilled reasoning, thinking switched off, after a tool response, multi-turn)
g     markers split across stream chunks at every position, multi-byte text in arguments
h     drift real models emit (missing opener or close, text inside a tool section, bare JSON calls,
      argument JSON that strict JSON rejects: double-encoded, single quotes, raw newlines in strings)
i     false positives (a JSON example in the answer that looks like a call stays content)
====  =====================================================================================

How outputs are written: fields are recognised by the names chat templates read
(``reasoning_content``, ``content``, ``tool_calls``); literal delimiters are written as they are,
patterns through `parsing.doctor.samples`; a tool call is written by inverting the field's
``transform`` (which variable becomes the name, the arguments, the id) and serialising the
arguments for its content parser (``json`` with its knobs, ``xml-inline`` through its
``tag_pattern``, ``kv-lines``). The end-of-turn token is the implicit field's close; tool-section
wrappers are the implicit field's closes named like tool tokens (``<|tool_calls_section_begin|>``).
Where the template gives the probe nothing to write from (no tool-call field, a transform it
cannot invert) the classes that need it are "not applicable", with the reason.

Modules: `parsing.doctor.probe_formats` reads the template as a format, `parsing.doctor.probe_cases`
writes the probes and their suggested fixes, this module runs them and reports.
"""

from __future__ import annotations

import json
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any

from ..errors import TemplateError
from ..streams import merged_events, parse_stream, random_chunks, replay_chunks
from ..template import load_template, loads_template
from .probe_cases import CLASSES, DEFAULT_TOOLS, ERROR, NO_CALL, ProbeCase, apply_fix, build_cases
from .probe_formats import _Shape, _delim, _prompts
from .reference_flaws import early_commit
from .samples import SampleError

__all__ = ["CLASSES", "ERROR", "NO_CALL", "ProbeCase", "ProbeResult", "ClassResult", "ProbeReport", "apply_fix",
           "probe"]

# ---------------------------------------------------------------------------------------------
# Reports


@dataclass
class ProbeResult:
    """The outcome of one probe.

    Attributes:
        case: the `ProbeCase`.
        status: ``"pass"``, ``"fail"`` or ``"limit"`` (failed, and the template language cannot do better).
        got: what parsing gave where it went wrong: a message dict or ``{"error": "ValueError: ..."}``
            (None when it passed).
        chunking: the chunking that went wrong (``"one shot"``, ``"one character per chunk"``, ``"cut at 17"``...).
        detail: a sentence on what went wrong.
        fix_verified: for a failure with a mechanical fix: True if the probe passes once the fix is applied,
            False if it does not (the fix is part of the answer only); None when not tried. For a
            ``reference_only`` failure it is checked with the reference too.
        reference_only: only the transformers reference got it wrong (``reference=True``); our engine did not.
    """

    case: ProbeCase
    status: str
    got: Any = None
    chunking: str | None = None
    detail: str = ""
    fix_verified: bool | None = None
    reference_only: bool = False

    @property
    def suggestion(self) -> str:
        """The change to suggest for this failure: the probe class's own (``case.suggestion``), except for a
        failure only the transformers reference has (``reference_only``): the class's change is written for our
        engine's faults, so it is suggested there only when checked to make the reference pass too ("" else;
        ``detail`` then says what the reference does wrong, where that can be told)."""
        if self.reference_only and self.fix_verified is not True:
            return ""
        return self.case.suggestion

    @property
    def checked(self) -> str:
        """What was checked about `suggestion`: ``"checked: the probe passes with it"`` (naming the reference
        too for a reference-only failure), ``"not enough on its own"``, or "" when not tried."""
        if self.fix_verified is True:
            return "checked: the probe passes with it" + (", with our engine and with the transformers reference"
                                                         if self.reference_only else "")
        return "not enough on its own" if self.fix_verified is False else ""

    def to_dict(self) -> dict:
        out = {**self.case.to_dict(), "status": self.status}
        if self.status != "pass":
            out.update(got=self.got, chunking=self.chunking, detail=self.detail, reference_only=self.reference_only)
            if self.status == "limit":
                out["limit"] = self.case.limit
            else:
                out["suggestion"] = self.suggestion
                if self.case.fix and self.suggestion:
                    out["fix"] = [{"path": ".".join(map(str, p)), "value": v} for p, v in self.case.fix]
                    out["fix_verified"] = self.fix_verified
        return out


@dataclass
class ClassResult:
    """All probes of one class.

    Attributes:
        cls: the class letter; title: its name.
        status: ``"fail"`` if any probe failed outright, else ``"limit"`` if any hit a known limit, else
            ``"pass"``; ``"n/a"`` when no probe applies (``reason`` says why).
        results: the `ProbeResult` list.
        reason: why the class does not apply (status ``"n/a"``).
    """

    cls: str
    title: str
    status: str
    results: list = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict:
        return {"class": self.cls, "title": self.title, "status": self.status, "reason": self.reason,
                "probes": [r.to_dict() for r in self.results]}


@dataclass
class ProbeReport:
    """What `probe` found.

    Attributes:
        classes: one `ClassResult` per class, in class order.
        notes: what the probe assumed about the template (end-of-turn token, tool sections, prefix states).
    """

    classes: list
    notes: list = field(default_factory=list)

    @property
    def results(self) -> list:
        """Every `ProbeResult`, class by class."""
        return [r for c in self.classes for r in c.results]

    @property
    def passed(self) -> bool:
        """True when no probe failed outright (known limits and not-applicable classes do not count)."""
        return all(r.status != "fail" for r in self.results)

    @property
    def score(self) -> tuple[int, int]:
        """(probes passed, probes run)."""
        results = self.results
        return sum(r.status == "pass" for r in results), len(results)

    def counts(self) -> dict:
        """Probe counts by status: ``{"pass": n, "fail": n, "limit": n}``."""
        out = {"pass": 0, "fail": 0, "limit": 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def summary(self) -> str:
        """One line: ``"41/45 probes pass, 0 fail, 4 known limits (classes a, h)"``."""
        counts = self.counts()
        limited = sorted({r.case.cls for r in self.results if r.status == "limit"})
        text = f"{counts['pass']}/{sum(counts.values())} probes pass, {counts['fail']} fail"
        if counts["limit"]:
            text += f", {counts['limit']} known limit{'s' if counts['limit'] != 1 else ''}"
            text += f" (class{'es' if len(limited) > 1 else ''} {', '.join(limited)})"
        return text

    def to_dict(self) -> dict:
        return {"passed": self.passed, "summary": self.summary(), "counts": self.counts(),
                "notes": list(self.notes), "classes": [c.to_dict() for c in self.classes]}

    def format(self, verbose: bool = False) -> str:
        """A readable report: one line per class, then each failure with its input, expected vs got and
        the suggested change (every probe with ``verbose``)."""
        lines = []
        for c in self.classes:
            if c.status == "n/a":
                lines.append(f"  {c.cls}  n/a    {c.title}: {c.reason}")
                continue
            passed = sum(r.status == "pass" for r in c.results)
            lines.append(f"  {c.cls}  {c.status:<6} {c.title} ({passed}/{len(c.results)})")
            for r in c.results:
                if r.status == "pass" and not verbose:
                    continue
                lines.append(f"       [{r.status}] {r.case.id}: {r.case.title}")
                if r.status == "pass":
                    continue
                lines.append(f"           prefix {r.case.prefix_name}; output {json.dumps(r.case.output, ensure_ascii=False)}")
                alt = " (or: " + "; ".join(_show(a) for a in r.case.accept) + ")" if r.case.accept else ""
                lines.append(f"           expected {_show(r.case.expected)}{alt}")
                lines.append(f"           got      {_show(r.got)} ({r.chunking})")
                if r.detail:
                    lines.append(f"           {r.detail}")
                if r.status == "limit":
                    lines.append(f"           known limit: {r.case.limit}")
                elif r.suggestion:
                    checked = f" [{r.checked}]" if r.checked else ""
                    lines.append(f"           suggested change: {r.suggestion}{checked}")
        head = [self.summary()] + [f"  note: {n}" for n in self.notes]
        return "\n".join(head + lines)


def _show(value: Any) -> str:
    if value == ERROR:
        return "a raised error"
    return "no tool call" if value == NO_CALL else json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Running


def _chunkings(case: ProbeCase, markers: list, seed: int) -> list:
    """The chunkings a probe is parsed under: one shot, one character per chunk, token-sized random pieces,
    markers as whole chunks with small pieces between (a detokenizing streamer), and with ``every_cut`` every
    two-piece cut (a marker split at every position, between the code points of an emoji sequence)."""
    text = case.output
    out = [("one shot", [text])]
    if len(text) > 1:
        out.append(("one character per chunk", list(text)))
    rng = random.Random(seed)
    for n in range(2):
        out.append((f"random pieces {n}", random_chunks(text, rng, max_size=6)))
    out.append(("markers as whole chunks", replay_chunks(text, markers, seed) or [text]))
    if case.every_cut:
        for i in range(1, len(text)):
            out.append((f"cut at {i}", [text[:i], text[i:]]))
    return out


def _matches(got: Any, expected: Any, case: ProbeCase, shape: "_Shape") -> bool:
    is_error = isinstance(got, dict) and set(got) == {"error"}
    if expected == ERROR:
        return is_error
    if expected == NO_CALL:
        if is_error:
            return True
        if not isinstance(got, dict) or shape.tools in got:
            return False
        return all(got.get(k) == v for k, v in case.keep.items())
    return got == expected


def _blank_content(events: list, content: str | None) -> bool:
    if content is None:
        return False
    current, text = None, ""
    for ev in merged_events(events):
        kind = ev.get("type")
        if kind == "region_open":
            current, text = ev.get("field"), ""
        elif kind == "region_chunk" and ev.get("field") == content:
            text += ev.get("text", "")
        elif kind == "region_close":
            if ev.get("field") == content and text and not text.strip():
                return True
            current, text = None, ""
    return bool(current == content and text and not text.strip())


#: The detail of a failure only the transformers reference has.
REFERENCE_ONLY = "the transformers reference parser gets this wrong (our engine does not)"


def _reference_stream(template: Any, prefix: str, chunks: list, tools: list) -> tuple[Any, list]:
    """Parse with the transformers reference: (message or {"error": ...}, events)."""
    from transformers.utils import chat_parsing

    events: list = []
    try:
        parser = chat_parsing.ResponseParser(template, prefix, tools=tools)
        events.extend(parser.initial_events)
        for chunk in chunks:
            events.extend(parser.feed(chunk))
        message, final = parser.finalize()
        return message, events + final
    except (ValueError, KeyError, RuntimeError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}, events


def _run(compiled: Any, case: ProbeCase, tools: list, markers: list, shape: _Shape,
         reference: bool = False) -> ProbeResult:
    wanted = (case.expected, *case.accept)
    for label, chunks in _chunkings(case, markers, seed=len(case.output)):
        outcome = parse_stream(compiled, case.prefix, chunks, tools=tools)
        got = outcome.result()
        events = outcome.events
        if outcome.error and outcome.error.startswith(("PatternTimeoutError", "TimeoutError", "BudgetExceeded")):
            # a catastrophic pattern: report it once instead of waiting for it under every chunking
            return ProbeResult(case, "fail", got, label, "a pattern ran past its time limit on this output")
        if not any(_matches(got, w, case, shape) for w in wanted):
            status = "limit" if case.limit else "fail"
            detail = ""
            if label != "one shot":
                detail = "the one-shot parse is right; this chunking is not"
            elif case.every_cut:
                detail = "wrong in one shot already, so the cause is not chunking: see the other classes"
            return ProbeResult(case, status, got, label, detail)
        if reference:
            ref_got, events = _reference_stream(shape.spec, case.prefix, chunks, tools)
            if not any(_matches(ref_got, w, case, shape) for w in wanted):
                status = "limit" if case.limit else "fail"
                flaw = early_commit(compiled, case.output, chunks, ref_got, case.expected)
                return ProbeResult(case, status, ref_got, f"transformers reference, {label}",
                                   REFERENCE_ONLY + (f": {flaw.describe()}" if flaw else ""), reference_only=True)
        if case.no_blank_content and _blank_content(events, shape.content):
            status = "limit" if case.limit else "fail"
            return ProbeResult(case, status, got, label,
                               "the stream opened a content region that holds only whitespace (an empty message "
                               "bubble while streaming; without join it would overwrite the content)")
    return ProbeResult(case, "pass")


def probe(template: Any, *, prefixes: dict | None = None, tools: list | None = None,
          reference: bool = False) -> ProbeReport:
    """Run the probe suite on a response template.

    Args:
        template: a template dict, its JSON text (never read as a path), or a `parsing.CompiledTemplate`.
        prefixes: prompt prefixes as the family's chat template renders them (name -> text, generation prompt
            included, as in ``examples/families/*/prefixes.json``). Each is read for the state it leaves the
            parser in (fresh, inside the reasoning, thinking off) and the prompt-state probes run after each.
            Without prefixes the probe writes three from the start anchor: a fresh turn, a prefilled reasoning
            opener and an empty reasoning block.
        tools: tool schemas the calls use (``apply_chat_template`` format); default: ``get_weather(city)``,
            ``get_time(tz)``, ``save_note(title, text)``. Probes call these names with string arguments.
        reference: also parse every probe, under every chunking, with the transformers reference parser
            (needs transformers installed; slower). Its streaming commits some regex matches our engine holds, so
            a template can pass with our engine and still break where transformers or vLLM parse it.

    Returns:
        a `ProbeReport` (``.passed``, ``.summary()``, ``.format()``, ``.to_dict()``).

    Raises:
        parsing.TemplateError: the template does not load.
    """
    # Text is parsed as JSON text only, never opened as a path: it may come from an editor or a request.
    compiled = loads_template(template) if isinstance(template, str) else load_template(template)
    spec = compiled.spec
    tools = list(tools) if tools else DEFAULT_TOOLS
    tool_names = {t.get("function", t).get("name") for t in tools if isinstance(t, dict)}
    for needed in ("get_weather", "get_time", "save_note"):
        if needed not in tool_names:
            tools = tools + [t for t in DEFAULT_TOOLS if t["function"]["name"] == needed]
    try:
        shape = _Shape(spec, tools)
    except SampleError as exc:
        return ProbeReport([ClassResult(c, t, "n/a", reason=f"the probe cannot read the template: {exc}")
                            for c, t in CLASSES.items()])
    prompts, skipped = _prompts(shape, spec, prefixes)
    cases, not_written = build_cases(shape, prompts)
    markers = _markers(shape)
    by_class: dict[str, list] = {c: [] for c in CLASSES}
    for case in cases:
        by_class[case.cls].append(_run(compiled, case, tools, markers, shape, reference))
    classes = []
    for c, title in CLASSES.items():
        results = by_class[c]
        if not results:
            reason = next((v for k, v in not_written.items() if k[0] == c), None) or _na_reason(c, shape)
            classes.append(ClassResult(c, title, "n/a", reason=reason))
            continue
        statuses = {r.status for r in results}
        status = "fail" if "fail" in statuses else "limit" if "limit" in statuses else "pass"
        classes.append(ClassResult(c, title, status, results))
    for results in by_class.values():
        for r in results:
            if r.status == "fail" and r.case.fix:
                r.fix_verified = _verify_fix(spec, r.case, tools, markers, shape, r.reference_only)
    notes = list(shape.notes) + skipped
    if shape.calls is None and shape.tools:
        notes.append(shape.calls_why)
    return ProbeReport(classes, notes)


def _verify_fix(spec: dict, case: ProbeCase, tools: list, markers: list, shape: _Shape,
                reference: bool = False) -> bool:
    """Whether the probe passes once the case's fix is applied (with ``reference``: with the transformers
    reference too, for a failure only the reference had)."""
    try:
        patched = load_template(apply_fix(spec, case.fix))
    except TemplateError:
        return False
    return _run(patched, case, tools, markers, shape, reference).status == "pass"


def _markers(shape: _Shape) -> list:
    out = []
    for fspec in shape.fields.values():
        for kind in ("open", "close"):
            try:
                d = _delim(fspec, kind, {"name": "get_weather"})
            except SampleError:
                d = None
            if d is not None:
                out.extend(d.texts)
    out.extend(x for x in shape.section if x)
    return out


def _na_reason(cls: str, shape: _Shape) -> str:
    if cls in "bdi" and shape.calls is None:
        return shape.calls_why
    if cls == "c":
        return "no reasoning opener or call marker that could appear in the answer"
    if cls == "e":
        return "no tool calls and no reasoning opener to repeat"
    if cls == "i" and shape.content != shape.implicit:
        return "the answer is an explicit region: only its own close is watched inside it"
    return "nothing in the template for this class"


class _CallableModule(types.ModuleType):
    """``parsing.doctor.probe(template, prefixes=..., tools=...)`` (the spelling of issue #11) calls `probe`,
    while ``parsing.doctor.probe`` stays this module (``from parsing.doctor.probe import ProbeReport``)."""

    def __call__(self, template: Any, *, prefixes: dict | None = None, tools: list | None = None,
                 reference: bool = False) -> ProbeReport:
        return probe(template, prefixes=prefixes, tools=tools, reference=reference)


sys.modules[__name__].__class__ = _CallableModule
