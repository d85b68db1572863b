"""Time limits on user regexes: a budget per regex call and an optional overall deadline.

Every user pattern of a template (delimiters, the start anchor, a content parser's ``tag_pattern``, nested
``value_parser`` ones included) runs through `run_regex` with a `ParseContext`. The per-call budget stops a
single catastrophic-backtracking call (`PatternTimeoutError`); the deadline bounds the total work of a parse,
which many cheap-but-slow calls can otherwise stretch without limit (`BudgetExceededError`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from time import perf_counter, thread_time
from typing import Any

from .errors import BudgetExceededError, PatternTimeoutError, ValuesBudgetError
from .regex_cost import unguarded_length


class ValuesBudget:
    """How many values one parse's transforms may still build (`ResponseParser`'s ``max_values``): one per parser,
    shared by every context of that parse (a count, so not part of the frozen `ParseContext`'s value)."""

    __slots__ = ("limit", "left")

    def __init__(self, limit: int):
        self.limit = limit
        self.left = limit

    def spend(self, n: int, field: str | None) -> None:
        """Count ``n`` values about to be built for ``field``.

        Raises:
            ValuesBudgetError: that would pass the limit (nothing is counted then, and nothing should be built).
        """
        if n > self.left:
            self.left = -1  # spent: every later build fails too
            raise ValuesBudgetError(self.limit, field)
        self.left -= n


@dataclass(frozen=True)
class ParseContext:
    """What a content parser and a regex call need to know about their limits and their place.

    Attributes:
        regex_timeout: seconds one regex call may take (None: unlimited).
        deadline: ``time.monotonic()`` value past which no more regex work starts (None: no deadline).
        budget: the overall budget in seconds the deadline came from (for messages; None without a deadline).
        field: the field whose value is being built (None outside a field, e.g. for the start anchor).
        path: where the content parser's ``args`` sit inside the field's ``content_args``, as a dotted prefix
            (``""`` at the top, ``"value_parser.args."`` for a nested value parser); names the pattern in errors.
        values: the parse's count of values its transforms may still build (None: no limit).
    """

    regex_timeout: float | None = None
    deadline: float | None = None
    budget: float | None = None
    field: str | None = None
    path: str = ""
    values: ValuesBudget | None = None  # compared and hashed by identity: contexts of two parsers never mix

    def call_timeout(self, field: str | None, role: str, pattern: str) -> float | None:
        """The ``timeout=`` for the next regex call: the per-call budget, cut to what is left before the deadline.

        Raises:
            BudgetExceededError: the deadline has passed (naming ``field``, ``role`` and ``pattern``).
        """
        if self.deadline is None:
            return self.regex_timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceededError(self.budget, field=field, role=role, pattern=pattern)
        return left if self.regex_timeout is None else min(left, self.regex_timeout)

    def check(self) -> None:
        """Raise `BudgetExceededError` when the deadline has passed (between steps that run no regex)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetExceededError(self.budget)

    def for_field(self, field: str | None) -> "ParseContext":
        """This context for the content parser of ``field`` (at the top of its ``content_args``)."""
        return replace(self, field=field, path="")

    def nested(self, key: str) -> "ParseContext":
        """This context for a nested parser found under ``key`` of the current args (``"value_parser"``)."""
        return replace(self, path=f"{self.path}{key}.args.")


NO_LIMITS = ParseContext()


def as_context(limits: ParseContext | float | None) -> ParseContext:
    """A `ParseContext` from a context, a per-call budget in seconds, or None (unlimited)."""
    if isinstance(limits, ParseContext):
        return limits
    return NO_LIMITS if limits is None else ParseContext(regex_timeout=float(limits))


def run_regex(compiled: Any, method: str, text: str, *args: Any, limits: ParseContext | float | None,
              field: str | None, role: str, source: str, **kwargs: Any) -> Any:
    """Call ``compiled.<method>(text, *args, **kwargs)`` under ``limits``; ``finditer`` results come back as a list.

    Args:
        compiled: a compiled ``regex`` pattern.
        limits: a `ParseContext`, a per-call budget in seconds, or None.
        field, role, source: the field, which pattern (``"open"``, ``"close"``, ``"start_anchor"``,
            ``"tag_pattern"``, ...) and its source text, named in the errors.

    Raises:
        PatternTimeoutError: the call ran past the per-call budget.
        BudgetExceededError: the deadline passed before or during the call.
    """
    ctx = limits if type(limits) is ParseContext else as_context(limits)
    timeout = ctx.regex_timeout if ctx.deadline is None else ctx.call_timeout(field, role, source)
    try:
        if method == "finditer":
            if not args and not kwargs:  # (string, pos, endpos, overlapped, concurrent, partial, timeout): keywords cost more
                return list(compiled.finditer(text, None, None, False, None, False, timeout))
            return list(compiled.finditer(text, *args, timeout=timeout, **kwargs))
        return getattr(compiled, method)(text, *args, timeout=timeout, **kwargs)
    except TimeoutError:
        if ctx.deadline is not None and (ctx.regex_timeout is None or timeout < ctx.regex_timeout):
            raise BudgetExceededError(ctx.budget, field=field, role=role, pattern=source) from None
        raise PatternTimeoutError(field, role, source, timeout) from None


# A regex call costs some microseconds however little text it reads. A stream pays that on every feed where a
# one-shot parse pays it once, so only the CPU time a call spends beyond this counts toward a search's budget.
UNCOUNTED_CALL_S = 5e-5

# While streaming, a scan asks questions that a one-shot parse of the whole text never asks (could a complete match
# still change, could a match start here), and its searches run on text cut short. On such text a pattern with
# nested repeats (``(?:.*?)*\w+a>``) can backtrack for seconds where the search of the whole text takes a
# millisecond. Those streaming calls get a budget of their own per delimiter and search, this share of the
# per-search budget (`SearchClock.probe`, `SearchClock.capped`); past it the scan stops asking and holds the
# delimiter (`ProbeGaveUp`) until a delimiter commits or the stream ends, where the one-shot rule decides.
PROBE_SHARE = 0.25


class ProbeGaveUp(Exception):
    """Internal to the scanner: a streaming-only regex call of a delimiter ran out of the probe budget of its
    search (`SearchClock.probe`, `SearchClock.capped`). Never reaches a caller of the parser."""


class SearchClock:
    """CPU time each delimiter's regex has spent looking for its next match, since the last committed delimiter.

    The per-call budget (`ParseContext.regex_timeout`) is a budget per search. A one-shot parse looks for the next
    delimiter with one call over the rest of the text; a stream looks for it with a call on every feed. Summing
    those calls' CPU time (beyond `UNCOUNTED_CALL_S` each) until a delimiter commits gives the stream the same
    budget over the same text, so a pattern too slow for the text fails the same way both ways. The parser calls
    `reset` whenever a delimiter commits (a new search begins).

    A call is also judged by the time it took: the ``regex`` module does not interrupt every construct (a long
    lookbehind runs to its end), so a call that overran its share raises once it returns.

    Reading the CPU clock costs about as much as a short regex call, so a call is timed by the wall clock first:
    one that took at most `UNCOUNTED_CALL_S` of wall-clock time took no more CPU time, and does not count. The
    first call of a delimiter that takes longer counts its wall-clock time (an upper bound of its CPU time); from
    then on, that delimiter's calls in this parse are timed in CPU time. A call on no more text than its
    pattern's `parsing.regex_cost.unguarded_length` runs without the ``regex`` timeout (which costs more than such
    a call): its work is bounded, and it is timed the same way once it returns.
    """

    __slots__ = ("spent", "slow", "probes")

    def __init__(self) -> None:
        self.spent: dict[int, float] = {}
        self.slow: set[int] = set()  # delimiters with a call that took longer than UNCOUNTED_CALL_S
        self.probes: dict[int, float] = {}  # delimiter id -> probe time spent in this search (`probe`)

    def reset(self) -> None:
        """A delimiter committed: every search starts afresh."""
        if self.spent:
            self.spent.clear()
        if self.probes:
            self.probes.clear()

    def run(self, delim: Any, method: str, text: str, pos: int, ctx: ParseContext, pattern: Any = None,
            partial: bool = False) -> Any:
        """``(pattern or delim.regex).<method>(text, pos, partial=partial)`` (``search``, ``match`` or
        ``fullmatch``) under the search's budget and the deadline.

        Args:
            delim: the `Delimiter` (its ``regex``, ``field``, ``kind`` and ``source``).
            ctx: the limits; ``ctx.regex_timeout`` None means no per-search budget.
            pattern: a variant of the delimiter's regex to run instead (``attempt_regex``, ``forward_regex``).

        Raises:
            PatternTimeoutError: this search has spent its budget (in this call or summed over earlier ones).
            BudgetExceededError: the deadline passed before or during the call.
        """
        compiled = delim.regex if pattern is None else pattern
        call = getattr(compiled, method)
        limit = ctx.regex_timeout
        if ctx.deadline is None:
            if limit is None:
                return call(text, pos, None, None, partial)
            key = id(delim)
            spent = self.spent
            if (not spent or key not in spent) and key not in self.slow and limit > 0:
                # The common case: a per-search budget, no deadline, nothing spent on this search yet, and no
                # call of this delimiter ever slow. Same steps as below, fewer of them.
                bounded = len(text) - pos <= unguarded_length(compiled)
                started = perf_counter()
                try:
                    result = call(text, pos, None, None, partial, None if bounded else limit)
                except TimeoutError:
                    raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit) from None
                took = perf_counter() - started
                if took > UNCOUNTED_CALL_S:
                    self.slow.add(key)
                    left = limit - (took - UNCOUNTED_CALL_S)
                    spent[key] = limit - left
                    if left <= 0:
                        raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit)
                return result
        key = id(delim)
        left = None if limit is None else limit - self.spent.get(key, 0.0)
        if left is not None and left <= 0:
            raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit)
        until_deadline = None
        if ctx.deadline is not None:
            until_deadline = ctx.deadline - time.monotonic()
            if until_deadline <= 0:
                raise BudgetExceededError(ctx.budget, field=delim.field, role=delim.kind, pattern=delim.source)
        by_deadline = until_deadline is not None and (left is None or until_deadline < left)
        timeout = until_deadline if by_deadline else left
        if until_deadline is None and len(text) - pos <= unguarded_length(compiled):
            timeout = None  # the text bounds the call's work (`parsing.regex_cost`); it is still timed below
        started = perf_counter()
        cpu_started = thread_time() if key in self.slow else None
        try:
            # Positional arguments (string, pos, endpos, concurrent, partial, timeout): keywords cost more.
            result = call(text, pos, None, None, partial, timeout)
        except TimeoutError:
            if by_deadline:
                raise BudgetExceededError(ctx.budget, field=delim.field, role=delim.kind,
                                          pattern=delim.source) from None
            raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit) from None
        if left is not None:
            took = perf_counter() - started
            if took > UNCOUNTED_CALL_S and cpu_started is not None:
                took = thread_time() - cpu_started
            elif took > UNCOUNTED_CALL_S:
                self.slow.add(key)
            if took > UNCOUNTED_CALL_S:
                left -= took - UNCOUNTED_CALL_S
                self.spent[key] = limit - left
                if left <= 0:
                    raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit)
        return result

    def probe(self, delim: Any, method: str, text: str, pos: int, ctx: ParseContext, pattern: Any = None,
              partial: bool = True) -> Any:
        """A streaming-only check (`parsing.scanner`: could a complete match still change, could one start here),
        called like `run`, but timed against the delimiter's probe budget (`PROBE_SHARE` of ``ctx.regex_timeout``
        per search), which is not charged to the search budget: a one-shot parse does not make these calls, so
        they must not make a stream fail where the one-shot parse succeeds. Without a per-search budget it is `run`.

        Raises:
            ProbeGaveUp: this search's probe budget is spent (before or during this call).
            BudgetExceededError: the deadline passed before or during the call.
        """
        return self._guarded(delim, method, text, pos, ctx, pattern, partial, False)

    def capped(self, delim: Any, method: str, text: str, pos: int, ctx: ParseContext, pattern: Any = None,
               partial: bool = True) -> Any:
        """A streaming search (the call a one-shot parse makes once, on the whole text), called like `run` and
        charged to the search budget like it, but stopped where it would spend more than the probe budget left:
        on text cut short a search can backtrack far beyond what the whole text costs.

        Raises:
            ProbeGaveUp: the call ran into the probe budget (spent; nothing of the call is charged to the search).
            PatternTimeoutError: this search has spent its budget.
            BudgetExceededError: the deadline passed before or during the call.
        """
        return self._guarded(delim, method, text, pos, ctx, pattern, partial, True)

    def _guarded(self, delim: Any, method: str, text: str, pos: int, ctx: ParseContext, pattern: Any,
                 partial: bool, charged: bool) -> Any:
        limit = ctx.regex_timeout
        if limit is None or limit <= 0:
            return self.run(delim, method, text, pos, ctx, pattern, partial)
        compiled = delim.regex if pattern is None else pattern
        key = id(delim)
        share = limit * PROBE_SHARE
        probes = self.probes
        probe_left = share - probes.get(key, 0.0)
        if probe_left <= 0:
            raise ProbeGaveUp
        left = limit - self.spent.get(key, 0.0) if charged else None
        if left is not None and left <= 0:
            raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit)
        timeout = probe_left if left is None or probe_left < left else left
        by_deadline = False
        if ctx.deadline is not None:
            until_deadline = ctx.deadline - time.monotonic()
            if until_deadline <= 0:
                raise BudgetExceededError(ctx.budget, field=delim.field, role=delim.kind, pattern=delim.source)
            if charged and until_deadline < 2 * probe_left:
                # Stopping this search at the probe budget would leave the search that decides at the end less
                # time than it spent: let the deadline stop it, here, naming the pattern.
                timeout, probe_left = left, float("inf")
            if until_deadline < timeout:
                timeout, by_deadline = until_deadline, True
        elif len(text) - pos <= unguarded_length(compiled):
            timeout = None  # the text bounds the call's work (`parsing.regex_cost`); it is still timed below
        started = perf_counter()
        cpu_started = thread_time() if key in self.slow else None
        try:
            result = getattr(compiled, method)(text, pos, None, None, partial, timeout)
        except TimeoutError:
            if by_deadline:
                raise BudgetExceededError(ctx.budget, field=delim.field, role=delim.kind,
                                          pattern=delim.source) from None
            if left is not None and left <= probe_left:
                raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit) from None
            probes[key] = share
            raise ProbeGaveUp from None
        took = perf_counter() - started
        if took > UNCOUNTED_CALL_S:
            if cpu_started is not None:
                took = thread_time() - cpu_started
            else:
                self.slow.add(key)
            if took > UNCOUNTED_CALL_S:
                took -= UNCOUNTED_CALL_S
                if left is None:
                    probes[key] = share - probe_left + took
                else:
                    self.spent[key] = limit - left + took
                    if took >= left:
                        raise PatternTimeoutError(delim.field, delim.kind, delim.source, limit)
        return result
