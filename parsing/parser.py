"""The streaming response parser and the one-shot `parse_response`.

Behaviour follows transformers 5.23's ``chat_parsing`` exactly (messages,
events, exception types; spec sections 3 to 7), with three differences that
never change a message the reference's one-shot parse would give:

* Linear time: consumed text is dropped from the scan buffer (a small window
  is kept as lookbehind context) and region bodies are kept as lists of
  chunks, so a feed costs time in the size of the chunk, not of the stream.
* Every chunking gives the one-shot result: a delimiter whose match could
  still change is held until decided; the reference's own rule decides only
  where its one-shot parse applies it, at the end of the prefix and at the
  end of the generation (see `parsing.scanner`).
* Opt-in extras: ``spans=True`` (offsets on every event, delimiter matches,
  held bytes, a tiling of the stream into segments) and ``recover=True``
  (a region whose value cannot be built becomes a ``region_error`` event and
  parsing goes on).
"""

from __future__ import annotations

import logging
import time
from copy import deepcopy
from functools import lru_cache, partial
from typing import Any, Callable

from .budget import ParseContext, ValuesBudget
from .content import parse_content, quick_parser, xml_inline_reader
from .errors import BudgetExceededError, TemplateError, ValuesBudgetError
from .scanner import Hit, ScanState, make_hit, WatchSet, literal_step, scan, scan_as_reference, shape_step, watch_sets
from .template import CompiledTemplate, FieldSpec, last_literal_end, load_template
from .tools import tool_parameters, type_tool_calls
from .transform import transform_value

logger = logging.getLogger(__name__)

# Text kept before the consumed position as lookbehind context; trimming happens once this much more has
# been consumed, so the cost of trimming is amortised over the text it drops.
CONTEXT_CHARS = 1024
TRIM_EVERY = 1024
DEFAULT_REGEX_TIMEOUT = 1.0
# Characters the joined strings of `join` fields may total in one parse (``max_join_chars``). `join` repeats its
# string between every two matches: a 60 KB join over 4,000 one-character regions would make 240 MB of message
# from a 12 KB output. Far above any real message, far below what exhausts a machine.
DEFAULT_MAX_JOIN_CHARS = 10_000_000
BODY_BLOCK = 256
# Chunks a fast-path feed leaves unjoined behind the scan buffer (joined, and the buffer trimmed, this often).
TAIL_CHUNKS = 64
# Prefix states kept per template (`_Plan.prefix_states`).
PREFIX_STATES = 32

# The implicit region's captures (none): shared, for captures are only ever read (`_build_value` copies them).
_NO_CAPTURES: dict = {}
# `_close_current`'s value where none was built (a region error with ``recover``, or a join past its budget).
_UNBUILT = object()

_PREFIX_REQUIRED = (
    # transformers 5.23's text, to the letter (callers match on it)
    "`ResponseParser`/`parse_response` requires `prefix` (the chat prompt sent to the model before "
    "generation), because chat templates often pre-write part of the assistant message (e.g. an "
    "opening `<think>` tag) that the parser must see to parse the output correctly. If the generation "
    'already contains the complete message, pass `prefix=""` to opt out explicitly.'
)


class _Plan:
    """What every parser of one template needs, derived once and kept on the `CompiledTemplate`."""

    __slots__ = ("prefix_states", "watch", "dirty", "quick", "fast", "no_fast", "keep_context", "context", "trim_gap",
                 "history", "readers", "origin_search", "start", "text", "defaults", "plain_defaults", "required",
                 "new_output", "anchor")

    def __init__(self, template: CompiledTemplate):
        self.watch: dict[str | None, WatchSet] = watch_sets(template)
        self.dirty = {name: f.dirty for name, f in template.fields.items()}
        self.quick = {name: quick_parser(f.content, f.content_args) for name, f in template.fields.items()}
        # Per text field without a transform: its whole value function (`_build_value` gives just that for text).
        self.text = {name: self.quick[name] if f.content == "text" and f.transform is None else None
                     for name, f in template.fields.items()}
        # Per field, its content parser as a function of (body, context) with the arguments read once (None: none
        # such; `parse_content` reads them at each close).
        self.readers = {name: xml_inline_reader(f.content_args) if f.content == "xml-inline" else None
                        for name, f in template.fields.items()}
        # Per state, what the feed fast path needs: (trigger characters, their finder, whether the prefilter
        # applies at index 0 of the stream, whether the region's chunks are dirty, the texts the finder takes for
        # a literal cut off by the buffer edge and the length of the longest (`_cut_prefixes`)); None: no fast path.
        left = [MAX_CUT_PREFIXES]  # for all states together (a template of many fields has a state per field)
        cuts: dict = {}  # id of a watch set (the implicit field's and None share one) -> its `_cut_prefixes`
        self.fast = {}
        for state, w in self.watch.items():
            if w.triggers is None:
                self.fast[state] = None
                continue
            cut = cuts.get(id(w))
            if cut is None:
                cut = cuts[id(w)] = _cut_prefixes(w.literal_set, left)
            self.fast[state] = (w.triggers, w.finder, w.at_start, self.dirty.get(state, False), *cut)
        self.no_fast = dict.fromkeys(self.fast)  # with spans, no fast path
        # Regex delimiters may look behind the consumed position (lookbehinds, \b); literals never do.
        # `context`: how much consumed text the scan buffer keeps (None: all of it).
        regexes = {id(d): d for w in self.watch.values() for d in w.delimiters if d.literals is None}.values()
        behind = [d.lookbehind for d in regexes]
        self.keep_context = bool(behind)
        bounded = [d.lookbehind if d.lookbehind is not None else d.split_lookbehind for d in regexes
                   if d.lookbehind is not None or d.split is not None]
        self.context = max(bounded, default=0) + CONTEXT_CHARS
        # Consumed text past which `_trim` may drop some (a cheaper test than the call; `_trim` decides).
        self.trim_gap = TRIM_EVERY + self.context if self.keep_context else 1
        # A lookbehind of unbounded reach may read back to the start of the stream: the text trimmed from the scan
        # buffer is kept aside (`_history`) and put back in front of it for the scans that run such a pattern.
        self.history = None in behind
        # Delimiters searched from the search origin (\G, fuzzy, reverse) need the text from there on.
        self.origin_search = any(d.search_from_origin for d in regexes)
        self.defaults = template.defaults
        # Defaults made of strings and numbers only are copied with `dict`, not `deepcopy` (a per-parse cost).
        self.plain_defaults = all(type(v) in (str, int, float, bool, type(None)) for v in template.defaults.values())
        self.required = tuple(name for name, f in template.fields.items() if not f.optional)
        # A new parser's message: a plain dict of the defaults (`deepcopy` where a value is not a string or number).
        defaults = template.defaults
        self.new_output = (partial(deepcopy, defaults) if not self.plain_defaults
                           else defaults.copy if type(defaults) is dict else partial(dict, defaults))
        # The start anchor's plain literals (`CompiledTemplate.anchor_literals`): a prefix ending with one keeps nothing.
        self.anchor = template.anchor_literals()
        # A new parser's attributes that are the same for every parser of the template, in `ResponseParser.__init__`'s
        # order (which documents them): the options' defaults, the template's tables, the empty stream's state.
        self.start = ({}, False, False, _DEFAULT_LIMITS, _DEFAULT_LIMITS, template.fields, template.implicit,
                      template.implicit, self.watch, self.dirty, self.quick, self.text, self.trim_gap, self.fast,
                      self.fast[template.implicit], None, None, 0, None, None, "", 0, 0, 0, 0, -1, None, False,
                      _NO_CAPTURES, False, 0, (template.implicit, 0))
        # (kept prefix, regex_timeout) -> the parser's state after reading that prefix, when reading it committed
        # no region and left no search state behind (`ResponseParser._read_prefix`): most responses of one
        # template start from one of a few generation prompts ("<think>\n").
        self.prefix_states: dict = {}

    @staticmethod
    def of(template: CompiledTemplate) -> "_Plan":
        plan = template.derived.get("parser")
        if plan is None:
            plan = template.derived["parser"] = _Plan(template)
        return plan


# `_cut_prefixes`: prefixes this long at most, and this many in all per template (past it a state gets none: the
# finder decides every held text there).
CUT_PREFIX_CHARS = 64
MAX_CUT_PREFIXES = 8192


def _cut_prefixes(literals: frozenset, left: list) -> tuple[frozenset, int]:
    """The texts that the finder of these literals (`parsing.prefilter`), searching from a text's start, matches
    there as a literal cut off by the text's end: the proper prefixes of a literal that have no literal as a prefix
    (the finder accepts a whole literal as soon as one ends). Held text found in it needs no search: `feed`.
    Prefixes longer than `CUT_PREFIX_CHARS` are left out, and a state whose prefixes would pass what is ``left`` of
    the template's `MAX_CUT_PREFIXES` gets none (bounded memory; the finder decides those). Returns them and the
    length of the longest (a longer held text is not looked up: no slice to make)."""
    cut: set = set()
    for lit in literals:
        for n in range(1, min(len(lit), CUT_PREFIX_CHARS + 1)):
            prefix = lit[:n]
            if prefix in literals:
                break  # a whole literal: the finder accepts it, here and for every longer prefix
            cut.add(prefix)
        if len(cut) > left[0]:
            return frozenset(), 0
    left[0] -= len(cut)
    return frozenset(cut), max(map(len, cut), default=0)


@lru_cache(maxsize=64)
def _limits_for(regex_timeout: float | None) -> ParseContext:
    """The shared (immutable) limits for a per-search regex budget: made once, not per parser."""
    return ParseContext(regex_timeout=regex_timeout)


_DEFAULT_LIMITS = _limits_for(DEFAULT_REGEX_TIMEOUT)


# Field names longer than this are not kept by `_field_context` (a name can be most of a 1 MB template: 1,024 kept
# would be 1 GB).
_KEPT_FIELD_NAME = 256


# Field name -> ``_DEFAULT_LIMITS.for_field(name)``: most parsers' contexts, found without hashing a context (its
# dataclass hash is a Python call). Kept as `_kept_field_context`'s are (1,024 names, each at most
# `_KEPT_FIELD_NAME` characters).
_DEFAULT_FIELD_CONTEXTS: dict[str, ParseContext] = {}


def _field_context(ctx: ParseContext, field: str) -> ParseContext:
    """``ctx.for_field(field)``, made once per field (without a deadline, contexts repeat across parsers); kept for
    1,024 fields whose names are at most `_KEPT_FIELD_NAME` characters long."""
    if len(field) > _KEPT_FIELD_NAME:
        return ctx.for_field(field)
    if ctx is _DEFAULT_LIMITS:
        made = _DEFAULT_FIELD_CONTEXTS.get(field)
        if made is None:
            made = ctx.for_field(field)
            if len(_DEFAULT_FIELD_CONTEXTS) < 1024:
                _DEFAULT_FIELD_CONTEXTS[field] = made
        return made
    return _kept_field_context(ctx, field)


@lru_cache(maxsize=1024)
def _kept_field_context(ctx: ParseContext, field: str) -> ParseContext:
    return ctx.for_field(field)


class ResponseParser:
    """Streaming parser for one generated assistant message.

    Args:
        template: a template dict, JSON text, a path, or a `CompiledTemplate` (compile once with
            `load_template` and reuse it across parsers).
        prefix: the prompt that preceded generation (text). Required: ``None`` raises ValueError, ``""`` opts
            out. It is cut after the last start-anchor match and run through the parser before any generation;
            the events that produces are `initial_events`.
        tools: tools offered to the model (JSON schemas as for ``apply_chat_template``, or Python functions);
            string tool-call arguments are cast to their schema types when a region closes.
        spans: record offsets (see class attributes below).
        recover: turn a region's parse/transform failure into a ``region_error`` event instead of raising.
        regex_timeout: time budget in seconds for each user-regex call (None: unlimited).
        time_budget: seconds of wall-clock time this parser may spend in all, summed over its construction
            (reading the prefix), every `feed` and `finalize` (time between calls, e.g. waiting for a model,
            does not count). None (the default): no overall limit. Past it the work stops and
            `BudgetExceededError` says where; every later call raises it again.
        max_values: how many values the template's transforms may build in this parse, counted before each build
            (containers and items of every built transform; a public server's memory bound: a transform can make a
            few characters of output into millions of values). None (the default): no limit.
        max_join_chars: how many characters the joined strings of ``join`` fields may total in this parse
            (`DEFAULT_MAX_JOIN_CHARS`, 10,000,000, by default; None: no limit), counted as each match is joined: a
            join repeats its string between every two matches, so a small output can make a huge message.

    Events are dicts: ``{"type": "region_open", "field"}``, ``{"type": "region_chunk", "field", "text",
    "dirty"}``, ``{"type": "region_close", "field", "value"}``, and with ``recover`` ``{"type":
    "region_error", "field", "message", "raw"}``. With ``spans`` each also has ``start`` and ``end``:
    character offsets into `stream_text`.

    Attributes (``spans=True``):
        stream_text: the parsed stream so far: the prefix after its last anchor, then the generation.
        prefix_length: how many leading characters of `stream_text` came from the prefix.
        dropped_prefix: the prefix text up to and including the last anchor match (not parsed).
        delimiters: every committed delimiter match, ``{"field", "kind", "start", "end", "text", "captures"}``.

    Raises:
        TemplateError: (ValueError) the template is invalid.
        ValueError: ``prefix`` is None; a region's body does not parse; a required field is missing at
            `finalize`; ``join`` on a value that is not a string.
        KeyError: a transform names an unknown variable.
        RuntimeError: `feed` or `finalize` after `finalize`.
        PatternTimeoutError: a user regex ran past ``regex_timeout``.
        ValuesBudgetError: (a ValueError) the transforms would pass ``max_values``, or a joined field
            ``max_join_chars`` (with ``recover``, a ``region_error`` on that region and every later transformed,
            or joined, one).
        BudgetExceededError: (a TimeoutError) the parser spent its ``time_budget``; ``.position`` is how far the
            stream was parsed, ``.field``/``.role``/``.pattern`` the regex that was cut, if any. Never turned
            into a ``region_error`` by ``recover``.
    """

    # Slots: past 30 attributes an instance's __dict__ stops sharing its keys with the others' on CPython 3.11,
    # and then every attribute read in the hot paths and every store in __init__ costs more. ``__dict__`` stays
    # for callers that annotate a parser.
    __slots__ = ("template", "_tool_params", "_spans", "_recover", "_limits", "_ctx", "_plan", "_fields", "_implicit", "_watch", "_dirty", "_quick", "_text",
                 "_trim_gap", "_history", "_history_len", "_clock", "_output", "_buf", "_tail", "_base", "_pos",
                 "_origin", "_state_start", "_still_at", "_commits_here", "_current", "_fast_states", "_fast", "_held",
                 "_opened", "_captures", "_body", "_body_blocks", "_finalized", "delimiters", "prefix_length",
                 "initial_events", "_feed_start",
                 "_joins", "_join_budget", "_join_limit", "__dict__", "__weakref__")
    # Only a parser with spans or a time budget changes these (in its ``__dict__``): one store less each per parser.
    _time_budget: float | None = None
    _spent = 0.0  # seconds of ``time_budget`` spent
    _stream_parts: list[str] | tuple = ()
    _stream_cache: str | None = None
    _segments: list[list] | tuple = ()  # [kind, field, start, end]
    dropped_prefix = ""

    def __init__(self, template: Any, prefix: str | None = None, *, tools: list[dict | Callable] | None = None,
                 spans: bool = False, recover: bool = False, regex_timeout: float | None = DEFAULT_REGEX_TIMEOUT,
                 time_budget: float | None = None, max_values: int | None = None,
                 max_join_chars: int | None = DEFAULT_MAX_JOIN_CHARS):
        if type(template) is not CompiledTemplate:
            template = load_template(template)
        self.template: CompiledTemplate = template
        if prefix is None:
            raise ValueError(_PREFIX_REQUIRED)
        try:
            plan = template.derived["parser"]  # (a subscript: cheaper than a call of ``get``)
        except KeyError:
            plan = _Plan.of(template)
        self._plan = plan
        # What every parser of the template starts from, in one unpacking (`_Plan.start`; per-parser containers
        # below). The state:
        # - `_fast`: the current state's fast-path data (`_Plan.fast`) while nothing is held (None while text is
        #   held, with spans, after `finalize`); `_held`: the same while text is held, for `feed`'s quick look at it.
        #   Both None: `feed`'s general path (`_process` sets them again when it is done).
        # - `_limits`: the limits of every user regex (`_ctx`: the same, or with a time budget the copy `_timed`
        #   swaps in, carrying the deadline).
        # - `_history`: with unbounded lookbehinds, the text trimmed from the scan buffer (`_history_len` chars).
        # - `_clock`: the search state (`ScanState`), made on the first full scan.
        # - `_joins`: field -> the pieces of its joined string not yet joined into `_output` (`_join_store`).
        # - Scan window: `_buf` holds the stream from absolute offset `_base`; `_pos` is the first unconsumed
        #   offset; `_origin` is where the reference's next search starts: the end of the last delimiter, or where
        #   it last flushed by its own rule (at the end of the prefix). Flushing by our rule never moves it.
        # - `_state_start`: the stream offset where the current region (or the implicit state) began.
        # - Zero-width delimiters committed at one stream position with no text between them: the position
        #   (`_still_at`), and each (state, delimiter) commit there -> its index (`_commits_here`, made when
        #   `_still_at` first moves: -1 never equals a position). The same commit again there repeats forever.
        # - `_tool_params`: tool name -> its schema's ``properties``, read at construction as the reference does.
        # - `_captures`: the open region's captures (`_NO_CAPTURES` while none is open; only ever replaced).
        # - `_feed_start`: where the reference's one-shot feed of the generation starts: the state and search
        #   position after the prefix (set again below where reading the prefix moves them).
        (self._tool_params, self._spans, self._recover, self._limits, self._ctx, self._fields, self._implicit,
         self._current, self._watch, self._dirty, self._quick, self._text, self._trim_gap, self._fast_states,
         self._fast, self._held, self._history, self._history_len, self._clock, self._joins, self._buf, self._base,
         self._pos, self._origin, self._state_start, self._still_at, self._commits_here, self._opened,
         self._captures, self._finalized, self.prefix_length, self._feed_start) = plan.start
        if tools:
            self._tool_params = tool_parameters(tools)
        if spans:
            self._spans = spans
            self._fast_states, self._fast = plan.no_fast, None  # every chunk is accounted for: no fast path
            self._stream_parts = []  # span bookkeeping
            self._segments = []
        if recover:
            self._recover = recover
        # (with max_values, a context of this parser's own: it carries the parse's count of built values)
        if max_values is not None:
            self._limits = self._ctx = ParseContext(regex_timeout, values=ValuesBudget(max_values))
        elif regex_timeout is not DEFAULT_REGEX_TIMEOUT:  # (not the default argument itself)
            self._limits = self._ctx = _limits_for(regex_timeout)
        if time_budget is not None:  # keeps the unbudgeted `feed` and `finalize` free of any per-call check
            self._time_budget = time_budget
            self.__class__ = _BudgetedParser  # not bound methods on the instance: a cycle kept its message alive
        if plan.history:
            self._history = []
        self._output: dict[str, Any] = plan.new_output()
        # characters the joined strings may still add (None: no limit), out of `_join_limit` (`_close_current`)
        self._join_budget = self._join_limit = max_join_chars
        # Chunks the fast path consumed after `_buf`, not yet joined to it (only while nothing is held).
        self._tail: list[str] = []
        # Body of the open region: recent chunks, plus older chunks joined into blocks of BODY_BLOCK chunks
        # (a list of millions of 4-character strings would cost ten times the text it holds).
        self._body: list[str] = []
        self._body_blocks: list[str] = []
        self.delimiters: list[dict] = []
        self.initial_events: list[dict] = []
        if prefix:
            if time_budget is not None:
                self._timed("prefix", self._read_prefix, prefix)
                self._feed_start = (self._current, self._origin)
            elif isinstance(prefix, str) and prefix.endswith(plan.anchor):
                # Most prompts end with the anchor (`CompiledTemplate.anchor_end`'s first case): nothing is kept.
                if spans:
                    self.dropped_prefix = prefix
            else:
                self._read_prefix(prefix, not spans and not recover and max_values is None)
                self._feed_start = (self._current, self._origin)

    def _read_prefix(self, prefix: str, reusable: bool = False) -> None:
        """Cut the prompt after its last start-anchor match and run the rest through the parser, as the reference
        does before any generation (its events are `initial_events`). ``reusable``: no option keeps the state
        reached from being shared with other parsers of the template (`_Plan.prefix_states`): no spans, recover,
        time budget or values budget."""
        plain = self._plan.anchor
        if plain and isinstance(prefix, str):
            cut = last_literal_end(prefix, plain)  # (`CompiledTemplate.anchor_end`, its test of the end done or moot)
        else:
            cut = self.template.anchor_end(prefix, self._ctx)  # (`truncate_prefix`, without copying `dropped`)
        if not cut:
            logger.info("the start anchor does not occur in the prefix; parsing the whole prefix")
            kept = prefix  # (not empty: only a prefix that is not is read)
        else:
            if self._spans:
                self.dropped_prefix = prefix[:cut]
            if cut == len(prefix):
                return  # nothing kept
            kept = prefix[cut:]
        if reusable:
            if len(kept) <= 4096:
                states = self._plan.prefix_states
                key = (kept, self._limits.regex_timeout)
                state = states.get(key)
                if state is not None:
                    # Take the state another parser reached after reading the same prefix (`_reusable_state`), and
                    # where its `_process` left `feed` (its fast path, or its held path).
                    (self._buf, self._base, self._pos, self._origin, self._state_start, self._current, self._opened,
                     captures, body, blocks, history, self._history_len, self.prefix_length, events, self._fast,
                     self._held) = state
                    if captures:
                        self._captures = dict(captures)
                    if body:
                        self._body = list(body)
                    if blocks:
                        self._body_blocks = list(blocks)
                    if history:  # (else `__init__`'s empty list, or None)
                        self._history = list(history)
                    self.initial_events = list(map(dict, events))  # (copies: a caller may change its events)
                    return
            else:
                reusable = False
        self.prefix_length = len(kept)
        self._append(kept)
        # The reference runs the prefix through its parser on its own, before any generation, so the end
        # of the prefix is a chunk boundary even for a one-shot parse: decided by its rule there.
        self._process(self.initial_events, eos=False, as_reference=True)
        if reusable and self._reusable_state():
            if len(states) >= PREFIX_STATES:
                states.clear()
            states[key] = (self._buf, self._base, self._pos, self._origin, self._state_start, self._current,
                           self._opened, dict(self._captures), tuple(self._body), tuple(self._body_blocks),
                           None if self._history is None else tuple(self._history), self._history_len,
                           self.prefix_length, tuple(dict(e) for e in self.initial_events), self._fast, self._held)

    def _reusable_state(self) -> bool:
        """Whether the state after reading the prefix can be handed to another parser of the same template and
        prefix: no region closed (the message is still the defaults, no value was built, so tools and content
        parsers played no part), nothing left unjoined, and no search state (regex time spent, matches waiting)."""
        clock = self._clock
        return (not self._tail and all(e["type"] in ("region_open", "region_chunk") for e in self.initial_events)
                and self._output == self.template.defaults
                and (clock is None or not (clock.spent or clock.slow or clock.waiting or clock.lookbehinds
                                           or clock.probes or clock.given_up or clock.deferred is not None)))

    # ----------------------------------------------------------------- public API
    def feed(self, text: str) -> list[dict]:
        """Feed the next chunk of generated text; returns the events it produced (possibly none).

        Raises:
            RuntimeError: after `finalize`.
            ValueError, KeyError: a region closed and its value could not be built (see the class doc).
        """
        fast = self._fast  # None while text is held, after `finalize`, with spans, or in a state with no fast path
        if fast is not None and text:
            if self._pos or not fast[2]:
                for char in fast[0]:  # most often one ('<'): cheaper than any set operation
                    if char in text and ((found := fast[1].search(text)) is not None
                                         or fast[2] and self._pos == self._base):
                        break
                else:
                    # Fast path: nothing is held and no watched delimiter can start in this chunk (none of its
                    # literals' first characters is in it, or the finder finds neither a whole literal nor one cut
                    # off by the chunk's end, and no ^ applies at the chunk's start), so all of it goes to the current
                    # region. The chunk waits in `_tail` (joined to the buffer, and to the region's body, now and
                    # then: `_join_tail`).
                    tail = self._tail
                    tail.append(text)
                    self._pos += len(text)
                    if len(tail) >= TAIL_CHUNKS:
                        self._join_tail()
                    current = self._current
                    if current is None:
                        return []
                    chunk = {"type": "region_chunk", "field": current, "text": text, "dirty": fast[3]}
                    if self._opened:
                        return [chunk]
                    self._opened = True
                    return [{"type": "region_open", "field": current}, chunk]
            else:
                found = None
            buf = self._buf
            events: list[dict] = []
            if self._tail:
                self._join_tail()
                buf = self._buf
            buf += text
            self._buf = buf
            if (found is not None and found.group() not in self._watch[self._current].literal_set
                    and (self._pos != self._base or not fast[2]) and self._ctx.deadline is None):
                # The chunk ends with the first characters of a delimiter, cut off (the finder's non-literal
                # matches end at the text's end): hold from there, as `_process` would after the same search.
                start = self._pos + found.start()
                if start > self._pos:
                    self._route(events, self._pos, start)
                    self._pos = start
                    if self._pos - self._base >= self._trim_gap:  # else `_trim` has nothing to drop yet
                        self._trim()
                self._fast, self._held = None, fast  # text is held
                return events
            # A whole literal in the chunk, or index 0 of the buffer while a ^-delimiter may match there: held from
            # here on, the held path's steps below decide (as `_process` would).
            self._fast = None
            held = fast
            pos = self._pos - self._base
        else:
            held = self._held  # the state's fast-path data while text is held (None: not known to be)
            if held is None or not text:
                if self._finalized:
                    raise RuntimeError("ResponseParser already finalized")
                if not text or self._spans:
                    events = []
                    if text:
                        self._append(text)
                    self._process(events, eos=False)
                    return events
            # Something is held (or the state has no fast path: then it has no finder either, and no tail: `_process`
            # joined it before the state changed). Most often it is a delimiter cut off by the buffer edge that this
            # chunk continues without completing (special tokens arrive in pieces): then nothing changes but the
            # buffer.
            buf = self._buf + text
            self._buf = buf
            pos = self._pos - self._base
            if held is not None and len(buf) - pos <= held[5] and buf[pos:] in held[4] and (
                    pos or not held[2] or (clock := self._clock) is not None and clock.dead_at_start
                    and self._watch[self._current].start_ids <= clock.dead_at_start):  # (`_start_settled`, inline)
                # The held text is still a literal cut off by the buffer edge (what the finder's search from `pos`
                # would say, with no search): it stays held.
                return []
            events = []
        watch = self._watch[self._current]
        finder = watch.finder
        clock = self._clock
        if pos and finder is not None and clock is not None and clock.deferred is not None \
                and clock.deferred[2] is not None and clock.still_deferred(buf, pos, self._base, self._ctx):
            # The last scan held here on a shape it could not decide (past index 0: where a literal of it starts,
            # whole or cut off, the first thing the finder would find), and it still cannot: a scan would hold
            # here again, whatever the other delimiters do. No search.
            return events
        if finder is not None:
            if pos or not watch.at_start or clock is not None and clock.dead_at_start \
                    and watch.start_ids <= clock.dead_at_start:  # (`_start_settled`, inline)
                found = finder.search(buf, pos)
                if found is None:
                    # The held text turned out to start no delimiter, nor does the chunk: all of it goes to the
                    # current region (what `_process` would conclude from the same search).
                    end = self._base + len(buf)
                    self._route(events, self._pos, end)
                    self._pos = end
                    if self._pos - self._base >= self._trim_gap:  # else `_trim` has nothing to drop yet
                        self._trim()
                    self._held = None
                    self._fast = self._fast_states[self._current]  # nothing is held
                    return events
                at = found.start()
                literal = found.group()
                if literal not in watch.literal_set:
                    # A delimiter cut off by the buffer edge, still (or anew: the held text started none).
                    if at > pos:
                        end = self._base + at
                        self._route(events, self._pos, end)
                        self._pos = end
                        if self._pos - self._base >= self._trim_gap:  # else `_trim` has nothing to drop yet
                            self._trim()
                    return events
                if at != pos:
                    self._process(events, eos=False)
                    return events
                # A whole literal where the last scan held without running its regex (a suffix the match needs
                # has not arrived, or a complete match waits for its lookahead's text): `_process` would hold
                # there again, whatever the other delimiters do.
                if clock is not None and clock.deferred is not None and (not pos or clock.deferred[2] is None) \
                        and clock.still_deferred(buf, pos, self._base, self._ctx):  # (a shape's: asked above)
                    return events
                if watch.literal_owners is not None or not watch.steps or self._ctx.deadline is not None:
                    self._process(events, False, first=found)  # what `_process` would search and check first
                    return events
            elif watch.start_steps and self._ctx.deadline is None:
                # Index 0 of the buffer while ^-delimiters (all shapes) may still match there: `_process` searches
                # nothing, asks the last scan's deferral there, then runs `shape_step` from index 0.
                if clock is not None and clock.deferred is not None and clock.still_deferred(buf, 0, self._base,
                                                                                           self._ctx):
                    return events  # undecided there still: held
                literal = None
            else:
                self._process(events, eos=False)
                return events
            # `_process`'s first pass without it: `shape_step` from ``pos`` (the literal there, or index 0). Most
            # often a special token just completed and its delimiter waits for the text after it: held again.
            if clock is None:
                clock = self._clock = ScanState()
            base = self._base
            window = self._state_start - base
            self._held = None  # (as `_process` leaves it, should `shape_step` raise)
            hit, hold = shape_step(watch, buf, pos, False, clock, base, self._ctx,
                                   self._history_text() if self._history_len else "",
                                   window if window >= 0 else None, literal)
            if hit is not None:
                self._process(events, False, first=hit)
                return events
            if hold > pos:
                self._route(events, self._pos, base + hold)
                self._pos = base + hold
            if self._pos - base >= self._trim_gap:  # else `_trim` has nothing to drop yet
                self._trim()
            if hold == len(buf):
                self._fast = self._fast_states[self._current]
            else:
                self._held = held
            return events
        self._process(events, eos=False)
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: flush held bytes, close the open region, check required fields, prune empty keys.

        Returns:
            ``(message, final_events)``. Keys whose value is None or an empty string/list/dict are dropped
            unless they are in the template's ``defaults``.

        Raises:
            RuntimeError: called twice.
            ValueError: a field with ``optional: false`` produced nothing; or a region failed as in `feed`.
        """
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        # (a parser with a time budget has `_budgeted_finalize` as its `finalize`, which runs this under `_timed`)
        events: list[dict] = []
        watch = self._watch[self._current]
        if self._tail:
            self._join_tail()
        end = self._base + len(self._buf)  # `_end`
        if not self._spans and watch.finder is not None and self._pos == end and (end or not watch.at_start):
            # Nothing unconsumed, and no delimiter of this state can start in empty text: a state with a finder
            # has a literal to start every match (its finder needs at least one character: `_finder_source`) and
            # no delimiter searched from an earlier origin. Both steps below would only close the region.
            if self._opened:  # (else `_close_current` has nothing to close: no call)
                self._close_current(events, end, end)
        else:
            # The reference's one-shot parse feeds the whole generation once (its streaming rule, which we only
            # follow where no more text can come), then flushes at the end of the stream.
            if not self._reference_feed_stalls():
                self._process(events, eos=False, as_reference=True)
            self._process(events, eos=True)
            if self._spans and self._pos < self._end:
                # Text left unparsed (only after a zero-width implicit close): account for it.
                self._segment("discarded", None, self._pos, self._end)
        if self._joins:
            self._join_output()
        output = self._output
        for name in self._plan.required:
            if name not in output:
                missing = [name for name in self._plan.required if name not in output]
                raise ValueError(f"Required response_template fields missing from parsed output: {missing}")
        if all(output.values()):
            output = self._output = dict(output)  # nothing to drop (a copy all the same, as below)
        else:
            defaults = self.template.defaults
            # Dropped: None and empty strings/lists/dicts (a truthy value is never one of them: tested first).
            output = self._output = {k: v for k, v in output.items()
                                     if v or k in defaults or v is not None and not isinstance(v, (list, dict, str))}
        self._finalized = True
        self._fast = None  # `feed` raises: its fast path checks only this
        return output, events

    def _budgeted_finalize(self) -> tuple[dict, list[dict]]:
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        return self._timed("finalize", ResponseParser.finalize, self)

    @property
    def finalized(self) -> bool:
        """Whether `finalize` has run."""
        return self._finalized

    @property
    def stream_text(self) -> str:
        """The parsed stream so far (``spans=True`` only; else an empty string)."""
        if self._stream_cache is None:
            self._stream_cache = "".join(self._stream_parts)
            self._stream_parts = [self._stream_cache] if self._stream_cache else []
        return self._stream_cache

    def held(self) -> tuple[int, int]:
        """``(start, end)`` offsets of the bytes currently held back as a possible delimiter (start == end: none)."""
        return self._pos, self._end

    def segments(self) -> list[dict]:
        """How every character of `stream_text` was used (``spans=True``), complete after `finalize`.

        Returns a list of ``{"kind": "delimiter"|"body"|"discarded", "field": name or None, "start", "end",
        "origin": "prefix"|"generation"}`` in order, tiling the consumed stream without gap or overlap; a
        segment never straddles the prefix/generation boundary. Before `finalize`, the held bytes
        (`held`) are not yet covered.
        """
        out = []
        boundary = self.prefix_length
        for kind, field, start, end in self._segments:
            pieces = [(start, end)]
            if start < boundary < end:
                pieces = [(start, boundary), (boundary, end)]
            for a, b in pieces:
                out.append({"kind": kind, "field": field, "start": a, "end": b,
                            "origin": "prefix" if b <= boundary else "generation"})
        return out

    @property
    def message(self) -> dict:
        """The message as built so far (closed regions only), without pruning. Do not mutate."""
        if self._joins:
            self._join_output()
        return self._output

    # ----------------------------------------------------------------- internals
    def _history_text(self) -> str:
        """The consumed stream before the buffer (``_history_len`` characters) as one string: its pieces are
        joined once, when a lookbehind first needs them, and kept joined."""
        history = self._history
        if len(history) > 1:
            history[:] = ["".join(history)]
        return history[0]

    def _budgeted_feed(self, text: str) -> list[dict]:
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        return self._timed("feed", ResponseParser.feed, self, text)

    def _timed(self, stage: str, step: Callable, *args: Any) -> Any:
        """Run one public step under what is left of ``time_budget``; add its wall-clock time to the total."""
        started = time.monotonic()
        left = self._time_budget - self._spent
        if left <= 0:
            raise BudgetExceededError(self._time_budget).located(stage, self._pos)
        self._ctx = ParseContext(self._limits.regex_timeout, started + left, self._time_budget,
                                 values=self._limits.values)
        try:
            return step(*args)
        except BudgetExceededError as exc:
            raise exc.located(stage, self._pos) from None
        finally:
            self._ctx = self._limits
            self._spent += time.monotonic() - started

    @property
    def _end(self) -> int:
        if self._tail:
            self._join_tail()
        return self._base + len(self._buf)

    def _join_tail(self) -> None:
        """Join the chunks `feed`'s fast path consumed to the buffer, and to the current region's body."""
        tail = self._tail
        text = "".join(tail)
        tail.clear()
        self._buf += text
        if self._current is not None:
            body = self._body
            body.append(text)
            if len(body) >= BODY_BLOCK:
                self._body_blocks.append("".join(body))
                body.clear()
        if self._pos - self._base >= self._trim_gap:  # else `_trim` has nothing to drop yet
            self._trim()

    def _append(self, text: str) -> None:
        self._buf += text
        if self._spans:
            self._stream_parts.append(text)
            self._stream_cache = None

    def _trim(self) -> None:
        """Drop consumed text from the scan buffer, keeping what the template's lookbehinds can reach (plus a margin)."""
        plan = self._plan
        consumed = (min(self._pos, self._origin) if plan.origin_search else self._pos) - self._base
        if not plan.keep_context:
            cut = consumed
        elif consumed >= TRIM_EVERY + plan.context:
            cut = consumed - plan.context
        else:
            return
        if cut:
            if self._history is not None:
                self._history.append(self._buf[:cut])
                self._history_len += cut
            self._buf = self._buf[cut:]
            self._base += cut

    def _process(self, events: list[dict], eos: bool, as_reference: bool = False, first=None) -> None:
        """Commit delimiters and route text as far as the buffer allows; ``as_reference``: by the reference's
        own rule (`scan_as_reference`), for the end of the prefix and the end of the generation. ``first``: the
        state's finder match at the first unconsumed position, a whole literal that the last scan's deferral
        (`ScanState.still_deferred`) does not hold (`feed`'s held path checked both), or the `Hit` its `shape_step`
        found there."""
        hit = None
        if type(first) is Hit:  # (`feed`'s held path ran `shape_step` and found it: committed at once)
            hit, first = first, None
        elif self._tail:
            self._join_tail()
        self._fast = self._held = None  # until this pass is done (if it raises, the next feed takes the general path)
        base = self._base
        ctx = self._ctx
        watches = self._watch
        timed = ctx.deadline is not None
        while True:
            if hit is None:
                if timed:
                    ctx.check()
                watch = watches[self._current]
                buf = self._buf
                pos = self._pos - base
                if first is not None and watch.literal_owners is None and watch.steps:
                    # A whole literal at ``pos`` that no deferral holds (`feed`'s held path checked), or the next one
                    # after a commit, in a state of literals and shapes: the `shape_step` branch below, without the
                    # tests that lead there.
                    found, first = first, None
                    clock = self._clock
                    if clock is None:
                        clock = self._clock = ScanState()
                    before = self._history_text() if self._history_len else ""  # for split delimiters' lookbehinds
                    window = self._state_start - base
                    hit, hold = shape_step(watch, buf, found.start(), eos, clock, base, ctx, before,
                                           window if window >= 0 else None, found.group())
                else:
                    finder = watch.finder
                    if first is not None:
                        found, first, settled, held = first, None, True, False
                    else:
                        found = None
                        settled = finder is not None and (pos or not watch.at_start or self._start_settled(watch))
                        if settled:
                            # One search of the state's literals first: most of the time it settles the scan alone.
                            found = finder.search(buf, pos)
                        # Only a delimiter cut off by the buffer edge, or one the last scan held without running its
                        # regex and would hold again: hold from there, no regex.
                        held = found is not None and not eos and not as_reference and (
                            found.group() not in watch.literal_set
                            or self._clock is not None and self._clock.deferred is not None
                            and self._clock.still_deferred(buf, found.start(), base, ctx))
                    if settled and found is None:
                        hit, hold = None, len(buf)  # no delimiter can start in the unconsumed text
                    elif held:
                        hit, hold = None, found.start()
                    elif not watch.delimiters:
                        hit, hold = None, len(buf)
                    elif found is not None and watch.literal_owners is not None and not as_reference \
                            and found.group() in watch.literal_set:
                        hit, hold = literal_step(watch, buf, found.start(), eos)  # a whole literal at found.start()
                    elif found is None and not pos and watch.start_steps and not as_reference and not eos \
                            and self._clock is not None and self._clock.deferred is not None \
                            and self._clock.still_deferred(buf, 0, base, ctx):
                        hit, hold = None, 0  # a ^-shape still undecided at index 0, as the last scan found
                    elif (found is not None or not pos and buf and watch.start_steps and not eos) and watch.steps \
                            and not as_reference:
                        # From the finder's match; or, at index 0 while ^-delimiters may still match there (all of
                        # them shapes), from index 0 itself, once there is text there: a zero-width match at the end of
                        # the text never fires (the reference stops there), so an empty buffer goes to scan(), which
                        # holds it.
                        clock = self._clock
                        if clock is None:
                            clock = self._clock = ScanState()
                        before = self._history_text() if self._history_len else ""  # for split delimiters' lookbehinds
                        window = self._state_start - base
                        if found is not None:
                            hit, hold = shape_step(watch, buf, found.start(), eos, clock, base, ctx, before,
                                                   window if window >= 0 else None, found.group())
                        else:
                            hit, hold = shape_step(watch, buf, 0, eos, clock, base, ctx, before,
                                                   window if window >= 0 else None)
                    else:
                        clock = self._clock
                        if clock is None:
                            clock = self._clock = ScanState()
                        scan_base = base
                        before = ""
                        if watch.history and self._history_len:
                            # A lookbehind here may read back to the start of the stream: scan the whole stream.
                            buf = self._history_text() + buf
                            pos += self._history_len
                            scan_base = base - self._history_len
                        if self._history_len and scan_base == base:
                            before = self._history_text()  # for the lookbehinds of split delimiters
                        window = self._state_start - scan_base
                        if as_reference:
                            # (split delimiters run the variant their lookbehind selects: `scan_as_reference`)
                            hit, hold = scan_as_reference(watch, buf, pos, self._origin - scan_base, ctx, clock,
                                                          scan_base, before, window if window >= 0 else None)
                        else:
                            hit, hold = scan(watch, buf, pos, eos, ctx, self._origin - scan_base, clock, scan_base,
                                             before, window if window >= 0 else None)
                        hold += scan_base - base
                        if hit is not None and scan_base != base:
                            # (the hit's offsets are into history + buffer: into the buffer, and its text read now)
                            hit = make_hit((hit.delim, hit.start + scan_base - base, hit.end + scan_base - base,
                                            hit.captures, buf[hit.start:hit.end] if self._spans else None))
            if hit is not None:
                clock = self._clock
                if clock is not None:  # a new search begins for every delimiter (`ScanState`'s fields)
                    if clock.spent:
                        clock.spent.clear()
                    if clock.probes:
                        clock.probes.clear()
                    if clock.given_up:
                        clock.given_up.clear()
                    if clock.waiting:
                        clock.waiting.clear()
                    if clock.lookbehinds:
                        clock.lookbehinds.clear()
                    if clock.dead_at_start:
                        clock.dead_at_start.clear()
                    if clock.quotes:
                        clock.quotes.clear()
                    clock.deferred = clock.decided = None
                delim = hit.delim
                start = hit.start + base
                end = hit.end + base
                done = self._pos  # (a stream offset; ``pos`` is a buffer index)
                if start == end and end == done:
                    if self._still_at != start:
                        self._still_at, self._commits_here = start, {}
                    commit = (self._current, id(delim))
                else:
                    self._still_at = -1
                    commit = None
                    if start > done:
                        self._route(events, done, start)
                self._pos = self._origin = end
                if delim.kind == "open":
                    self._state_start = start
                    if self._opened:
                        self._close_current(events, start, start)
                    if self._spans:
                        self._record_delimiter(hit, start, end)
                    # Open the hit's region (the body is empty: closed just now, or never opened).
                    current = self._current = delim.field
                    self._captures = hit.captures
                    self._opened = True
                    if self._spans:
                        events.append({"type": "region_open", "field": current, "start": start, "end": end})
                    else:
                        events.append({"type": "region_open", "field": current})
                else:
                    self._state_start = end
                    if self._spans:
                        self._record_delimiter(hit, start, end)
                    if self._opened:
                        self._close_current(events, start, end)
                    elif start == end:
                        self._still_at = -1  # this feed ends here: no loop (the reference stops here too)
                        done = end
                        break  # a zero-width close on an empty region would fire forever
                if commit is not None:
                    seen = self._commits_here
                    if commit in seen:
                        first = seen[commit][0]
                        raise _loop_error([d for i, d in seen.values() if i >= first], start)
                    seen[commit] = (len(seen), delim)
                watch = watches[self._current]
                finder = watch.finder
                hit = None
                if eos or as_reference or timed or finder is None or end == base and watch.at_start:
                    continue
                # The next pass, at once: the clock was just reset (nothing is deferred), so the new state's finder
                # alone says whether a delimiter may start in the rest of the buffer (what that pass would search).
                buf = self._buf
                hold = end - base
                if hold < len(buf):  # (else nothing is left to search: a finder match has a character at least)
                    found = finder.search(buf, hold)
                    if found is not None and found.group() in watch.literal_set:
                        first = found  # a whole literal: the next pass scans from it
                        continue
                    hold = len(buf) if found is None else found.start()  # none, or one cut off by the buffer edge
            if eos:
                if self._pos < self._end:
                    self._route(events, self._pos, self._end)
                    self._pos = self._end
                self._close_current(events, self._end, self._end)
                done = self._pos
                break
            hold += base
            if as_reference:  # the reference's search position moves to where it flushes
                self._origin = max(self._origin, hold)
            done = self._pos
            if hold > done:
                self._route(events, done, hold)
                self._pos = done = hold
            break
        if not eos:  # where `feed` starts with the next chunk: its fast path while nothing is held, else its held path
            if done == base + len(self._buf):
                self._fast = self._fast_states[self._current]
            else:
                self._held = self._fast_states[self._current]
        if done - base >= self._trim_gap:  # else `_trim` has nothing to drop yet
            self._trim()

    def _start_settled(self, watch: WatchSet) -> bool:
        """Whether every delimiter of ``watch`` that `^` lets match at index 0 of the buffer whatever the text has
        already failed there for good (`ScanState.dead_at_start`): the literals alone then say where a match can
        start, at index 0 too."""
        clock = self._clock
        return clock is not None and bool(clock.dead_at_start) and watch.start_ids <= clock.dead_at_start

    def _reference_feed_stalls(self) -> bool:
        """Whether the reference's one-shot feed of the generation commits and flushes nothing at all, so that its
        end-of-stream flush alone decides the whole stream (our commits so far agree with that flush).

        That happens at the very start of the stream: a reverse search (``(?r)``) with partial matching from
        position 0 reports a partial match at 0 whenever the text has no complete match, which holds everything.
        (From any later position it reports none.)"""
        state, start = self._feed_start
        if start != 0 or self._base != 0:
            return False
        watch = self._watch[state]
        if not any(d.reverse for d in watch.delimiters):
            return False
        hit, hold = scan_as_reference(watch, self._buf, 0, 0, self._ctx)
        return hit is None and hold == 0

    def _route(self, events: list[dict], start: int, end: int) -> None:
        """Send stream[start:end] to the current region (or discard it when there is none)."""
        current = self._current
        if current is None:
            if self._spans:
                self._segment("discarded", None, start, end)
            return
        base = self._base
        text = self._buf[start - base:end - base]
        if not self._opened:
            if self._spans:
                events.append({"type": "region_open", "field": current, "start": start, "end": start})
            else:
                events.append({"type": "region_open", "field": current})
            self._opened = True
        body = self._body
        body.append(text)
        if len(body) >= BODY_BLOCK:
            self._body_blocks.append("".join(body))
            body.clear()
        if self._spans:
            events.append({"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty[current],
                           "start": start, "end": end})
            self._segment("body", current, start, end)
        else:
            events.append({"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty[current]})

    def _close_current(self, events: list[dict], start: int, end: int) -> None:
        """Close the current region (if it ever opened), store its value, and return to the implicit region."""
        if not self._opened:
            # Only the implicit region (or none) is ever current without having opened: its body and captures
            # are still empty, and there is nothing to close or reset.
            return
        current = self._current
        if current is not None:
            field = self._fields[current]
            raw = "".join(self._body) if not self._body_blocks else "".join(self._body_blocks) + "".join(self._body)
            text = self._text[current]
            if text is not None:
                value = text(raw)  # a text field without a transform (str.strip or str: never raises)
            elif not self._recover:
                value = self._build_value(field, raw)
            else:
                try:
                    value = self._build_value(field, raw)
                except BudgetExceededError:
                    raise  # the whole parse is out of time, not this region
                except Exception as exc:  # noqa: BLE001 - any failure of a region's value is reported on it
                    self._emit(events, {"type": "region_error", "field": current,
                                        "message": f"{type(exc).__name__}: {exc}", "raw": raw}, start, end)
                    value = _UNBUILT
            join = field.join
            if join is not None and self._join_budget is not None and value is not _UNBUILT:
                # Count the characters the join adds against ``max_join_chars`` (an int, not a `ValuesBudget`:
                # most parses join once or twice): the value, and the join before it after the first match.
                added = len(value) if self._output.get(current) is None else len(join) + len(value)
                if added <= self._join_budget:
                    self._join_budget -= added
                elif not self._join_over(events, field, raw, start, end):
                    value = _UNBUILT
            if value is not _UNBUILT:
                # Store the value (a region close runs cold: steps inline, not in calls).
                output = self._output
                if join is None:
                    if field.repeats:
                        output.setdefault(current, []).append(value)
                    else:
                        output[current] = value
                elif output.get(current) is None:
                    output[current] = value  # (`_join_store`'s first match, inline: most fields join once)
                else:
                    self._join_store(current, join, value)
                if self._spans:
                    events.append({"type": "region_close", "field": current, "value": value, "start": start,
                                   "end": end})
                else:
                    events.append({"type": "region_close", "field": current, "value": value})
        # Back to the implicit region.
        self._current = self._implicit  # (`_process` sets the new state's fast path once nothing is held)
        self._captures = _NO_CAPTURES
        self._body = []
        if self._body_blocks:
            self._body_blocks = []
        self._opened = False

    def _join_over(self, events: list[dict], field: FieldSpec, raw: str, start: int, end: int) -> bool:
        """A join past ``max_join_chars`` (counted in `_close_current`): `ValuesBudgetError`, raised, or with
        ``recover`` a ``region_error`` on this region (returns False). Once over, every later join fails too."""
        self._join_budget = -1
        error = ValuesBudgetError(self._join_limit, field.name, "join")
        if not self._recover:
            raise error
        self._emit(events, {"type": "region_error", "field": field.name,
                            "message": f"{type(error).__name__}: {error}", "raw": raw}, start, end)
        return False

    def _join_store(self, name: str, join: str, value: str) -> None:
        """Join ``value`` to field ``name``'s string as the reference does (``previous + join + value``), without
        copying the string so far on every match: the pieces wait in `_joins` until the message is read
        (`_join_output`). A 60 KB join over 400 regions copied about 5 GB before."""
        output = self._output
        previous = output.get(name)
        if previous is None:
            output[name] = value
            return
        joins = self._joins
        if joins is None:
            joins = self._joins = {}
        parts = joins.get(name)
        if parts is not None:
            parts.append(join)
            parts.append(value)
        elif type(previous) is str:
            joins[name] = [previous, join, value]
        else:
            output[name] = previous + join + value  # a default that is not a string: as the reference (or its error)

    def _join_output(self) -> None:
        """Put the joined strings of `_joins` into the message."""
        output = self._output
        for name, parts in self._joins.items():
            output[name] = "".join(parts)
        self._joins = None

    def _build_value(self, field: FieldSpec, raw: str) -> Any:
        quick = self._quick[field.name]
        if quick is None:
            value = self._parse_body(field, raw)
        else:
            try:
                value = quick(raw)
            except ValueError:  # the full parser gives its own fallback (allow_non_json) or error
                value = self._parse_body(field, raw)
        if field.transform is not None:
            make = field.transform_fn
            if make is not None and not field.transform_each and self._ctx.values is None:
                value = make({**self._captures, "content": value})  # `transform_value`'s first case, inlined
            elif make is not None and type(value) is list and self._ctx.values is None and self._ctx.deadline is None:
                # `transform_value`'s ``transform_each`` case, inlined for a list of plain objects (any other item:
                # `transform_value` again from the start, for its value or error; `make` builds anew, changes nothing)
                captures = self._captures
                out = []
                for item in value:
                    if type(item) is not dict:
                        out = transform_value(value, field, captures, self._ctx)
                        break
                    out.append(make({**captures, **item}))
                value = out
            else:
                value = transform_value(value, field, self._captures, self._ctx)
        if self._tool_params and type(value) is not str:  # (text never holds a tool call)
            value = type_tool_calls(value, self._tool_params)
        if field.join is not None and not isinstance(value, str):
            raise ValueError(f"Field '{field.name}': 'join' requires each match to parse to a string, "
                             f"got {type(value).__name__}.")
        return value

    def _parse_body(self, field: FieldSpec, raw: str) -> Any:
        ctx = self._ctx
        name = field.name
        if self._dirty[name]:  # the structured parsers run regexes and name the field in their errors
            if ctx is _DEFAULT_LIMITS:  # (`_field_context`'s first look, inline)
                ctx = _DEFAULT_FIELD_CONTEXTS.get(name) or _field_context(ctx, name)
            else:
                ctx = _field_context(ctx, name) if ctx.deadline is None else ctx.for_field(name)
        reader = self._plan.readers[name]
        if reader is not None:
            return reader(raw, ctx)
        return parse_content(raw, field.content, field.content_args, ctx)

    def _emit(self, events: list[dict], event: dict, start: int, end: int) -> None:
        if self._spans:
            event["start"], event["end"] = start, end
        events.append(event)

    def _record_delimiter(self, hit: Hit, start: int, end: int) -> None:
        self.delimiters.append({"field": hit.delim.field, "kind": hit.kind, "start": start, "end": end,
                                "text": hit.text if hit.text is not None else self._buf[hit.start:hit.end],
                                "captures": dict(hit.captures)})
        if end > start:
            self._segment("delimiter", hit.delim.field, start, end)

    def _segment(self, kind: str, field: str | None, start: int, end: int) -> None:
        if end <= start:
            return
        last = self._segments[-1] if self._segments else None
        if last is not None and last[0] == kind and last[1] == field and last[3] == start and kind != "delimiter":
            last[3] = end
        else:
            self._segments.append([kind, field, start, end])


class _BudgetedParser(ResponseParser):
    """A `ResponseParser` with a ``time_budget``: `feed` and `finalize` run under it (`ResponseParser._timed`).
    The constructor switches an instance to this class, so the unbudgeted methods carry no per-call check and no
    instance refers to itself (bound methods stored on it made a reference cycle that kept the whole message
    alive until a full garbage collection)."""

    __slots__ = ()
    feed = ResponseParser._budgeted_feed
    finalize = ResponseParser._budgeted_finalize


def parse_response(text: str, template: Any, *, prefix: str | None = None,
                   tools: list[dict | Callable] | None = None, **options: Any) -> dict:
    """Parse a complete generation in one shot.

    Args:
        text: the generated text (special tokens kept).
        template: template dict, JSON text, path, or `CompiledTemplate`.
        prefix: the prompt before generation (required; ``""`` opts out).
        tools: tools offered to the model, for typing tool-call arguments.
        options: `ResponseParser` options (``recover``, ``regex_timeout``, ``time_budget``: seconds for the whole
            parse, None by default).

    Returns:
        The message dict.

    Raises:
        The same as `ResponseParser`.
    """
    parser = ResponseParser(template, prefix=prefix, tools=tools, **options)
    parser.feed(text)
    message, _ = parser.finalize()
    return message



def _loop_error(cycle: list, position: int) -> TemplateError:
    """The error for a template whose zero-width delimiters keep firing at one place (``(?=<b)`` as both the open
    and the close of a field): the reference parser loops forever on such input; ours stops and names the
    delimiters of the cycle (sorted, so a one-shot and a streamed parse, which may enter the cycle at different
    delimiters, say the same) and points at the first."""
    named = sorted({(d.field or "", d.kind, d.literals is None, d.source) for d in cycle})
    field, kind, is_regex, _ = named[0]
    key = ("start_anchor" if kind == "start_anchor" else kind) + ("_pattern" if is_regex else "")
    path = key if kind == "start_anchor" else f"fields.{field}.{key}"
    which = ", ".join(f"{f!r} {k} {src!r}" for f, k, _, src in named)
    return TemplateError(
        f"Zero-width delimiters loop at output position {position}: {which} keep firing there without consuming "
        f"text. A delimiter pattern that can match the empty string must not be able to fire again where the "
        f"previous one did (the reference parser never returns on this input).", path)
