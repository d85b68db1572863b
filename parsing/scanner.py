"""Delimiter matching with streaming hold-back.

Given the unconsumed part of the stream and the delimiters being watched, the
scanner finds the delimiter to commit next, if any, and the leftmost position
from which bytes must be held back because more input could still turn them
into (part of) a delimiter, or change which delimiter wins.

What ours must give, for every chunking of the generation, is the reference's
ONE-SHOT result. That result comes from the reference's own streaming rule
(`scan_as_reference`) applied at two places only: the end of the prompt prefix
(run through the parser before any generation) and the end of the generation
(fed once, then flushed). Everywhere else the one-shot parse has seen all the
text, so while streaming we hold whatever more text could change (`scan`):

* A partial match (the text ends inside a possible delimiter) holds from its start.
* A complete match that ends at the buffer edge is held if more input could
  change it: any regex, any zero-width match, or a literal list in which one
  literal is a prefix of another. A complete literal no other literal extends
  commits at once.
* Stricter than the reference's rule: a complete match is also held when a
  longer or earlier match of the same delimiter is still possible
  (``</x>(?:\\s*</y>)?`` seeing ``</x>\\n``; literals ``["<a>", "<a>xyz"]``
  seeing ``<a>xy``; an alternation whose earlier alternative is cut off by the
  buffer edge), and when a lookahead, ``$`` or ``\\b`` in the pattern reads past
  the buffer edge.
* ``\\K``: holds start where the attempt began, before the text ``\\K`` drops
  from the match; a complete match that must wait keeps that text too.
* ``\\G``, fuzzy matching and reverse search (`Delimiter.search_from_origin`):
  what they match depends on where a search starts, so they are searched from
  the reference's search position (the end of the last delimiter), which
  flushing text does not move. A reverse search finds the match that ends
  last, which more text can always move: it commits only at the end of the
  stream, and holds from where the same pattern searching forwards could
  match. Fuzzy matching cannot be bounded at all: it holds from the search
  origin until the end of the stream.
* A complete match cannot commit if it starts at or after a held position.
* At end of stream nothing can grow: all complete matches commit.

Positions are indexes into the buffer string handed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .template import Delimiter

OPEN_FIRST = {"open": 0, "close": 1}


@dataclass
class Hit:
    """A committable delimiter match: ``start``/``end`` in the buffer, and its named captures."""

    delim: Delimiter
    start: int
    end: int
    captures: dict

    @property
    def kind(self) -> str:
        return self.delim.kind


def _literal_pending(delim: Delimiter, buf: str, lo: int, hi: int) -> int | None:
    """Leftmost p in [lo, hi] where ``buf[p:]`` is a proper prefix of one of the literals."""
    end = len(buf)
    lo = max(lo, end - delim.max_width + 1)
    hi = min(hi, end - 1)
    if lo > hi:
        return None
    found = None
    for char in delim.first_chars:
        p = buf.find(char, lo, hi + 1)
        while p != -1 and (found is None or p < found):
            rest = buf[p:]
            if any(len(lit) > len(rest) and lit.startswith(rest) for lit in delim.literals):
                found = p
                break
            p = buf.find(char, p + 1, hi + 1)
    return found


def _literal_search(delim: Delimiter, buf: str, pos: int) -> tuple[int, int]:
    """Leftmost complete match of any literal at or after ``pos`` (the longest one at that start), like a
    search for the longest-first alternation; ``(-1, -1)`` when none."""
    start = stop = -1
    for lit in delim.ordered:  # longest first, so on equal start the longer literal is kept
        i = buf.find(lit, pos)
        if i != -1 and (start == -1 or i < start):
            start, stop = i, i + len(lit)
    return start, stop


def _regex_pending(delim: Delimiter, buf: str, lo: int, hi: int, timeout: float | None,
                   pattern=None) -> int | None:
    """Leftmost p in [lo, hi] from which a match of the regex (or ``pattern``; default: the pattern without
    ``\\K``) could still reach past the buffer edge."""
    end = len(buf)
    if delim.max_width is not None:
        reach = delim.max_width + (delim.lookahead or 0)
        lo = max(lo, end - reach)
    for p in range(lo, hi + 1):
        m = delim.run("fullmatch", buf, p, partial=True, timeout=timeout,
                      pattern=pattern if pattern is not None else delim.attempt_regex)
        if m is not None:
            return p
    return None


def scan(watch: Iterable[Delimiter], buf: str, pos: int, eos: bool,
         timeout: float | None = None, origin: int | None = None) -> tuple[Hit | None, int]:
    """Find the next delimiter to commit in ``buf[pos:]``, holding back whatever more input could change.

    Args:
        watch: the delimiters that can fire in the current state.
        buf: the buffer (it may start before ``pos``: earlier text is context for lookbehinds).
        pos: where unconsumed text starts.
        eos: end of stream; nothing is held and every complete match can commit.
        timeout: the regex time limits (a `ParseContext`, seconds per call, or None), passed to `Delimiter.run`.
        origin: where the reference would search from (the end of the last delimiter, ``<= pos``; default
            ``pos``). Delimiters whose matches depend on where a search starts (`Delimiter.search_from_origin`:
            ``\\G``, fuzzy, reverse) are searched from there; flushing text never moves it.

    Returns:
        ``(hit, hold_start)``: the winning committable match (earliest start, then longest, then opens before
        closes, then field name) or None; and the leftmost position that must be held back
        (``len(buf)`` when nothing is pending).

    Raises:
        PatternTimeoutError, BudgetExceededError: a pattern exceeded the per-call budget or the deadline.
    """
    end = len(buf)
    if origin is None:
        origin = pos
    hold = end
    best = None  # (key, delim, start, stop, match or None)
    kept_text = []  # where the attempts of complete \K matches began (the text before \K is part of the match)
    for delim in watch:
        match = None
        start_at = origin if delim.search_from_origin else pos
        if delim.literals is not None:
            start, stop = _literal_search(delim, buf, pos)
            if not eos:
                pending = _literal_pending(delim, buf, pos, end if start == -1 else start)
                if start != -1 and stop == end and delim.can_extend and (pending is None or start < pending):
                    pending = start
                if pending is not None:
                    hold = min(hold, pending)
                    if start == -1 or pending <= start:
                        continue
            if start == -1:
                continue
        elif eos:
            match = delim.run("search", buf, start_at, timeout=timeout)
            if match is None:
                continue
            start, stop = match.span()
        elif delim.unbounded:
            # Fuzzy matching: which match a search finds can change with any later text, so nothing from the
            # search origin on is decided before the end of the stream.
            hold = min(hold, start_at)
            continue
        elif delim.reverse:
            # A reverse search finds the match that ends last, and more text can always bring a later one: it
            # commits only at the end of the stream. Its match cannot start before the leftmost position where
            # the same pattern, searching forwards, matches or partially matches.
            ahead = delim.run("search", buf, start_at, partial=True, timeout=timeout, pattern=delim.forward_regex)
            if ahead is not None:
                first = ahead.start()
                if not ahead.partial:  # a complete match is preferred to an earlier partial one: look before it
                    earlier = _regex_pending(delim, buf, start_at, first - 1, timeout, pattern=delim.forward_regex)
                    first = first if earlier is None else earlier
                hold = min(hold, first)
            continue
        else:
            match = delim.run("search", buf, start_at, partial=True, timeout=timeout)
            # With \K the reported match starts after text the attempt already consumed; hold from where
            # the attempt began (the same pattern without \K), or that text could be flushed away.
            attempt = match if delim.attempt_regex is None else delim.run(
                "search", buf, start_at, partial=True, timeout=timeout, pattern=delim.attempt_regex)
            if attempt is None:
                continue
            if attempt.partial or match is None or match.partial:
                hold = min(hold, attempt.start())
                continue
            start, stop = match.span()
            pending = _pending_start(delim, buf, start_at, attempt.start(), stop, timeout)
            if pending is not None:
                hold = min(hold, pending)
                if pending <= start:
                    continue
            if attempt.start() < start:
                kept_text.append(attempt.start())
        key = (start, start - stop, OPEN_FIRST[delim.kind], delim.field)
        if best is None or key < best[0]:
            best = (key, delim, start, stop, match)
    if best is None or best[2] >= hold:
        # Nothing commits yet. A complete \K match that waits must keep the text its attempt consumed before
        # \K: flushed, that text would be gone from the next search, and the match with it.
        if kept_text:
            hold = min(hold, *kept_text)
        return None, hold
    _, delim, start, stop, match = best
    captures = {k: v for k, v in match.groupdict().items() if v is not None} if match is not None else {}
    return Hit(delim, start, stop, captures), hold


def scan_as_reference(watch: Iterable[Delimiter], buf: str, pos: int, origin: int,
                      timeout: float | None = None) -> tuple[Hit | None, int]:
    """One step of the reference's own (not stream-safe) rule, for the two places where its one-shot result
    depends on it: the end of the prompt prefix, and the end of the generation before the final flush.

    transformers 5.23 searches each delimiter once with partial matching. A partial match, or a complete one
    ending exactly at the buffer edge that could grow there (a regex, a zero-width match, or a literal another
    literal of its list extends), holds from its reported start (after ``\\K``, if any); any other complete
    match is final, even when more text could still lengthen it. Same arguments, result and errors as `scan`
    (with ``eos`` false); ``origin`` is where the reference searches from.
    """
    end = len(buf)
    hold = end
    best = None
    for delim in watch:
        match = delim.run("search", buf, origin if delim.search_from_origin else pos, partial=True, timeout=timeout)
        if match is None:
            continue
        start, stop = match.span()
        if match.partial or (stop == end and (start == stop or delim.literals is None or delim.can_extend)):
            hold = min(hold, start)
            continue
        key = (start, start - stop, OPEN_FIRST[delim.kind], delim.field)
        if best is None or key < best[0]:
            best = (key, delim, start, stop, match)
    if best is None or best[2] >= hold:
        return None, hold
    _, delim, start, stop, match = best
    return Hit(delim, start, stop, {k: v for k, v in match.groupdict().items() if v is not None}), hold


def _pending_start(delim: Delimiter, buf: str, pos: int, start: int, stop: int,
                   timeout: float | None) -> int | None:
    """For a complete regex match at [start, stop) while streaming: the leftmost position from which the same
    delimiter might still match differently once more text arrives, or None if the match is final."""
    end = len(buf)
    if stop == end or delim.lookahead is None or stop + delim.lookahead > end:
        # The match itself may still change (it ends at the edge, or its lookahead may read past it). And a
        # partial search reports a complete match in preference to an earlier partial one (`a.*z|b` seeing
        # `a b` reports `b`), so an earlier attempt may be pending too.
        earlier = _regex_pending(delim, buf, pos, start - 1, timeout)
        return start if earlier is None else earlier
    return _regex_pending(delim, buf, pos, start, timeout)
