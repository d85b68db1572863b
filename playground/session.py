"""Per-session state and the recorded Run; free of UI types.

A :class:`Run` is the one record everything derives from: the prompt prefix,
the generated text as the chunks it arrived in, the template text and the
tools.  Streaming feeds its chunks to a parser (:class:`LiveParse`); a template
edit re-parses the same chunks (:func:`parse_run`); replay feeds them again
with delays; the side-by-side check (`playground.reference`) feeds them to the
transformers reference.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import parsing

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


class LiveParse:
    """Feeds chunks to a spanning parser and never raises after construction.

    Construction raises `parsing.TemplateError` for a bad template.  A
    parser error during ``feed``/``finalize`` (or while reading the prefix) is
    recorded in ``errors`` with its offset; later text is kept as unparsed.
    """

    def __init__(self, template_text: str, prefix: str, tools: list | None = None):
        self.compiled = parsing.loads_template(template_text)
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
            self.parser = parsing.ResponseParser(self.compiled, self.prefix, tools=tools or None, spans=True,
                                                 recover=True)
            self._add(self.parser.initial_events, "prefix")
        except Exception as e:  # noqa: BLE001 - shown to the user, never raised
            self.parser = None
            self.failed = True
            self.unparsed = self.prefix
            self.errors.append({"message": describe_error(e), "start": 0, "end": len(self.prefix), "field": None,
                                "timeout": isinstance(e, parsing.PatternTimeoutError)})

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
        self.errors.append({"message": describe_error(e), "start": start, "end": self._text_len(), "field": None,
                            "timeout": isinstance(e, parsing.PatternTimeoutError)})

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
        return ParseView(text=text, prefix_length=p.prefix_length, dropped_prefix=p.dropped_prefix,
                         segments=p.segments(), delimiters=list(p.delimiters), events=self.events,
                         chunk_starts=self.chunk_starts, held=held, errors=self.errors,
                         message=self.message, final=self.final, field_names=self.field_names)


def describe_error(e: BaseException) -> str:
    """``"ExceptionType: message"`` for showing an exception to the user (never a traceback)."""
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

    Raises `parsing.TemplateError` when the template is invalid.
    """
    live = LiveParse(template_text if template_text is not None else run.template_text, run.prefix,
                     list(run.tools) if run.tools else None)
    for chunk in run.chunks:
        live.feed(chunk)
    live.finalize()
    return live.view()


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
