"""The recorded Run and its parse; free of UI types (the session state machine is `playground.state`).

A :class:`Run` is the one record everything derives from: the prompt prefix,
the generated text as the chunks it arrived in, the template text and the
tools.  Streaming feeds its chunks to a parser (:class:`LiveParse`); a template
edit re-parses the same chunks (:func:`parse_run`); replay feeds them again
with delays; the side-by-side check (`playground.reference`) feeds them to the
transformers reference.
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

import parsing
from examples import default_template

from .compact import ChunkedText, IntArray, Offsets, Records, delimiter_log, event_log, segment_log
from .jsonsize import json_head, json_size, memory_size
from .limits import RequestBudget

MAX_ERRORS = 200  # region errors listed per parse (a template failing on every region would list thousands)
MAX_ERROR_CHARS = 2000  # characters kept of each error message
# A message counts as at most this many bytes in memory accounting: its JSON measures the memory of ordinary values,
# but a transform that repeats a value thousands of times shares it (a 250 MB JSON held in a few KB), and measuring
# on would cost seconds; a public server does not keep such a message anyway (`Limits.max_message_chars`).
NBYTES_MESSAGE_CHARS = 8 << 20
# Values kept in events (and the message) count at most this many bytes each in memory accounting: measuring on
# would cost time; with a shown-message cap (a public server) the kept values are bounded long before this.
NBYTES_VALUE_BYTES = 256 << 20
VALUE_HEAD_CHARS = 1000  # characters of JSON kept of a region value over the cap (the event log shows 300)

#: The template the editor starts from when the model brings none: the project's default (the library's).
SKELETON_TEMPLATE = default_template()
#: compiled templates kept by their exact text (`compiled_template`), at most
COMPILED_TEMPLATES = 8
#: and at most this weight in all: their patterns' compile size (`parsing.template.template_compile_size`, at most
#: `parsing.regex_cost.MAX_TEMPLATE_SIZE` each: ~110 bytes an item compiled, and a template holds each pattern about
#: twice) plus a sixteenth of their text's length (a character of text, or of a compiled literal delimiter, takes
#: ~5 bytes). A template at every cap fits; 8 templates with a 99,000-item pattern held ~220 MB, now 3 are kept.
COMPILED_TEMPLATES_SIZE = parsing.regex_cost.MAX_TEMPLATE_SIZE + parsing.template.MAX_TEMPLATE_JSON_CHARS // 16


def template_to_text(spec: Any) -> str:
    """Pretty JSON text (2-space indent, unicode kept) for a template dict."""
    return json.dumps(spec, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class Run:
    """One recorded generation.

    ``prefix``: the rendered prompt (str). ``chunks``: the generated text as the
    chunks arrived: any iterable of str on construction, kept as a `ChunkedText`
    (the text once plus the chunk boundaries; a sequence of str with empty chunks
    dropped). ``times``: seconds since the start of the generation at which each
    chunk arrived (same length as ``chunks``, may be empty for pasted text; kept
    as an ``array('d')``). ``template_text``: the template JSON text used.
    ``tools``: list of tool schemas or None. ``source``: "model", "remote", "paste" or "example".
    ``cut``: why the stream ended early ("" when it was complete; a dropped server connection keeps
    what arrived).  ``request``: for a remote run, what was sent (see
    ``playground.remote.RemoteSource.request``), else None.
    """

    prefix: str = ""
    chunks: ChunkedText = ()
    template_text: str = ""
    tools: tuple | None = None
    times: Any = ()
    source: str = "model"
    cut: str = ""
    request: Any = None

    def __post_init__(self):
        if not isinstance(self.chunks, ChunkedText):
            object.__setattr__(self, "chunks", ChunkedText(self.chunks))
        if not isinstance(self.times, array):
            object.__setattr__(self, "times", array("d", self.times))

    __hash__ = None  # holds arrays

    @property
    def text(self) -> str:
        """The whole generated text."""
        return self.chunks.text

    @property
    def nbytes(self) -> int:
        """Approximate bytes this run holds."""
        return (self.chunks.nbytes + len(self.prefix) + len(self.template_text) + len(self.times) * 8
                + len(json.dumps(self.tools or [], default=str)))


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
    ``end``, ``field`` (at most `MAX_ERRORS`; ``errors_dropped`` counts the rest),
    plus ``timeout`` (a pattern ran past its per-call budget), ``budget`` (the
    request's time budget cut the parse here) and ``values`` (the transforms passed the
    budget's ``max_transform_values``).  ``message``: the final dict (None
    until final, on error, or when it is over ``message_limit``).  ``message_limit``: the largest message (in
    characters of JSON, `playground.jsonsize.json_size`) the page may show, None: any; ``message_size``: set when
    the final message was over it: its JSON is at least that many characters (the message itself is dropped).
    ``values_nbytes``: bytes of Python memory held by the region values kept in ``events`` and by ``message``
    (`playground.jsonsize.memory_size`).  ``segments``, ``delimiters`` and ``events`` are
    sequences of dicts; a `LiveParse` view keeps them as `playground.compact.Records`
    (arrays; each dict rebuilt when read).
    """

    text: str = ""
    prefix_length: int = 0
    dropped_prefix: str = ""
    segments: Any = field(default_factory=list)
    delimiters: Any = field(default_factory=list)
    events: Any = field(default_factory=list)
    chunk_starts: Any = field(default_factory=list)
    held: tuple = (0, 0)
    errors: list = field(default_factory=list)
    message: dict | None = None
    final: bool = False
    field_names: list = field(default_factory=list)
    errors_dropped: int = 0
    preview: PartialMessage | None = None
    message_limit: int | None = None
    message_size: int | None = None
    values_nbytes: int = 0

    @property
    def cut(self) -> dict | None:
        """The error where a request's time budget stopped this parse, else None."""
        return next((e for e in self.errors if e.get("budget")), None)

    @property
    def anchor_missing(self) -> bool:
        """A prompt prefix was given but the template's start anchor occurs nowhere in it, so the whole prefix was
        parsed as if the model had written it (as the reference does; its delimiters count)."""
        return self.prefix_length > 0 and not self.dropped_prefix

    @property
    def nbytes(self) -> int:
        """Approximate bytes this view holds: text, records, errors, and the Python memory of the region values
        and the message (``values_nbytes``; a view built by hand without it counts its message as JSON)."""
        size = len(self.text) * (1 if self.text.isascii() else 4) + len(self.dropped_prefix)
        for part in (self.segments, self.delimiters, self.events, self.chunk_starts):
            size += getattr(part, "nbytes", 100 * len(part))
        size += sum(len(e.get("message", "")) + 100 for e in self.errors)
        if self.values_nbytes:
            return size + self.values_nbytes
        return size + json_size(self.message, NBYTES_MESSAGE_CHARS) if self.message is not None else size


class PartialMessage:
    """A live approximation of the message, updated one event at a time: closed values, else the raw text of
    the regions still open (a field that already holds a non-string value gets it under ``_streaming``).

    ``fields``: the template's fields (name -> `parsing.template.FieldSpec`); with them a closed value is stored by
    the parser's own rule (a ``join`` field joins it, a ``repeats`` field appends it, any other field takes it in
    place of the last one); without them (a view rebuilt from its events alone) a second value of a field is
    appended. The events' values are never changed: the event log and the reference check read them later.
    """

    def __init__(self, fields: dict | None = None):
        self._msg: dict[str, Any] = {}
        self._open: dict[str, list[str]] = {}
        self._fields = fields
        self._appended: set[str] = set()  # fields whose preview value is a list this preview made (no `fields`)

    def add(self, ev: dict) -> None:
        """Take one parser event into account."""
        t, f = ev.get("type"), ev.get("field")
        if t == "region_open":
            self._open[f] = []
        elif t == "region_chunk":
            self._open.setdefault(f, []).append(ev.get("text", ""))
        elif t == "region_close":
            self._open.pop(f, None)
            v = ev.get("value") if "value_size" not in ev else value_note(ev)
            msg = self._msg
            spec = self._fields.get(f) if self._fields is not None else None
            if spec is not None:
                if spec.join is not None:
                    held = msg.get(f)
                    msg[f] = held + spec.join + v if isinstance(held, str) and isinstance(v, str) else v
                elif spec.repeats:
                    msg.setdefault(f, []).append(v)  # (a list of the preview's own)
                else:
                    msg[f] = v
            elif f in msg:
                held = msg[f]
                msg[f] = [*held, v] if isinstance(held, list) and f in self._appended else [held, v]
                self._appended.add(f)
            else:
                msg[f] = v

    def value(self) -> dict:
        """The preview now (a new dict: later events do not change it)."""
        out = {k: list(v) if isinstance(v, list) else v for k, v in self._msg.items()}
        for f, parts in self._open.items():
            if len(parts) > 1:
                parts[:] = ["".join(parts)]
            text = parts[0] if parts else ""
            if f not in out or isinstance(out[f], str):
                out[f] = text
            else:
                out.setdefault("_streaming", {})[f] = text
        return out


def _template_weight(compiled: parsing.CompiledTemplate, text: str) -> int:
    spec = getattr(compiled, "spec", None)
    return (parsing.template.template_compile_size(spec) if isinstance(spec, dict) else 0) + len(text) // 16


@parsing.regex_cost.sized_cache(COMPILED_TEMPLATES_SIZE, _template_weight, maxsize=COMPILED_TEMPLATES)
def compiled_template(text: str) -> parsing.CompiledTemplate:
    """`parsing.loads_template` of ``text``, kept for the `COMPILED_TEMPLATES` texts used last, while they weigh at
    most `COMPILED_TEMPLATES_SIZE` together.

    The page compiles the editor's text several times per edit (its check, the re-parse of the last run and of the
    chat's last turn) and again at each Send and replay; a large template takes seconds (250 pattern fields: about
    3 s on a loaded 2-core machine), outside any request budget. A compiled template is read-only for its parsers
    (what they derive from it is derived once, `parsing.parser._Plan`), so sessions share it. The key is the whole
    text; errors are not kept (they raise again, as `parsing.loads_template` does).
    """
    return parsing.loads_template(text)


class LiveParse:
    """Feeds chunks to a spanning parser and never raises after construction, except `RequestCancelled`.

    Construction raises `parsing.TemplateError` for a bad template.  A parser error during
    ``feed``/``finalize`` (or while reading the prefix) is recorded in ``errors`` with its offset; later text is
    kept as unparsed.  With a ``budget`` (`playground.limits.RequestBudget`) the parser gets what is left of it
    as its ``time_budget`` and the time spent is counted on the budget; when it runs out the parse stops there
    (an error with ``budget: True``), and `RequestCancelled` propagates when the client has left.  Events,
    segments and delimiter matches are kept compactly (`playground.compact.Records`). A final message whose JSON
    is longer than the budget's ``max_message_chars`` is dropped (``message`` None, ``message_size`` says how
    large at least), never serialized whole.
    """

    def __init__(self, template_text: str, prefix: str, tools: list | None = None, *,
                 budget: RequestBudget | None = None, regex_timeout: float | None = parsing.parser.DEFAULT_REGEX_TIMEOUT):
        self.compiled = compiled_template(template_text) if isinstance(template_text, str) else \
            parsing.loads_template(template_text)
        spec = getattr(self.compiled, "spec", None)
        if not isinstance(spec, dict):
            spec = json.loads(template_text) if isinstance(template_text, str) else template_text
        self.field_names = list((spec or {}).get("fields", {}))
        self.prefix = prefix or ""
        self.budget = budget if budget is not None else RequestBudget(None)
        self.events: Records = event_log()
        self.chunk_starts = IntArray()
        self.errors: list[dict] = []
        self.errors_dropped = 0
        self._unparsed: list[str] = []  # text after a failure, kept as parts (joined when read)
        self._unparsed_len = 0
        self.message = None
        self.message_size: int | None = None  # the final message was over the cap: its JSON is at least this long
        self.final = False
        self.failed = False
        self._last_open: dict[str, int] = {}
        self.preview = PartialMessage(self.compiled.fields)
        # JSON characters of region values the events may still keep (the shown-message cap: what a message may
        # hold, the events hold no more); None: no cap. A value over what is left keeps only its head.
        self._value_chars_left = self.budget.max_message_chars
        self.values_nbytes = 0  # Python memory of the kept values (`memory_size`), for `ParseView.nbytes`
        self._text_len_done = 0  # stream length once the parser stopped
        self._fed = 0  # generation characters fed to the parser
        try:
            with self.budget.working():
                self.parser = parsing.ResponseParser(self.compiled, self.prefix, tools=tools or None, spans=True,
                                                     recover=True, regex_timeout=regex_timeout,
                                                     time_budget=self.budget.remaining(),
                                                     max_values=self.budget.max_transform_values,
                                                     max_join_chars=self.budget.max_message_chars
                                                     or parsing.parser.DEFAULT_MAX_JOIN_CHARS)
            self._add(self.parser.initial_events, "prefix")
        except Exception as e:  # noqa: BLE001 - shown to the user, never raised
            self.parser = None
            self.failed = True
            self._keep_unparsed(self.prefix)
            self._error(describe_error(e), 0, len(self.prefix), None, e)

    def _text_len(self) -> int:
        if self.parser is None:
            return 0
        return self._text_len_done if self.failed else self.parser.prefix_length + self._fed

    def _error(self, message: str, start: int, end: int, field_name: str | None,
               exc: BaseException | None = None) -> dict | None:
        if len(self.errors) >= MAX_ERRORS:
            self.errors_dropped += 1
            return None
        if len(message) > MAX_ERROR_CHARS:
            message = message[:MAX_ERROR_CHARS] + "…"
        err = {"message": message, "start": start, "end": max(end, start), "field": field_name,
               "timeout": isinstance(exc, parsing.PatternTimeoutError),
               "budget": isinstance(exc, parsing.BudgetExceededError)}
        self.errors.append(err)
        return err

    def _add(self, events: list[dict], phase: str) -> None:
        log = self.events
        for ev in events:
            etype = ev.get("type")
            if etype == "region_open":
                self._last_open[ev.get("field")] = ev["start"]
            elif etype == "region_error":
                start = ev.get("start", self._last_open.get(ev.get("field"), 0))
                message = str(ev.get("message"))
                err = self._error(f"{ev.get('field')}: {region_error_words(message, str(ev.get('raw', '')))}",
                                  start, ev.get("end", self._text_len()), ev.get("field"))
                if err is not None and message.startswith("PatternTimeoutError:"):
                    err["timeout"] = True  # the reference has no regex timeout: it would hang on this
                elif err is not None and message.startswith("ValuesBudgetError:"):
                    err["values"] = True  # the reference has no such count: it would build them all
            elif etype == "region_close" and "value" in ev:
                ev = self._keep_value(ev)
            self.preview.add(ev)
            ev = dict(ev, phase=phase)
            log.append(ev)

    def _keep_value(self, ev: dict) -> dict:
        """``ev`` (a region_close) as the log keeps it: whole while the values kept so far fit the shown-message
        cap, else with ``value`` replaced by ``value_head`` (the first `VALUE_HEAD_CHARS` characters of its JSON)
        and ``value_size`` (its JSON is at least that long): a transform can build a value of hundreds of MB from
        a short text, and a kept view must not hold what the page will not show. Counts what it keeps in
        ``values_nbytes``."""
        value = ev["value"]
        left = self._value_chars_left
        if left is not None:
            size = json_size(value, left)
            if size > left:
                head = json_head(value, VALUE_HEAD_CHARS)[0]
                self.values_nbytes += len(head) + 100
                ev = {k: v for k, v in ev.items() if k != "value"}
                ev["value_head"], ev["value_size"] = head, size
                return ev
            self._value_chars_left = left - size
        if self.values_nbytes <= NBYTES_VALUE_BYTES:
            self.values_nbytes += memory_size(value, NBYTES_VALUE_BYTES)
        return ev

    def feed(self, chunk: str) -> None:
        """Feed one generation chunk (str); empty chunks are ignored.

        Raises:
            RequestCancelled: the budget's client left.
        """
        if not chunk or self.final:
            return
        self.budget.check()
        if not self.failed and self.budget.exhausted:  # spent elsewhere in the request (drawing the views)
            self._fail(parsing.BudgetExceededError(self.budget.seconds).located("feed", self.parser.held()[0]))
        if self.failed:
            self.chunk_starts.append(self._text_len() + self._unparsed_len)
            self._keep_unparsed(chunk)
            return
        self.chunk_starts.append(self._text_len())
        try:
            with self.budget.working():
                events = self.parser.feed(chunk)
            self._fed += len(chunk)
            self._add(events, "stream")
        except Exception as e:  # noqa: BLE001
            self._fed += len(chunk)
            self._fail(e)

    def _keep_unparsed(self, text: str) -> None:
        self._unparsed.append(text)
        self._unparsed_len += len(text)

    @property
    def unparsed(self) -> str:
        """The text that arrived after the parse stopped (the prefix too when it could not be read)."""
        if len(self._unparsed) > 1:
            self._unparsed = ["".join(self._unparsed)]
        return self._unparsed[0] if self._unparsed else ""

    def _fail(self, e: Exception) -> None:
        held_start = self.parser.held()[0]
        stream_len = self.parser.prefix_length + self._fed
        self._text_len_done = stream_len
        self.failed = True
        self._error(describe_error(e), min(held_start, stream_len), stream_len, None, e)

    def finalize(self) -> None:
        """End the stream: flush, close regions, compute the message (unless failed)."""
        if self.final:
            return
        self.final = True
        if self.failed:
            return
        try:
            with self.budget.working():
                message, events = self.parser.finalize()
                cap = self.budget.max_message_chars
                size = json_size(message, cap) if cap is not None else 0
            self._add(events, "final")
            if cap is not None and size > cap:
                self.message_size = size  # the page says so instead; the events keep the values that fit the cap
            else:
                self.message = message
                if self.values_nbytes <= NBYTES_VALUE_BYTES:  # its values may be the events' own: counted twice
                    self.values_nbytes += memory_size(message, NBYTES_VALUE_BYTES)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def view(self) -> ParseView:
        """A snapshot for rendering (the event log is shared, not copied); its time counts on the budget."""
        with self.budget.working():
            return self._view()

    def _view(self) -> ParseView:
        p = self.parser
        if p is None:
            return ParseView(text=self.unparsed, prefix_length=len(self.prefix), events=self.events,
                             chunk_starts=self.chunk_starts, errors=self.errors, final=self.final,
                             field_names=self.field_names, held=(0, 0), errors_dropped=self.errors_dropped,
                             preview=self.preview, message_limit=self.budget.max_message_chars)
        text = p.stream_text + self.unparsed
        self.events.bind(text)
        held = (len(text), len(text)) if self.final else tuple(p.held())
        segments, delimiters = segment_log(), delimiter_log()
        for row in p.segments():
            segments.append(row)
        for row in p.delimiters:
            delimiters.append(row)
        delimiters.bind(text)
        return ParseView(text=text, prefix_length=p.prefix_length, dropped_prefix=p.dropped_prefix,
                         segments=segments, delimiters=delimiters, events=self.events,
                         chunk_starts=self.chunk_starts, held=held, errors=self.errors,
                         message=self.message, final=self.final, field_names=self.field_names,
                         errors_dropped=self.errors_dropped, preview=self.preview,
                         message_limit=self.budget.max_message_chars, message_size=self.message_size,
                         values_nbytes=self.values_nbytes)


def value_note(ev: dict) -> str:
    """What the page shows for a region value the log did not keep (a region_close event with ``value_size``,
    `LiveParse._keep_value`)."""
    return (f"… (value not kept: as JSON it is at least {ev['value_size']:,} characters, more than this server "
            f"keeps for one parse)")


def region_error_words(message: str, raw: str) -> str:
    """What the page says about a region whose value failed to build, from its ``region_error`` event (``message``
    is the parser's ``"ExceptionType: text"``, ``raw`` the region's text): the parser's message, except where
    Python's own words mean nothing to a user. A RecursionError (a value nested deeper than the JSON decoder's
    stack) is said with how deep the region's brackets nest. The event keeps the parser's message, exception type
    included: only the timeline and the status line use these words."""
    if message.startswith("RecursionError"):
        depth = bracket_depth(raw)
        return "the value is nested too deeply to decode" + (f" ({depth:,} levels of brackets)" if depth else "")
    return message


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def bracket_depth(text: str) -> int:
    """How deep ``[``/``{`` brackets nest in ``text`` (JSON-like), not counting those inside double-quoted
    strings; an unbalanced closing bracket counts as closing nothing."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


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


def parse_run(run: Run, template_text: str | None = None, budget: RequestBudget | None = None) -> ParseView:
    """Re-parse a recorded run (no delays) with ``template_text`` (default: the run's own), under ``budget``.

    Raises `parsing.TemplateError` when the template is invalid, `playground.limits.RequestCancelled` when the
    client left.
    """
    live = LiveParse(template_text if template_text is not None else run.template_text, run.prefix,
                     list(run.tools) if run.tools else None, budget=budget)
    for chunk in run.chunks:
        live.feed(chunk)
    live.finalize()
    return live.view()


def _starts_follow(starts, chunks: ChunkedText, base: int) -> bool:
    """Whether ``starts`` are ``base`` plus the chunk boundaries of ``chunks`` (a parse fed exactly those)."""
    n = len(chunks)
    if len(starts) != n or isinstance(starts, Offsets):
        return False
    if n == 0:
        return True
    return starts[0] == base and list(starts)[1:] == [base + end for end in list(chunks.ends)[:-1]]


def keep_parse(run: Run | None, view: ParseView | None) -> ParseView | None:
    """``view`` ready to be kept with ``run``: when its chunk starts are exactly the run's chunk boundaries, they
    are replaced by a computed `Offsets` (the same numbers, not stored twice)."""
    if run is not None and view is not None and _starts_follow(view.chunk_starts, run.chunks, view.prefix_length):
        view.chunk_starts = Offsets(run.chunks, view.prefix_length)
    if view is not None:
        view.preview = None  # only live updates use it
    return view
