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
h     drift real models emit (missing opener or close, text inside a tool section, bare JSON calls)
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
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import regex

from ..streams import merged_events, parse_stream, random_chunks, replay_chunks
from .samples import SampleError, pattern_samples

__all__ = ["CLASSES", "ProbeCase", "ProbeResult", "ClassResult", "ProbeReport", "apply_fix", "probe"]

CLASSES = {
    "a": "generation stops inside a region",
    "b": "delimiter text inside a value",
    "c": "an open marker as ordinary text",
    "d": "whitespace and text around tool calls",
    "e": "repeated blocks",
    "f": "prompt-side state",
    "g": "markers split across stream chunks",
    "h": "drift real models emit",
    "i": "false positives",
}

REASONING_NAMES = ("reasoning_content", "reasoning", "thinking", "thought")
ERROR = "error"  # an expected outcome: parsing raises (a cut call must not come out as a call)
NO_CALL = "no tool call"  # an accepted outcome: an error, or a message without tool calls and the same reasoning

# Default tools the probes call (JSON schemas in the apply_chat_template format).
DEFAULT_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time in a time zone.",
                                      "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                                     "required": ["tz"]}}},
    {"type": "function", "function": {"name": "save_note", "description": "Save a note.",
                                      "parameters": {"type": "object",
                                                     "properties": {"title": {"type": "string"},
                                                                    "text": {"type": "string"}},
                                                     "required": ["title", "text"]}}},
]

_TOOL_WORDS = regex.compile(r"tool|function|action|call", regex.I)
_END_WORDS = regex.compile(r"end|^</|/>$|\|/", regex.I)
_REPLY_WORDS = regex.compile(r"response|result|output|observation", regex.I)
_ANSWER_WORDS = regex.compile(r"answer|response", regex.I)


# ---------------------------------------------------------------------------------------------
# Reports


@dataclass
class ProbeCase:
    """One probe: a model output built for one failure class.

    Attributes:
        id: ``"<class>.<name>"``, plus ``[prefix]`` for the prompt-state probes (``"f.answer[thinking_off]"``).
        cls: the class letter (`CLASSES`).
        title: what the output does, in words.
        prefix_name: which prompt prefix it follows (``"(none)"`` for ``prefix=""``).
        prefix: the prompt text.
        output: the raw generation.
        expected: the message the output means (``"error"`` where the right outcome is a raised error).
        accept: further outcomes that are as good (a cut call may raise or come out as no call at all).
        no_blank_content: also fail if the event stream opens a content region that holds only whitespace.
        every_cut: parse under every two-piece cut of the output besides the usual chunkings.
        keep: for an ``accept`` of ``"no tool call"``: keys the message must still carry with these values.
        limit: why the template language cannot pass this probe for this template, when it fails.
        suggestion: a concrete change to the template, when it fails.
        fix: the same change as ``[(json path tuple, new value), ...]`` when it can be applied mechanically
            (`apply_fix`); empty otherwise.
    """

    id: str
    cls: str
    title: str
    prefix_name: str
    prefix: str
    output: str
    expected: Any
    accept: tuple = ()
    no_blank_content: bool = False
    every_cut: bool = False
    keep: dict = field(default_factory=dict)
    limit: str | None = None
    suggestion: str = ""
    fix: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "class": self.cls, "title": self.title, "prefix": self.prefix_name,
                "output": self.output, "expected": self.expected, "accept": list(self.accept)}


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
            False if it does not (the fix is part of the answer only); None when not tried.
    """

    case: ProbeCase
    status: str
    got: Any = None
    chunking: str | None = None
    detail: str = ""
    fix_verified: bool | None = None

    def to_dict(self) -> dict:
        out = {**self.case.to_dict(), "status": self.status}
        if self.status != "pass":
            out.update(got=self.got, chunking=self.chunking, detail=self.detail)
            if self.status == "limit":
                out["limit"] = self.case.limit
            else:
                out["suggestion"] = self.case.suggestion
                if self.case.fix:
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
                elif r.case.suggestion:
                    checked = {True: " [checked: the probe passes with it]",
                               False: " [not enough on its own]"}.get(r.fix_verified, "")
                    lines.append(f"           suggested change: {r.case.suggestion}{checked}")
        head = [self.summary()] + [f"  note: {n}" for n in self.notes]
        return "\n".join(head + lines)


def _show(value: Any) -> str:
    if value == ERROR:
        return "a raised error"
    return "no tool call" if value == NO_CALL else json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Reading the template: what a model writes where


def _esc(text: str) -> str:
    return regex.escape(text, special_only=True, literal_spaces=True)


@dataclass
class _Delim:
    """A delimiter as text: ``texts`` (what a model writes, the main one first), ``triggers`` (what its
    zero-width alternatives wait for), ``source`` (the delimiter as a regex), ``literal``."""

    texts: list
    triggers: list
    source: str
    literal: bool
    groups: dict = field(default_factory=dict)
    separators: list = field(default_factory=list)

    @property
    def text(self) -> str | None:
        return self.texts[0] if self.texts else None


def _delim(fspec: dict, kind: str, values: dict | None = None) -> _Delim | None:
    if kind in fspec:
        raw = fspec[kind]
        lits = [raw] if isinstance(raw, str) else list(raw)
        return _Delim(lits, [], "|".join(_esc(s) for s in sorted(lits, key=len, reverse=True)), True)
    key = kind + "_pattern"
    if key in fspec:
        samples = pattern_samples(fspec[key], values)
        texts = [s.text for s in samples if s.text and not s.separator]
        separators = [s.text for s in samples if s.separator]
        groups = next((s.groups for s in samples if s.text), samples[0].groups)
        return _Delim(texts or separators, [s.trigger for s in samples if not s.text and s.trigger], fspec[key],
                      False, groups, separators if texts else [])
    return None


class _Unprobeable(Exception):
    """The template gives the probe nothing to write a tool call from; the message says why."""


@dataclass
class _CallFormat:
    """How to write tool calls for the template's tool-call field."""

    name: str
    fspec: dict
    listed: bool  # transform_each: one region holds a JSON list of calls
    plan: list  # (output path, variable root, variable path)
    close: _Delim | None

    def open_text(self, call_name: str, index: int) -> tuple[str, dict]:
        values = {}
        for out_path, root, path in self.plan:
            if root != "content" and not self.listed and not path:
                if out_path == ("function", "name"):
                    values[root] = call_name
        d = _delim(self.fspec, "open", values)
        if d is None or d.text is None:
            return "", (d.groups if d else {})
        return d.text, d.groups

    def call_value(self, call_name: str, args: dict, index: int, groups: dict) -> tuple[Any, dict]:
        """(the body value for one call, the tool call the template should produce)."""
        expected = {"type": "function", "function": {"name": call_name, "arguments": args}}
        body: dict = {}
        body_root: Any = None
        for out_path, root, path in self.plan:
            if out_path == ("function", "name"):
                value: Any = call_name
            elif out_path == ("function", "arguments"):
                value = args
            elif out_path == ("function",):
                value = {"name": call_name, "arguments": args}
            elif out_path == ():
                value = {"type": "function", "function": {"name": call_name, "arguments": args}}
            elif out_path == ("id",):
                if root in groups and not self.listed:
                    value = groups[root]
                else:
                    value = f"call_{index}"
                expected["id"] = value
                if root in groups and not self.listed:
                    continue
            else:
                raise _Unprobeable(f"the transform puts a variable at {'.'.join(out_path)}, "
                                   "which is not part of a standard tool call")
            if root == "content" or self.listed:
                keys = list(path) if root == "content" else [root, *path]
                if not keys:
                    body_root = value
                    continue
                node = body
                for k in keys[:-1]:
                    node = node.setdefault(k, {})
                node[keys[-1]] = value
            elif out_path == ("function", "name") and not path:
                continue  # written into the open delimiter
            else:
                raise _Unprobeable(f"the transform takes {out_path[-1] if out_path else 'the call'} from "
                                   f"the group {root!r}, which the probe cannot fill")
        if body_root is not None:
            if body:
                raise _Unprobeable("the transform mixes the whole body with keys of it")
            return body_root, expected
        return body, expected


def _transform_plan(transform: Any, each: bool) -> list:
    plan: list = []

    def walk(node: Any, out_path: tuple) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, out_path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, out_path + (i,))
        elif isinstance(node, str):
            m = regex.fullmatch(r"\{([A-Za-z_][\w]*)((?:\.[\w-]+)*)\}", node)
            if m:
                path = tuple(p for p in m.group(2).split(".") if p)
                plan.append((out_path, m.group(1), path))

    walk(transform, ())
    if isinstance(transform, str) and not plan:
        raise _Unprobeable("the tool-call transform is a constant string")
    return plan


class _Shape:
    """The template read as a format: which field is which, what each delimiter looks like."""

    def __init__(self, spec: dict, tools: list):
        self.spec = spec
        fields = spec["fields"]
        self.fields = fields
        self.implicit = next((n for n, f in fields.items() if "open" not in f and "open_pattern" not in f), None)
        self.reasoning = next((n for n in REASONING_NAMES if n in fields and n != self.implicit), None)
        self.content = "content" if "content" in fields else self.implicit
        self.tools = "tool_calls" if "tool_calls" in fields and "tool_calls" != self.implicit else None
        self.notes: list[str] = []
        self.tool_specs = tools
        self.tool_names = [t.get("function", t).get("name") for t in tools if isinstance(t, dict)]

        # reasoning delimiters
        self.r_open = self.r_close = None
        self.reasoning_at_start = False
        if self.reasoning:
            f = fields[self.reasoning]
            self.r_open = _delim(f, "open")
            self.r_close = _delim(f, "close")
            if self.r_open is not None and _opens_at_start(f):
                self.reasoning_at_start = True
                self.notes.append(f"{self.reasoning} opens without text at the start of the turn: outputs are "
                                  "written as from a model that always reasons and writes no opener")
        # content, end of turn, tool sections
        self.c_open = self.c_close = None
        self.eot = None
        self.section = (None, None)
        self.answer_wrap = (None, None)
        if self.content is not None and self.content != self.implicit:
            self.c_open = _delim(fields[self.content], "open")
            self.c_close = _delim(fields[self.content], "close")
        self.implicit_closes: list = []
        if self.implicit is not None:
            close = _delim(fields[self.implicit], "close")
            texts = close.texts if close else []
            self.implicit_closes = list(texts)
            r_close_texts = set(self.r_close.texts) if self.r_close else set()
            plain, tool_like, answer_like = [], [], []
            for t in texts:
                if t in r_close_texts:
                    continue
                if _TOOL_WORDS.search(t) and not _REPLY_WORDS.search(t):
                    tool_like.append(t)
                elif _ANSWER_WORDS.search(t) and not _TOOL_WORDS.search(t):
                    answer_like.append(t)
                elif not _TOOL_WORDS.search(t) or not _REPLY_WORDS.search(t):
                    plain.append(t)
            others = [t for t in texts if t not in tool_like and t not in answer_like and t not in r_close_texts]
            self.eot = plain[0] if plain else (others[0] if others else None)
            opens = [t for t in tool_like if not _END_WORDS.search(t)]
            closes = [t for t in tool_like if _END_WORDS.search(t)]
            if opens:
                self.section = (opens[0], closes[0] if closes else None)
            a_opens = [t for t in answer_like if not t.startswith("</")]
            a_closes = [t for t in answer_like if t.startswith("</")]
            if a_opens and a_closes:
                self.answer_wrap = (a_opens[0], a_closes[0])
        # A text that closes two or more fields (or the implicit one) ends the turn: `<|eot_id|>` closing both
        # content and calls, `(?=<|END_OF_TURN_TOKEN|>)` on every region of Command R7B.
        seen: dict = {}
        written: set = set()
        for fspec in fields.values():
            d = _delim(fspec, "close")
            for t in set((d.texts + d.triggers) if d else []):
                seen[t] = seen.get(t, 0) + 1
            written |= set(d.texts if d else [])
        self.turn_ends = set(self.implicit_closes) - {self.section[0], self.section[1]}
        self.turn_ends |= {t for t, n in seen.items() if n >= 2}
        if self.eot is None:
            shared = sorted((t for t, n in seen.items() if n >= 2 and t.strip()), key=lambda t: t not in written)
            self.eot = shared[0] if shared else None
        if self.eot:
            self.notes.append(f"end of turn: {self.eot!r}")
        if self.section[0]:
            self.notes.append(f"tool section: {self.section[0]!r} ... {self.section[1]!r}")
        # tool calls
        self.calls: _CallFormat | None = None
        self.calls_why = "the template has no tool_calls field"
        if self.tools:
            try:
                self.calls = self._call_format(fields[self.tools])
            except (_Unprobeable, SampleError) as exc:
                self.calls_why = f"cannot write a tool call for this template: {exc}"
                self.calls = None

    def _call_format(self, f: dict) -> _CallFormat:
        if "transform" not in f:
            raise _Unprobeable("the tool_calls field has no transform, so its values are not tool calls")
        each = bool(f.get("transform_each"))
        plan = _transform_plan(f["transform"], each)
        content = f.get("content", "text")
        if content not in ("json", "xml-inline", "kv-lines"):
            raise _Unprobeable(f"tool calls parsed as {content!r} text carry no arguments object")
        if content != "json" and each:
            raise _Unprobeable("transform_each needs a JSON list body")
        close = _delim(f, "close")
        fmt = _CallFormat(self.tools, f, each, plan, close)
        return fmt

    # -- writing text ------------------------------------------------------------------------

    @property
    def content_kind(self) -> str:
        return self.fields[self.tools].get("content", "text") if self.tools else ""

    def body_text(self, value: Any) -> str:
        f = self.fields[self.tools]
        args = f.get("content_args") or {}
        kind = f.get("content", "text")
        if kind == "json":
            return _json_text(value, args)
        if not isinstance(value, dict):
            raise _Unprobeable(f"a {kind} body must hold the arguments object")
        if kind == "xml-inline":
            parts = []
            for k, v in value.items():
                samples = pattern_samples(args["tag_pattern"], {"key": k, "value": v})
                parts.append(samples[0].text)
            return "\n" + "\n".join(parts) + ("\n" if parts else "")
        sep = args.get("kv_sep", ":")
        line_sep = args.get("line_sep", "\n")
        return "\n" + line_sep.join(f"{k}{sep} {v}" for k, v in value.items()) + "\n"

    def call_text(self, calls: list, sep: str = "\n", close: bool = True) -> tuple[str, list]:
        """Text of tool calls (``[(name, args), ...]``) and the tool calls they mean."""
        fmt = self.calls
        if fmt is None:
            raise _Unprobeable(self.calls_why)
        close_text = fmt.close.text if (fmt.close and fmt.close.text and close) else ""
        if fmt.listed:
            open_text, groups = fmt.open_text(calls[0][0], 0)
            values, expected = [], []
            for i, (name, args) in enumerate(calls):
                value, exp = fmt.call_value(name, args, i, groups)
                values.append(value)
                expected.append(exp)
            return open_text + self.body_text(values) + close_text, expected
        pieces, expected = [], []
        separator = fmt.close.separators[0] if fmt.close and fmt.close.separators else None
        open_delim = _delim(fmt.fspec, "open")
        bare_next = bool(separator and open_delim and open_delim.triggers)
        for i, (name, args) in enumerate(calls):
            open_text, groups = fmt.open_text(name, i)
            if i and bare_next:
                open_text = ""  # after a separator the next call starts bare (Llama 3: `{...}; {...}`)
            value, exp = fmt.call_value(name, args, i, groups)
            body = self.body_text(value)
            if self.content_kind == "json" and open_text.endswith(">") and close_text.startswith("<"):
                body = f"\n{body}\n"  # tag-style markers: the JSON sits on its own line (Hermes, Qwen)
            last = i == len(calls) - 1
            # A call that ends where the next begins (Magistral's `(?=\[TOOL_CALLS\])`) carries the turn's end
            # token only after the last call.
            ends_turn = close_text in self.turn_ends and bool(fmt.close and fmt.close.triggers)
            end = close_text if last or (separator is None and not ends_turn) else ""
            pieces.append(open_text + body + end)
            expected.append(exp)
        if separator is not None:
            return (separator + " ").join(pieces), expected
        return sep.join(pieces), expected

    def end_after(self, text: str, blank: str = "") -> str:
        """``text`` then the end of turn, unless the text already ends with a token that ends the turn (a call
        closed by ``<|eom_id|>``): the model stops there."""
        if any(text.endswith(t) for t in self.turn_ends):
            return text
        return text + blank + self.end

    def tool_section(self, calls_text: str, close: bool = True) -> str:
        begin, end = self.section
        if not begin:
            return calls_text
        return begin + calls_text + (end if close and end else "")

    def answer(self, text: str) -> str:
        if self.content != self.implicit and self.c_open is not None and self.c_open.text:
            close = self.c_close.text if self.c_close and self.c_close.text else ""
            return self.c_open.text + text + close
        begin, end = self.answer_wrap
        if begin:
            return f"{begin}\n{text}\n{end}"
        return text

    def reasoning_block(self, text: str, opened: bool) -> str:
        """Reasoning text with its delimiters; ``opened``: the prompt already opened the region."""
        start = "" if (opened or self.reasoning_at_start) else self.r_open.text + "\n"
        close = self.r_close.text if self.r_close and self.r_close.text else ""
        return f"{start}{text}\n{close}\n\n"

    @property
    def calls_end_turn(self) -> bool:
        """True when a call ends only where the turn ends (closed by the end token or by the next call): nothing
        can follow the calls."""
        close = self.calls.close if self.calls else None
        if close is None:
            return True
        texts = [t for t in close.texts if t.strip()]
        return not texts or all(t in self.turn_ends for t in texts)

    @property
    def end(self) -> str:
        return self.eot or ""


def _opens_at_start(fspec: dict) -> bool:
    """True when the field's open matches with no text at the start of any turn (the model always reasons)."""
    source = fspec.get("open_pattern")
    if source is None:
        return False
    try:
        m = regex.compile(source, regex.DOTALL).match("It is sunny.", timeout=1.0)
    except (regex.error, TimeoutError):
        return False
    return m is not None and m.end() == 0


def _json_text(value: Any, args: dict) -> str:
    unquoted = bool(args.get("unquoted_keys"))
    delims = args.get("string_delims") or []
    if not unquoted and not delims:
        return json.dumps(value, ensure_ascii=False)

    def enc(v: Any) -> str:
        if isinstance(v, dict):
            keys = [(k if unquoted and regex.fullmatch(r"[A-Za-z_]\w*", k) else json.dumps(k)) for k in v]
            return "{" + ",".join(f"{k}:{enc(x)}" for k, x in zip(keys, v.values())) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        if isinstance(v, str) and delims:
            return delims[0][0] + v + delims[0][1]
        return json.dumps(v, ensure_ascii=False)

    return enc(value)


# ---------------------------------------------------------------------------------------------
# Prompt state


@dataclass
class _Prompt:
    name: str
    text: str
    state: str  # "answer": the model starts fresh; "reasoning": inside the reasoning; "thinking_off"
    synthetic: bool = False
    started: str = ""  # the start of a marker the prompt already wrote (Functionary's `>>>`)
    carry: str = ""  # reasoning text the prompt already wrote after the opener (Seed-OSS's budget tag)


def _anchor_tail(spec: dict, prefix: str) -> str | None:
    if "start_anchor" in spec:
        anchors = spec["start_anchor"]
        anchors = [anchors] if isinstance(anchors, str) else anchors
        source = "|".join(_esc(a) for a in sorted(anchors, key=len, reverse=True))
    else:
        source = spec["start_anchor_pattern"]
    last = None
    for m in regex.finditer(source, prefix, regex.DOTALL):
        last = m
    return None if last is None else prefix[last.end():]


def _prompt_state(shape: _Shape, tail: str) -> str | None:
    bare = tail.strip()
    if not bare:
        return "reasoning" if shape.reasoning_at_start else "answer"
    if shape.reasoning and shape.r_open is not None:
        opens = [t.strip() for t in shape.r_open.texts if t.strip()]
        closes = [t.strip() for t in (shape.r_close.texts if shape.r_close else []) if t.strip()]
        if any(bare.startswith(o) for o in opens) and not any(c in bare for c in closes):
            return "reasoning"  # the prompt opened the reasoning (and maybe began it: Seed-OSS's budget tag)
        for c in closes:
            if bare == c or any(regex.fullmatch(_esc(o) + r"\s*" + _esc(c), bare) for o in opens):
                return "thinking_off"
    return None


def _prompts(shape: _Shape, spec: dict, prefixes: dict | None) -> tuple[list, list]:
    prompts, skipped = [], []
    if prefixes:
        for name, text in prefixes.items():
            tail = _anchor_tail(spec, text)
            if tail is None:
                skipped.append(f"prefix {name!r}: the start anchor does not occur in it")
                continue
            state = _prompt_state(shape, tail)
            started = ""
            if state is None and tail.strip() and any(t.startswith(tail) and t != tail for t in _open_texts(shape)):
                state, started = "answer", tail  # the model goes on writing a marker the prompt began
            if state is None:
                skipped.append(f"prefix {name!r}: it ends with {tail!r} after the start anchor, which the probe "
                               "cannot read as a reasoning state")
                continue
            carry = _after_opener(shape, tail) if state == "reasoning" else ""
            prompts.append(_Prompt(name, text, state, started=started, carry=carry))
        if any(p.state != "thinking_off" for p in prompts):
            return prompts, skipped
        skipped.append("no given prefix leaves a fresh turn: probes also run after prompts written from the anchor")
    anchor = _anchor_text(spec)
    prompts.append(_Prompt("(probe) fresh turn", anchor, "reasoning" if shape.reasoning_at_start else "answer", True))
    if shape.reasoning and shape.r_open is not None and shape.r_open.text and shape.r_close and shape.r_close.text:
        prompts.append(_Prompt("(probe) prefilled reasoning", anchor + shape.r_open.text + "\n", "reasoning", True))
        prompts.append(_Prompt("(probe) thinking off", anchor + shape.r_open.text + "\n\n" + shape.r_close.text
                               + "\n\n", "thinking_off", True))
    return prompts, skipped


def _after_opener(shape: _Shape, tail: str) -> str:
    bare = tail.lstrip()
    for o in (t.strip() for t in (shape.r_open.texts if shape.r_open else []) if t.strip()):
        if bare.startswith(o):
            return bare[len(o):].lstrip()
    return ""


def _open_texts(shape: _Shape) -> list:
    out = []
    for fspec in shape.fields.values():
        try:
            d = _delim(fspec, "open", {"name": "get_weather"})
        except SampleError:
            d = None
        out.extend(d.texts if d else [])
    return out


def _anchor_text(spec: dict) -> str:
    if "start_anchor" in spec:
        anchors = spec["start_anchor"]
        return anchors if isinstance(anchors, str) else anchors[0]
    try:
        samples = pattern_samples(spec["start_anchor_pattern"])
        return next((s.text for s in samples if s.text), "")
    except SampleError:
        return ""


# ---------------------------------------------------------------------------------------------
# Building the probes


_REASON = "The user wants the weather, so I call the tool."
_REASON2 = "The tool is slow; I answer from memory instead."
_ANSWER = "It is sunny in Paris."
_ANSWER2 = "Expect 21 degrees."
_BEFORE = "Let me check the weather."
_AFTER = "I asked the weather service."
_SEPS = ("", "\n", " ", "\n\n")


def _msg(**parts: Any) -> dict:
    out = {"role": "assistant"}
    for key, value in parts.items():
        if value not in (None, "", [], {}):
            out[key] = value
    return out


class _Builder:
    def __init__(self, shape: _Shape, prompts: list):
        self.s = shape
        self.prompts = prompts
        self.cases: list[ProbeCase] = []
        self.na: dict[str, str] = {}
        fresh = [p for p in prompts if p.state in ("answer", "reasoning")]
        tool_first = sorted(fresh, key=lambda p: (0 if "tool" in p.name else 1))
        self.main = tool_first[0] if tool_first else None
        self.fresh_answer = next((p for p in prompts if p.state == "answer"), None)
        self.in_reasoning = next((p for p in prompts if p.state == "reasoning"), None)

    # helpers -------------------------------------------------------------------------------

    def msg(self, reasoning=None, content=None, calls=None) -> dict:
        s = self.s
        parts = {}
        if reasoning and s.reasoning:
            parts[s.reasoning] = reasoning
        if content and s.content:
            parts[s.content] = content
        if calls and s.tools:
            parts[s.tools] = calls
        return _msg(**parts)

    def add(self, cid: str, title: str, prompt: _Prompt, output: str, expected: Any, **kw: Any) -> None:
        if prompt.started:
            if not output.startswith(prompt.started):
                return  # this output cannot follow a prompt that began a marker
            output = output[len(prompt.started):]
        suggestion = kw.pop("suggestion", "")
        if isinstance(suggestion, _Fix):
            kw["fix"] = suggestion.changes
            suggestion = suggestion.text
        kw["suggestion"] = suggestion
        self.cases.append(ProbeCase(id=cid, cls=cid[0], title=title, prefix_name=prompt.name, prefix=prompt.text,
                                    output=output, expected=expected, **kw))

    def lead(self, prompt: _Prompt, reasoning: str | None = _REASON) -> tuple[str, str | None]:
        """The reasoning part of a turn for this prompt state: (text, reasoning value)."""
        s = self.s
        if not s.reasoning or prompt.state == "thinking_off":
            return "", None
        if prompt.state == "reasoning":
            value = (prompt.carry + (reasoning or "")).strip()
            return s.reasoning_block(reasoning or "", opened=True), value or None
        if reasoning is None or s.r_open is None or not s.r_open.text:
            return "", None
        return s.reasoning_block(reasoning, opened=False), reasoning

    @staticmethod
    def carried(prompt: _Prompt, text: str) -> str:
        """The reasoning value for ``text`` written after this prompt (what the prompt already wrote comes first)."""
        return (prompt.carry + text).strip() if prompt.state == "reasoning" else text

    def calls(self, spec: list, **kw: Any) -> tuple[str, list]:
        return self.s.call_text(spec, **kw)

    # classes -------------------------------------------------------------------------------

    def build(self) -> None:
        for step in (self.a, self.b, self.c, self.d, self.e, self.f, self.g, self.h, self.i):
            try:
                step()
            except _Unprobeable as exc:  # a class the probe cannot write for this template
                self.na.setdefault(step.__name__, str(exc))

    def a(self) -> None:
        s, eot = self.s, self.s.end
        if s.reasoning and s.r_close is not None:
            p = self.in_reasoning or self.fresh_answer
            if p is not None and (p.state == "reasoning" or (s.r_open and s.r_open.text)):
                start = "" if p.state == "reasoning" else s.r_open.text + "\n"
                text = "17 is prime: nothing from 2 to 4 divides"
                self.add("a.reasoning_cut", "the model stops mid-thought (token limit)", p, start + text,
                         self.msg(reasoning=self.carried(p, text)))
                if s.eot:
                    done = "17 is prime: nothing from 2 to 4 divides it."
                    self.add("a.reasoning_cut_by_end_of_turn", "the end-of-turn token comes before the reasoning "
                             "close", p, start + done + eot, self.msg(reasoning=self.carried(p, done)),
                             suggestion=_sugg_lookahead_close(s, s.reasoning, s.eot))
            if self.fresh_answer is not None and s.r_open and s.r_open.text:
                self.add("a.after_reasoning_open", "the model stops right after the reasoning opener",
                         self.fresh_answer, s.r_open.text + "\n", self.msg())
        if self.main is not None:
            lead, reasoning = self.lead(self.main)
            text = "The capital of France is"
            self.add("a.answer_cut", "the model stops mid-answer (token limit)", self.main,
                     lead + s.answer(text) if s.content != s.implicit else lead + text,
                     self.msg(reasoning=reasoning, content=text))
        if s.calls is None or self.main is None:
            self.na["a_calls"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        full, _ = self.calls([("get_weather", {"city": "Paris"})], close=False)
        cut = full[: _cut_point(full)]
        limit = None
        if s.content_kind != "json":
            limit = (f"tool calls parsed as {s.content_kind} take whatever complete pairs a cut call has: the "
                     "language cannot tell a cut call from a finished one")
        accept = (NO_CALL,)
        keep = {s.reasoning: reasoning} if reasoning else {}
        self.add("a.call_cut", "the model stops inside a call's arguments: no call may come out", p,
                 lead + s.tool_section(cut, close=False), ERROR, accept=accept, limit=limit, keep=keep,
                 suggestion="parse the call body as json without allow_non_json, so that a cut call raises")
        open_text, _ = s.calls.open_text("get_weather", 0)
        if open_text:
            self.add("a.after_call_open", "the model stops right after a call's open marker", p,
                     lead + s.tool_section(open_text, close=False), ERROR, accept=accept, limit=limit, keep=keep,
                     suggestion="parse the call body as json without allow_non_json, so that an empty call raises")
        calls_text, expected = self.calls([("get_weather", {"city": "Paris"})])
        self.add("a.call_then_token_limit", "a complete call and then nothing (no end-of-turn token)", p,
                 lead + s.tool_section(calls_text), self.msg(reasoning=reasoning, calls=expected),
                 suggestion="give the tool-call field a close the call's own text ends with")

    def b(self) -> None:
        s = self.s
        if s.calls is None:
            self.na["b"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        close = s.calls.close
        markers = []
        if close is not None:
            markers = [t.split()[-1] for t in close.texts + close.triggers + close.separators if t.strip()]
        ends = {s.eot, *s.section, *s.turn_ends}  # turn and section tokens never sit in a value
        markers = list(dict.fromkeys(m for m in markers if m and m not in ends))
        if s.content_kind == "json":
            if not markers:
                self.na["b"] = "the tool-call field has no close text that could appear inside a value"
                return
            text = "A call always ends with " + " or ".join(markers) + " on a new line."
            calls_text, expected = self.calls([("save_note", {"title": "tags", "text": text})])
            self.add("b.call_close_in_json_string", "the call's close marker inside a JSON string argument", p,
                     lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_balanced_close(s))
            code = 'print("' + markers[0] + '")'
            calls_text, expected = self.calls([("save_note", {"title": "code", "text": code})])
            self.add("b.call_close_in_code", "code in an argument prints the close marker", p,
                     lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_balanced_close(s))
            return
        if s.content_kind == "xml-inline":
            term = _tag_terminator(s)
            if term:
                code = 'def end_tag():\n    return "' + term + '"'
                calls_text, expected = self.calls([("save_note", {"title": "tags.py", "text": code})])
                self.add("b.value_close_in_value", f"a parameter value (code) contains {term}", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_tag_lookahead(s))
            if markers:
                text = "In this format a call ends with " + markers[0] + " after its last parameter."
                calls_text, expected = self.calls([("save_note", {"title": "format", "text": text})])
                self.add("b.call_close_in_value", "a parameter value contains the call's close marker", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_close_after_value(s, term))
            return
        self.na["b"] = f"tool calls parsed as {s.content_kind}: no quoting to probe"

    def c(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        if s.reasoning and s.r_open and s.r_open.text and s.content == s.implicit:
            opener = s.r_open.text.strip()
            answer = f"Put them inside a {opener} block and the viewer folds them."
            lead, reasoning = self.lead(p, "The user asks how to hide notes.")
            self.add("c.reasoning_open_in_answer", f"the answer names the reasoning opener {opener}", p,
                     lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                     suggestion=_sugg_anchored_open(s))
        if s.calls is not None and s.reasoning and s.r_close is not None:
            # a draft stops before a closing token that would end the turn (Granite's <|end_of_text|>)
            draft, _ = self.calls([("get_weather", {"city": "Paris"})], close=not s.calls_end_turn)
            thought = "I could write " + draft + " but the user only wants a haiku."
            rp = self.in_reasoning or p
            if rp.state == "reasoning" or (s.r_open and s.r_open.text):
                block = s.reasoning_block(thought, opened=rp.state == "reasoning")
                self.add("c.call_draft_in_reasoning", "a tool call drafted inside the reasoning stays reasoning",
                         rp, block + s.answer(_ANSWER) + s.end, self.msg(reasoning=self.carried(rp, thought), content=_ANSWER),
                         suggestion="do not let the tool-call open end the reasoning region")
        if s.calls is not None and s.content == s.implicit:
            open_text, _ = s.calls.open_text("get_weather", 0)
            marker = _marker_word(open_text)
            if marker:
                lead, reasoning = self.lead(p)
                answer = f"Wrap each call in {marker} tags, one per line."
                self.add("c.call_open_in_answer", f"the answer names the call marker {marker}", p,
                         lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                         suggestion=_sugg_call_open_lookahead(s))

    def d(self) -> None:
        s = self.s
        if s.calls is None:
            self.na["d"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        two = [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"})]
        calls_text, expected = self.calls(two, sep="\n\n")
        self.add("d.newlines_between_calls", "blank lines between calls and before the end of turn", p,
                 lead + s.end_after(s.tool_section(calls_text), "\n"), self.msg(reasoning=reasoning, calls=expected),
                 no_blank_content=True, suggestion=_sugg_blank(s))
        one_text, one = self.calls(two[:1])
        if s.content == s.implicit:
            self.add("d.text_before_calls", "text, then the calls", p,
                     lead + _BEFORE + "\n\n" + s.end_after(s.tool_section(one_text)),
                     self.msg(reasoning=reasoning, content=_BEFORE, calls=one),
                     no_blank_content=True, suggestion=_sugg_blank(s))
            accept = tuple(self.msg(reasoning=reasoning, content=_BEFORE + sep + _AFTER, calls=one)
                           for sep in _SEPS[1:])
        if s.content == s.implicit and not s.calls_end_turn:
            self.add("d.text_around_calls", "text, the calls, more text: nothing overwritten", p,
                     lead + _BEFORE + "\n" + s.tool_section(one_text) + "\n" + _AFTER + s.end,
                     self.msg(reasoning=reasoning, content=_BEFORE + _AFTER, calls=one), accept=accept,
                     no_blank_content=True, suggestion=_sugg_repeats(s.content, ""))
        if lead:
            self.add("d.calls_after_reasoning", "reasoning, a blank line, then a call", p,
                     lead + s.end_after(s.tool_section(one_text)), self.msg(reasoning=reasoning, calls=one),
                     no_blank_content=True, suggestion=_sugg_blank(s))

    def e(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        if s.calls is not None:
            three = [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"}),
                     ("get_weather", {"city": "Tokyo"})]
            lead, reasoning = self.lead(p)
            calls_text, expected = self.calls(three)
            self.add("e.several_calls", "three calls in a row", p, lead + s.end_after(s.tool_section(calls_text)),
                     self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_repeats(s.tools))
            if s.section[0] or s.calls.listed:
                first, e1 = self.calls(three[:1])
                second, e2 = self.calls(three[1:2])
                for_list = s.calls.listed and not s.section[0]
                self.add("e.several_tool_sections", "two separate tool sections in one turn", p,
                         lead + s.tool_section(first) + "\n" + s.end_after(s.tool_section(second)),
                         self.msg(reasoning=reasoning, calls=e1 + e2),
                         limit=("each section is one JSON list; a repeated list-valued field nests lists instead of "
                                "joining them" if for_list else None),
                         suggestion=_sugg_repeats(s.tools))
        if s.reasoning and s.r_open and s.r_open.text and s.r_close and s.r_close.text and \
                self.fresh_answer is not None:
            fp = self.fresh_answer
            b1 = s.reasoning_block(_REASON, opened=False)
            b2 = s.reasoning_block(_REASON2, opened=False)
            expected = self.msg(reasoning=_REASON + "\n" + _REASON2, content=_ANSWER)
            accept = [self.msg(reasoning=_REASON + sep + _REASON2, content=_ANSWER) for sep in _SEPS]
            accept += [self.msg(reasoning=_REASON, content=b2.strip() + sep + _ANSWER) for sep in _SEPS]
            self.add("e.second_reasoning_block", "a second reasoning block right after the first: nothing lost", fp,
                     b1 + b2 + s.answer(_ANSWER) + s.end, expected, accept=tuple(accept),
                     suggestion=_sugg_repeats(s.reasoning, "\n"))

    def f(self) -> None:
        s = self.s
        for p in self.prompts:
            tag = f"[{p.name}]"
            lead, reasoning = self.lead(p)
            self.add("f.answer" + tag, f"an answer after this prompt ({p.state})", p,
                     lead + s.answer(_ANSWER) + s.end, self.msg(reasoning=reasoning, content=_ANSWER),
                     suggestion=_sugg_state(s, p))
            if s.calls is not None:
                calls_text, expected = self.calls([("get_weather", {"city": "Paris"})])
                self.add("f.call" + tag, f"a call after this prompt ({p.state})", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_state(s, p))

    def g(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        lead, reasoning = self.lead(p, "Tokyo is 東京 — check the weather 🌦️.")
        answer = "Checking 東京 for you 👩‍💻🇫🇷."
        if s.calls is not None and s.content == s.implicit:
            calls_text, expected = self.calls([("get_weather", {"city": "東京 🌸"}), ("get_time", {"tz": "Asia/東京"})])
            out = lead + answer + "\n" + s.end_after(s.tool_section(calls_text))
            exp = self.msg(reasoning=reasoning, content=answer, calls=expected)
        else:
            out = lead + s.answer(answer) + s.end
            exp = self.msg(reasoning=reasoning, content=answer)
        self.add("g.every_cut", "every marker split at every position; CJK and emoji in the text", p, out, exp,
                 every_cut=True, suggestion="a template whose result depends on chunking needs a delimiter that "
                                            "cannot commit early: avoid $ and \\Z in lookaheads")

    def h(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        fp = self.fresh_answer
        if s.reasoning and fp is not None and s.r_open and s.r_open.text and s.r_close and s.r_close.text:
            self.add("h.missing_reasoning_open", "reasoning without its opener, then the close and the answer", fp,
                     _REASON + "\n" + s.r_close.text + "\n\n" + _ANSWER + s.end,
                     self.msg(reasoning=_REASON, content=_ANSWER),
                     limit=("text before the close was already streamed as content, and a region cannot be "
                            "relabelled afterwards; opening the reasoning at the start of the turn (as for models "
                            "that always reason) is the only way, and it is wrong for models that may answer "
                            "directly"),
                     suggestion="open the reasoning region at the start of the turn")
        if s.reasoning_at_start and s.r_open and s.r_open.text and s.r_close and s.r_close.text:
            start = next((q for q in self.prompts if q.state == "reasoning" and not q.carry
                          and not (q.text.rstrip().endswith(s.r_open.text.strip()))), None)
            if start is not None:
                self.add("h.reasoning_opener_written", "a model that always reasons still writes the opener itself",
                         start, s.r_open.text + "\n" + _REASON + "\n" + s.r_close.text + "\n\n" + _ANSWER + s.end,
                         self.msg(reasoning=_REASON, content=_ANSWER),
                         suggestion=_set(s.reasoning, "open_pattern",
                                         f"^\\s*{_esc(s.r_open.text)}|{s.fields[s.reasoning]['open_pattern']}",
                                         "consume the opener when the model writes it"))
        if s.calls is None:
            self.na["h_calls"] = s.calls_why
            return
        lead, reasoning = self.lead(p)
        close = s.calls.close
        if close is not None and close.text and s.eot and close.text != s.eot and not s.calls.listed:
            text, expected = self.calls([("get_weather", {"city": "Paris"})], close=False)
            self.add("h.missing_call_close", "a call without its close marker, then the end of turn", p,
                     lead + s.end_after(s.tool_section(text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_lookahead_close(s, s.tools, s.eot))
        begin, end = s.section
        if begin:
            text, expected = self.calls([("get_weather", {"city": "Paris"})])
            if end:
                self.add("h.missing_section_close", "a tool section without its close, then the end of turn", p,
                         lead + begin + text + s.end, self.msg(reasoning=reasoning, calls=expected),
                         suggestion="nothing should depend on the section close")
            stray = "Calling the weather tool."
            self.add("h.text_in_tool_section", "text inside the tool section, before the call", p,
                     lead + begin + "\n" + stray + "\n" + text + (end or "") + s.end,
                     self.msg(reasoning=reasoning, calls=expected),
                     accept=(self.msg(reasoning=reasoning, content=stray, calls=expected),),
                     suggestion="let text inside a tool section go to content")
        opens = _delim(s.fields[s.tools], "open")
        if opens is not None and opens.triggers and not s.calls.listed:
            body_value, exp = s.calls.call_value("get_weather", {"city": "Paris"}, 0, {})
            close_text = s.calls.close.text if s.calls.close and s.calls.close.text else ""
            bare = s.body_text(body_value)
            self.add("h.bare_json_call", "a call written as bare JSON, without any marker", p,
                     lead + bare + close_text + s.end if close_text == s.eot else lead + bare + s.end,
                     self.msg(reasoning=reasoning, calls=[exp]), suggestion="accept a bare JSON call at the turn start")

    def i(self) -> None:
        s = self.s
        p = self.main
        if p is None or s.content != s.implicit:
            return
        if s.calls is None:
            self.na["i"] = s.calls_why
            return
        lead, reasoning = self.lead(p)
        example = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
        answer = f"A call looks like {example} in the request body."
        self.add("i.json_example_in_answer", "a JSON example in the answer that looks like a call", p,
                 lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                 suggestion="open bare-JSON calls only at the start of the turn: (?<=^\\s*) before the pattern")
        fenced = f"Send this:\n```json\n{example}\n```"
        self.add("i.json_in_code_block", "a fenced JSON example in the answer", p,
                 lead + fenced + s.end, self.msg(reasoning=reasoning, content=fenced),
                 suggestion="open bare-JSON calls only at the start of the turn: (?<=^\\s*) before the pattern")


def _cut_point(text: str) -> int:
    """Where to cut a call: inside its arguments, after the first value starts."""
    for marker in ("Paris",):
        i = text.find(marker)
        if i != -1:
            return i + 2
    return max(1, len(text) * 2 // 3)


def _marker_word(open_text: str) -> str:
    text = open_text.strip()
    m = regex.match(r"\S+?(?:>|\]|\|>|｜>)", text)
    return m.group(0) if m else (text.split()[0] if text else "")


def _tag_terminator(s: _Shape) -> str:
    args = s.fields[s.tools].get("content_args") or {}
    try:
        sample = pattern_samples(args["tag_pattern"], {"key": "k", "value": "\x01"})[0].text
    except (SampleError, KeyError):
        return ""
    after = sample.split("\x01", 1)[1] if "\x01" in sample else ""
    return after.strip().split("\n")[0].strip()


# ---------------------------------------------------------------------------------------------
# Suggestions: concrete template changes, written from the template's own delimiters


def _source(fspec: dict, kind: str) -> str | None:
    if kind in fspec:
        raw = fspec[kind]
        lits = [raw] if isinstance(raw, str) else list(raw)
        return "|".join(_esc(x) for x in sorted(lits, key=len, reverse=True))
    return fspec.get(kind + "_pattern")


@dataclass
class _Fix:
    """A suggested template change: ``text`` for people, ``changes`` (JSON path -> new value) to apply it."""

    text: str
    changes: list


def _set(field_name: str, key: str, value: Any, why: str) -> _Fix:
    return _Fix(f"fields.{field_name}: {json.dumps({key: value}, ensure_ascii=False)} ({why})",
                [(("fields", field_name, key), value)])


def apply_fix(spec: dict, changes: list) -> dict:
    """A copy of ``spec`` with the changes of a suggestion applied (``[(path, value), ...]``; setting
    ``close_pattern`` drops ``close`` and the other way round)."""
    out = json.loads(json.dumps(spec))
    for path, value in changes:
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        key = path[-1]
        node[key] = value
        if key in ("open", "close"):
            node.pop(key + "_pattern", None)
        elif key in ("open_pattern", "close_pattern"):
            node.pop(key[:-len("_pattern")], None)
    return out


def _sugg_lookahead_close(s: _Shape, field_name: str, eot: str) -> _Fix:
    src = _source(s.fields[field_name], "close") or ""
    return _set(field_name, "close_pattern", f"{src}|(?={_esc(eot)})",
                "a zero-width close on the end-of-turn token, which stays for the content field to consume")


def _sugg_anchored_open(s: _Shape) -> _Fix:
    src = _source(s.fields[s.reasoning], "open") or ""
    return _set(s.reasoning, "open_pattern", f"^\\s*(?:{src})",
                "the reasoning opens only at the start of the turn, right after the prompt")


BALANCED_JSON = r'(?:[^"\\<]|"(?:[^"\\]|\\.)*")*'


def _sugg_balanced_close(s: _Shape) -> _Fix:
    f = s.fields[s.tools]
    open_text = s.calls.open_text("x", 0)[0] if s.calls else ""
    marker = _esc(_marker_word(open_text) or open_text)
    close = _source(f, "close") or ""
    return _set(s.tools, "close_pattern", f"(?<={marker}{BALANCED_JSON})(?:{close})",
                "the close counts only where the quotes since the open marker are balanced")


def _sugg_tag_lookahead(s: _Shape) -> _Fix:
    args = dict(s.fields[s.tools].get("content_args") or {})
    tag = args.get("tag_pattern", "")
    first = _marker_word(pattern_samples(tag, {"key": "k", "value": "v"})[0].text) if tag else ""
    lead = regex.sub(r"k.*", "", first)
    args["tag_pattern"] = f"{tag}(?=\\s*(?:{_esc(lead)}|$))"
    return _Fix(f"fields.{s.tools}.content_args.tag_pattern: {json.dumps(args['tag_pattern'], ensure_ascii=False)} "
                "(a value ends only at a terminator followed by the next parameter or the end of the call)",
                [(("fields", s.tools, "content_args"), args)])


def _sugg_close_after_value(s: _Shape, term: str) -> _Fix:
    close = _source(s.fields[s.tools], "close") or ""
    return _set(s.tools, "close_pattern", f"(?<={_esc(term)}\\s*)(?:{close})",
                "the call closes only right after a parameter's terminator; add the zero-parameter form as "
                "another lookbehind alternative")


def _sugg_call_open_lookahead(s: _Shape) -> _Fix:
    src = _source(s.fields[s.tools], "open") or ""
    return _set(s.tools, "open_pattern", f"(?:{src})(?=\\s*[{{\\[<])",
                "the marker opens a call only when a call body follows")


def _sugg_blank(s: _Shape) -> _Fix:
    texts, changes = [], []
    for name in (s.tools, s.reasoning):
        if name:
            src = _source(s.fields[name], "close")
            if src:
                fix = _set(name, "close_pattern", f"(?:{src})\\s*", "")
                texts.append(fix.text.replace(" ()", ""))
                changes += fix.changes
    return _Fix("; ".join(texts) + " (closes swallow the whitespace after them, so no blank content region opens)",
                changes)


def _sugg_repeats(field_name: str, join: str | None = None) -> _Fix:
    changes = [(("fields", field_name, "repeats"), True)]
    if join is not None:
        changes.append((("fields", field_name, "join"), join))
    text = f'fields.{field_name}: "repeats": true' + (f', "join": {json.dumps(join)}' if join is not None else "")
    return _Fix(text + " (later blocks are added instead of replacing earlier ones)", changes)


def _sugg_state(s: _Shape, p: _Prompt) -> _Fix | str:
    if p.state == "thinking_off" and s.reasoning:
        src = _source(s.fields[s.reasoning], "open") or ""
        close = _source(s.fields[s.reasoning], "close") or ""
        return _set(s.reasoning, "open_pattern", f"^\\s*(?:{src}|(?={close}))",
                    "a bare reasoning close at the start of the turn opens and closes an empty reasoning region")
    if p.state == "reasoning":
        return "the prompt leaves the parser inside the reasoning: the reasoning close must be watched there"
    return "check start_anchor against this prompt"


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
                return ProbeResult(case, status, ref_got, f"transformers reference, {label}",
                                   "the transformers reference parser gets this wrong (our engine does not)")
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
    import parsing

    # Text is parsed as JSON text only, never opened as a path: it may come from an editor or a request.
    compiled = parsing.loads_template(template) if isinstance(template, str) else parsing.load_template(template)
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
    builder = _Builder(shape, prompts)
    builder.build()
    markers = _markers(shape)
    by_class: dict[str, list] = {c: [] for c in CLASSES}
    for case in builder.cases:
        by_class[case.cls].append(_run(compiled, case, tools, markers, shape, reference))
    classes = []
    for c, title in CLASSES.items():
        results = by_class[c]
        if not results:
            reason = next((v for k, v in builder.na.items() if k[0] == c), None) or _na_reason(c, shape)
            classes.append(ClassResult(c, title, "n/a", reason=reason))
            continue
        statuses = {r.status for r in results}
        status = "fail" if "fail" in statuses else "limit" if "limit" in statuses else "pass"
        classes.append(ClassResult(c, title, status, results))
    for results in by_class.values():
        for r in results:
            if r.status == "fail" and r.case.fix:
                r.fix_verified = _verify_fix(spec, r.case, tools, markers, shape)
    notes = list(shape.notes) + skipped
    if shape.calls is None and shape.tools:
        notes.append(shape.calls_why)
    return ProbeReport(classes, notes)


def _verify_fix(spec: dict, case: ProbeCase, tools: list, markers: list, shape: _Shape) -> bool:
    import parsing

    try:
        patched = parsing.load_template(apply_fix(spec, case.fix))
    except parsing.TemplateError:
        return False
    return _run(patched, case, tools, markers, shape).status == "pass"


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
