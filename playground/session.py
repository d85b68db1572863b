"""Per-session state and the recorded Run; free of UI types.

A :class:`Run` is the one record everything derives from: the prompt prefix,
the generated text as the chunks it arrived in, the template text and the
tools.  Streaming feeds its chunks to a parser (:class:`LiveParse`); a template
edit re-parses the same chunks (:func:`parse_run`); replay feeds them again
with delays; the side-by-side check feeds them to the transformers reference
(:func:`reference_check`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from . import engine

SKELETON_TEMPLATE = {
    "version": 1,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "json",
            "repeats": True,
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}


def template_to_text(spec: Any) -> str:
    """Pretty JSON text (2-space indent, unicode kept) for a template dict."""
    return json.dumps(spec, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class Run:
    """One recorded generation.

    ``prefix``: the rendered prompt (str). ``chunks``: the generated text as the
    chunks arrived (tuple of str, empty strings already dropped). ``times``:
    seconds since the start of the generation at which each chunk arrived
    (same length as ``chunks``, may be empty for pasted text). ``template_text``:
    the template JSON text used. ``tools``: list of tool schemas or None.
    ``source``: "model", "paste" or "example".
    """

    prefix: str = ""
    chunks: tuple = ()
    template_text: str = ""
    tools: tuple | None = None
    times: tuple = ()
    source: str = "model"

    @property
    def text(self) -> str:
        """The whole generated text."""
        return "".join(self.chunks)


@dataclass
class ParseView:
    """Everything the renderer needs about one (partial or final) parse.

    Offsets are character offsets into ``text`` (= the prefix after its start
    anchor, then the generation).  ``segments``: dicts ``kind`` ("delimiter" |
    "body" | "discarded"), ``field``, ``start``, ``end``, ``origin``; they may
    leave a gap at the end while streaming.  ``events``: all events (initial ones
    first) each with ``index`` and ``phase`` ("prefix" | "stream" | "final").
    ``chunk_starts``: offset at which each generation chunk starts.  ``held``:
    (start, end) bytes held back.  ``errors``: dicts ``message``, ``start``,
    ``end``, ``field``.  ``message``: the final dict (None until final or on error).
    """

    text: str = ""
    prefix_length: int = 0
    dropped_prefix: str = ""
    segments: list = field(default_factory=list)
    delimiters: list = field(default_factory=list)
    events: list = field(default_factory=list)
    chunk_starts: list = field(default_factory=list)
    held: tuple = (0, 0)
    errors: list = field(default_factory=list)
    message: dict | None = None
    final: bool = False
    field_names: list = field(default_factory=list)
    engine: str = engine.ENGINE


class LiveParse:
    """Feeds chunks to a spanning parser and never raises after construction.

    Construction raises :class:`engine.TemplateProblem` for a bad template.  A
    parser error during ``feed``/``finalize`` (or while reading the prefix) is
    recorded in ``errors`` with its offset; later text is kept as unparsed.
    """

    def __init__(self, template_text: str, prefix: str, tools: list | None = None):
        self.compiled = engine.load_template(template_text)
        spec = getattr(self.compiled, "spec", None)
        if not isinstance(spec, dict):
            spec = json.loads(template_text) if isinstance(template_text, str) else template_text
        self.field_names = list((spec or {}).get("fields", {}))
        self.prefix = prefix or ""
        self.events: list[dict] = []
        self.chunk_starts: list[int] = []
        self.errors: list[dict] = []
        self.unparsed = ""
        self.message = None
        self.final = False
        self.failed = False
        self._last_open: dict[str, int] = {}
        try:
            self.parser = engine.make_parser(self.compiled, self.prefix, tools)
            self._add(self.parser.initial_events, "prefix")
        except Exception as e:  # noqa: BLE001 - shown to the user, never raised
            self.parser = None
            self.failed = True
            self.unparsed = self.prefix
            self.errors.append({"message": _describe(e), "start": 0, "end": len(self.prefix), "field": None,
                                "timeout": isinstance(e, engine.PatternTimeoutError)})

    def _text_len(self) -> int:
        return len(self.parser.stream_text) if self.parser is not None else 0

    def _add(self, events: list[dict], phase: str) -> None:
        for ev in events:
            ev = dict(ev)
            ev["index"], ev["phase"] = len(self.events), phase
            if ev.get("type") == "region_open" and "start" in ev:
                self._last_open[ev.get("field")] = ev["start"]
            if ev.get("type") == "region_error":
                start = ev.get("start", self._last_open.get(ev.get("field"), 0))
                end = ev.get("end", self._text_len())
                self.errors.append({"message": f"{ev.get('field')}: {ev.get('message')}", "start": start,
                                    "end": max(end, start), "field": ev.get("field")})
            self.events.append(ev)

    def feed(self, chunk: str) -> None:
        """Feed one generation chunk (str); empty chunks are ignored."""
        if not chunk or self.final:
            return
        if self.failed:
            self.chunk_starts.append(self._text_len() + len(self.unparsed))
            self.unparsed += chunk
            return
        self.chunk_starts.append(self._text_len())
        try:
            self._add(self.parser.feed(chunk), "stream")
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def _fail(self, e: Exception) -> None:
        self.failed = True
        held = self.parser.held() if hasattr(self.parser, "held") else (self._text_len(),) * 2
        start = min(held[0], self._text_len())
        self.errors.append({"message": _describe(e), "start": start, "end": self._text_len(), "field": None,
                            "timeout": isinstance(e, engine.PatternTimeoutError)})

    def finalize(self) -> None:
        """End the stream: flush, close regions, compute the message (unless failed)."""
        if self.final:
            return
        self.final = True
        if self.failed:
            return
        try:
            message, events = self.parser.finalize()
            self._add(events, "final")
            self.message = message
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def view(self) -> ParseView:
        """A snapshot for rendering (cheap: lists are shared, not copied)."""
        p = self.parser
        if p is None:
            return ParseView(text=self.unparsed, prefix_length=len(self.prefix), events=self.events,
                             chunk_starts=self.chunk_starts, errors=self.errors, final=self.final,
                             field_names=self.field_names, held=(0, 0))
        text = p.stream_text + self.unparsed
        held = (len(text), len(text)) if self.final else tuple(p.held())
        try:
            segments = p.segments()
        except Exception:  # noqa: BLE001 - some engines only tile after finalize
            segments = []
        return ParseView(text=text, prefix_length=p.prefix_length, dropped_prefix=p.dropped_prefix,
                         segments=segments, delimiters=list(p.delimiters), events=self.events,
                         chunk_starts=self.chunk_starts, held=held, errors=self.errors,
                         message=self.message, final=self.final, field_names=self.field_names)


def _describe(e: BaseException) -> str:
    msg = str(e) or type(e).__name__
    return f"{type(e).__name__}: {msg}"


_USUAL_NAMES = {
    "reasoning_content": {"thinking", "reasoning", "thoughts", "think", "reasoning_text", "thought"},
    "tool_calls": {"tool_call", "tools", "function_calls", "calls", "functions", "tool_use"},
    "content": {"text", "answer", "response", "final", "message", "output"},
}


def field_name_hints(template_text: str) -> list[str]:
    """Hints for fields named differently from the keys chat templates read
    (``reasoning_content``, ``tool_calls``, ``content``); [] when none or unparsable."""
    try:
        fields = json.loads(template_text).get("fields", {})
    except (ValueError, AttributeError):
        return []
    hints = []
    for usual, aliases in _USUAL_NAMES.items():
        if usual in fields:
            continue
        for name in fields:
            if name.lower() in aliases:
                hints.append(f"field '{name}': chat templates read '{usual}'")
    return hints


def parse_tools(text: str | None) -> list | None:
    """Parse the tools editor text: a JSON list of tool schemas, or empty for None.

    Raises ValueError with a readable message when it is not a JSON list of objects.
    """
    if text is None or not str(text).strip():
        return None
    try:
        tools = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"Tools: JSON syntax error at line {e.lineno}, column {e.colno}: {e.msg}") from None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ValueError("Tools must be a JSON list of tool schemas (objects).")
    return tools or None


def parse_run(run: Run, template_text: str | None = None) -> ParseView:
    """Re-parse a recorded run (no delays) with ``template_text`` (default: the run's own).

    Raises :class:`engine.TemplateProblem` when the template is invalid.
    """
    live = LiveParse(template_text if template_text is not None else run.template_text, run.prefix,
                     list(run.tools) if run.tools else None)
    for chunk in run.chunks:
        live.feed(chunk)
    live.finalize()
    return live.view()


def normalize_events(events: list[dict]) -> list[dict]:
    """Events without offsets/bookkeeping, adjacent chunks of one region merged (for comparisons)."""
    out: list[dict] = []
    for ev in events:
        ev = {k: v for k, v in ev.items() if k in ("type", "field", "text", "dirty", "value", "message")}
        if (out and ev["type"] == "region_chunk" and out[-1]["type"] == "region_chunk"
                and out[-1]["field"] == ev["field"] and out[-1].get("dirty") == ev.get("dirty")):
            out[-1] = {**out[-1], "text": out[-1]["text"] + ev["text"]}
        else:
            out.append(ev)
    return out


def reference_check(run: Run, view: ParseView, template_text: str | None = None) -> dict:
    """Compare our parse of ``run`` with the installed transformers parser fed the same chunks.

    Returns ``{"agree": bool, "ref_message": dict | None, "ref_error": str | None,
    "differences": [str, ...], "skipped": str | None}``; never raises.  The reference runs under
    a total time budget (``engine.REFERENCE_BUDGET_S``): past it, or when our own parse hit a
    pattern timeout, the check is skipped (``skipped`` says why, ``agree`` is False, no differences).
    """
    text = template_text if template_text is not None else run.template_text
    result = {"agree": False, "ref_message": None, "ref_error": None, "differences": [], "skipped": None}
    if any(e.get("timeout") for e in view.errors):
        result["skipped"] = ("reference check skipped: a pattern of this template ran past our parser's "
                             "time limit, so the transformers parser was not run")
        return result
    ref_events: list[dict] = []
    try:
        spec = json.loads(text)
        ref = engine.reference_parser(spec, run.prefix, list(run.tools) if run.tools else None)
        ref_events += ref.initial_events
        for chunk in run.chunks:
            ref_events += ref.feed(chunk)
        message, final = ref.finalize()
        ref_events += final
        result["ref_message"] = message
    except engine.ReferenceTimeout as e:
        result["skipped"] = (f"reference check skipped: the transformers parser exceeded the time budget "
                             f"({e.budget:g}s) on this template")
        return result
    except Exception as e:  # noqa: BLE001
        result["ref_error"] = _describe(e)
    diffs = result["differences"]
    ours_err = [e["message"] for e in view.errors]
    if result["ref_error"] or ours_err:
        if not (result["ref_error"] and ours_err):
            diffs.append(f"reference error: {result['ref_error'] or 'none'}; ours: {'; '.join(ours_err) or 'none'}")
    else:
        if view.message != result["ref_message"]:
            diffs.append("message differs:\n  ours: " + _short(view.message) + "\n  reference: "
                         + _short(result["ref_message"]))
        ours_n, ref_n = normalize_events(view.events), normalize_events(ref_events)
        if ours_n != ref_n:
            for i, (a, b) in enumerate(zip(ours_n, ref_n)):
                if a != b:
                    diffs.append(f"event {i} differs:\n  ours: {_short(a)}\n  reference: {_short(b)}")
                    break
            else:
                diffs.append(f"event count differs: ours {len(ours_n)}, reference {len(ref_n)}")
    result["agree"] = not diffs
    return result


def _short(obj: Any, limit: int = 400) -> str:
    s = json.dumps(obj, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[:limit] + "…"


_TOKENISH = re.compile(r"<[^<>\s]{1,40}>|\s+|\w{1,6}|[^\w\s]", re.UNICODE)


def split_tokenish(text: str) -> tuple:
    """Split pasted text into token-like chunks (special tags, words of <= 6 chars,
    whitespace runs, single symbols) for replaying it as a stream. Joins back to ``text``."""
    parts = _TOKENISH.findall(text)
    if "".join(parts) != text:  # defensive: never lose characters
        return tuple(text[i:i + 4] for i in range(0, len(text), 4))
    return tuple(parts)


@dataclass
class Session:
    """Per-browser-session data (deep-copied by gr.State for each visitor).

    ``history``: chat messages as passed to ``apply_chat_template``.
    ``run`` / ``view``: the current Run and its latest parse.  ``template_text``:
    the editor's content.  ``model_id``: the model this session chose.
    ``pending_tool_calls``: tool calls of the last assistant turn awaiting results.
    """

    history: list = field(default_factory=list)
    run: Run | None = None
    view: ParseView | None = None
    check: dict | None = None
    template_text: str = field(default_factory=lambda: template_to_text(SKELETON_TEMPLATE))
    model_id: str | None = None
    pending_tool_calls: list = field(default_factory=list)

    def __deepcopy__(self, memo):
        new = Session()
        new.history = copy.deepcopy(self.history, memo)
        new.run, new.view, new.check = self.run, self.view, self.check
        new.template_text, new.model_id = self.template_text, self.model_id
        new.pending_tool_calls = copy.deepcopy(self.pending_tool_calls, memo)
        return new
