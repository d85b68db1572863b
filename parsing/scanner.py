"""Delimiter matching with streaming hold-back.

Given the unconsumed part of the stream and the delimiters being watched, the
scanner finds the delimiter to commit next, if any, and the leftmost position
from which bytes must be held back because more input could still turn them
into (part of) a delimiter, or change which delimiter wins.

Rules (spec section 4), plus the one place where we are stricter than the
transformers reference so that every chunking gives the one-shot result:

* A partial match (the text ends inside a possible delimiter) holds from its start.
* A complete match that ends at the buffer edge is held if more input could
  change it: any regex, any zero-width match, or a literal list in which one
  literal is a prefix of another. A complete literal no other literal extends
  commits at once.
* Stricter than the reference: a complete match is also held when a longer or
  earlier match of the same delimiter is still possible (``</x>(?:\\s*</y>)?``
  seeing ``</x>\\n``; literals ``["<a>", "<a>xyz"]`` seeing ``<a>xy``; an
  alternation whose earlier alternative is cut off by the buffer edge), and
  when a lookahead, ``$`` or ``\\b`` in the pattern reads past the buffer edge.
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


def _regex_pending(delim: Delimiter, buf: str, lo: int, hi: int, timeout: float | None) -> int | None:
    """Leftmost p in [lo, hi] from which a match of the regex could still reach past the buffer edge."""
    end = len(buf)
    if delim.max_width is not None:
        reach = delim.max_width + (delim.lookahead or 0)
        lo = max(lo, end - reach)
    for p in range(lo, hi + 1):
        m = delim.run("fullmatch", buf, p, partial=True, timeout=timeout, pattern=delim.attempt_regex)
        if m is not None:
            return p
    return None


def scan(watch: Iterable[Delimiter], buf: str, pos: int, eos: bool,
         timeout: float | None = None) -> tuple[Hit | None, int]:
    """Find the next delimiter to commit in ``buf[pos:]``.

    Args:
        watch: the delimiters that can fire in the current state.
        buf: the buffer (it may start before ``pos``: earlier text is context for lookbehinds).
        pos: where unconsumed text starts.
        eos: end of stream; nothing is held and every complete match can commit.
        timeout: the regex time limits (a `ParseContext`, seconds per call, or None), passed to `Delimiter.run`.

    Returns:
        ``(hit, hold_start)``: the winning committable match (earliest start, then longest, then opens before
        closes, then field name) or None; and the leftmost position that must be held back
        (``len(buf)`` when nothing is pending).

    Raises:
        PatternTimeoutError, BudgetExceededError: a pattern exceeded the per-call budget or the deadline.
    """
    end = len(buf)
    hold = end
    best = None  # (key, delim, start, stop, match or None)
    for delim in watch:
        match = None
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
        else:
            if eos:
                match = delim.run("search", buf, pos, timeout=timeout)
                if match is None:
                    continue
                start, stop = match.span()
            else:
                match = delim.run("search", buf, pos, partial=True, timeout=timeout)
                # With \K the reported match starts after text the attempt already consumed; hold from where
                # the attempt began (the same pattern without \K), or that text could be flushed away.
                attempt = match if delim.attempt_regex is None else delim.run(
                    "search", buf, pos, partial=True, timeout=timeout, pattern=delim.attempt_regex)
                if delim.anchored_at_search_start and (attempt is None or attempt.partial or attempt.start() != pos):
                    # \G matches where a search starts; flushing text would move that start to places an uncut
                    # stream never searches from. So hold at `pos` until a delimiter commits or the stream ends.
                    hold = min(hold, pos)
                    continue
                if attempt is None:
                    continue
                if attempt.partial or match is None or match.partial:
                    hold = min(hold, attempt.start())
                    continue
                start, stop = match.span()
                pending = _pending_start(delim, buf, pos, attempt.start(), stop, timeout)
                if pending is not None:
                    hold = min(hold, pending)
                    if pending <= start:
                        continue
        key = (start, start - stop, OPEN_FIRST[delim.kind], delim.field)
        if best is None or key < best[0]:
            best = (key, delim, start, stop, match)
    if best is None or best[2] >= hold:
        return None, hold
    _, delim, start, stop, match = best
    captures = {k: v for k, v in match.groupdict().items() if v is not None} if match is not None else {}
    return Hit(delim, start, stop, captures), hold


def _pending_start(delim: Delimiter, buf: str, pos: int, start: int, stop: int,
                   timeout: float | None) -> int | None:
    """For a complete regex match at [start, stop) while streaming: the leftmost position from which the same
    delimiter might still match differently once more text arrives, or None if the match is final."""
    end = len(buf)
    if stop == end:  # a regex or zero-width match at the edge may still grow
        return start
    if delim.lookahead is None or stop + delim.lookahead > end:
        return start
    return _regex_pending(delim, buf, pos, start, timeout)
