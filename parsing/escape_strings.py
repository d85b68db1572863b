"""Escape-delimited-string lookbehinds read forwards, without ``regex``.

Gemma-style tool calls write string arguments between two copies of one marker (Gemma 4 ``<|"|>``, FunctionGemma
``<escape>``; see `examples/families/gemma4/NOTES.md` and `examples/families/functiongemma/NOTES.md`), and the
library templates close such a call with a lookbehind that re-reads the call back to its open and checks that every
string in it is closed (the close marker inside a string argument is not the end of the call)::

    (?<=<start_function_call>call:[\\w.-]+(?:[^<]|<(?!escape>)|<escape>(?:(?!<escape>).)*<escape>)*)

``regex`` evaluates such a lookbehind backwards over the whole call at every candidate (20-35 µs each, and quadratic
over a long argument that mentions the close). `escape_strings` recognises exactly this form from the pattern text
(anything else keeps the ``regex`` path) and `EscapeStrings.holds` answers it by reading forwards, going on from
where the last candidate of the same region stopped.

Why a forward reading gives ``regex``'s answer. Write the body ``L N+ T*`` with ``L`` a literal, ``N`` a class
without the marker's first character ``C``, ``E`` the marker (``C`` then ``R``) and ``T`` one of ``[^C]``,
``C(?!R)``, ``E(?:(?!E).)*E``. At a position where ``E`` starts only the string alternative can go on (the other two
cannot take ``C`` there); anywhere else only a one-character one can. Inside a string the same holds: it ends at
the first ``E``. So from a given start, ``T*`` reads the text one way only: outside strings, inside one, or in the
middle of a marker. After ``L`` and one character of ``N``, every way to split ``N+ T*`` reads on as that one way
(the rest of ``N+`` are characters ``T`` takes one by one, none of them ``C``, so no marker starts there). The
lookbehind holds at ``p`` exactly when a reading started right after ``L`` and one ``N`` character stands outside
strings, between tokens, at ``p``. Like ``regex``, whether ``E`` starts at a position is read on the whole text,
also past ``p`` (the lookaheads read forwards).
"""

from __future__ import annotations

import re

import regex

from .regex_cost import compile_pattern
from .shapes import _literal


# Characters a pattern literal is written with (escaped, or not special); the body's parts, in order.
_LIT = r"(?:\\.|[^\\()\[\]|*+?{}.^$])"
_FORM = re.compile(
    rf"(?P<literal>{_LIT}+)\[(?P<name>(?:\\.|[^\]\\\[])+)\]\+"
    rf"\(\?:\[\^(?P<set>\\[^\w\s]|[^\\\]\[^-])\]"
    rf"\|(?P<first>{_LIT})\(\?!(?P<rest>{_LIT}+)\)"
    rf"\|(?P<open>{_LIT}+)\(\?:\(\?!(?P<inner>{_LIT}+)\)\.\)\*(?P<close>{_LIT}+)\)\*")


class EscapeStrings:
    """The forward reading of one escape-delimited-string lookbehind (see the module docstring).

    Attributes:
        literal: the text ``L`` the body starts with (``<start_function_call>call:``).
        marker: the string marker ``E`` (``<escape>``, ``<|"|>``).
        name: the compiled ``regex`` class ``N`` of the character after the literal (``[\\w.-]``), compiled by the
            module the lookbehind runs with, so that ``\\w`` and the like mean what they mean there.
    """

    __slots__ = ("literal", "marker", "name", "ascii_names", "overlaps")

    def __init__(self, literal: str, marker: str, name) -> None:
        self.literal = literal
        self.marker = marker
        self.name = name
        # The ASCII characters of the name class (a set look-up instead of a ``regex`` call for most names).
        self.ascii_names = frozenset(chr(c) for c in range(128) if name.match(chr(c)) is not None)
        # Whether two markers can overlap (a proper prefix of the marker is also a suffix of it): then the markers a
        # reading meets are not simply all those in the text, and they are found one after the other.
        self.overlaps = any(marker.endswith(marker[:k]) for k in range(1, len(marker)))

    def holds(self, buf: str, lo: int, at: int, base: int, memo: dict, key: object) -> bool:
        """Whether the lookbehind holds at ``at`` when ``regex`` runs it on ``buf[lo:]`` (the region since its
        open; ``lo <= at <= len(buf)``).

        The readings of ``buf[lo:]`` go on from the last call with the same ``key`` and window (``memo[key]``: a
        `parsing.scanner.ScanState`'s ``quotes``; stream offsets, ``base`` that of ``buf[0]``). What is kept is
        where the readings stand at the last position whose markers the text so far settles (text arriving later
        can complete a marker that starts up to ``len(marker) - 1`` characters before the buffer edge), so every
        character of a region is read a bounded number of times over all its candidates.
        """
        entry = memo.get(key)
        if entry is not None and entry[0] == lo + base and entry[1] <= at + base:
            start, readings = entry[1] - base, entry[2]
        else:
            start, readings = lo, 0
        settled = len(buf) - len(self.marker) + 1
        if settled >= at:  # (the usual case: the text settles every marker that starts before `at`)
            readings = self._read(buf, lo, start, at, readings)
            memo[key] = (lo + base, at + base, readings)
        else:
            if settled > start:
                readings = self._read(buf, lo, start, settled, readings)
                memo[key] = (lo + base, settled + base, readings)
                start = settled
            readings = self._read(buf, lo, start, at, readings)
        return bool(readings & 1)

    def _read(self, buf: str, lo: int, start: int, stop: int, readings: int) -> int:
        """The readings at ``stop`` from ``readings`` at ``start`` and new ones from each literal (and name
        character) ending in ``[start, stop)``. Readings at a position ``p``, as bits: bit ``2 * (q - p) + i`` is
        set when a reading's next token starts at ``q`` (``p``, or past it when a marker spans ``p``) and it is
        inside a string (``i`` 1) or not (0); readings that meet are one bit."""
        if start >= stop:
            return readings
        literal = self.literal
        width = len(literal)
        found = buf.find(literal, max(lo, start - width), stop - 1)  # (stop >= 1: not an index from the end)
        while found != -1:
            after = found + width  # a name character there, then a reading outside strings
            char = buf[after]
            if char in self.ascii_names or (char > "\x7f" and self.name.match(char) is not None):
                readings = self._advance(buf, start, after + 1, readings) | 1
                start = after + 1
            found = buf.find(literal, found + 1, stop - 1)
        return self._advance(buf, start, stop, readings)

    def _advance(self, buf: str, start: int, stop: int, readings: int) -> int:
        """``readings`` at ``start`` moved on to ``stop`` (bits as in `_read`)."""
        if start == stop or not readings:
            return readings
        marker, size = self.marker, len(self.marker)
        end = stop + size - 1  # the markers that start before stop, read whole
        if readings <= 2 and not self.overlaps:  # one reading, at start (the usual case): as below, fewer steps
            last = buf.rfind(marker, start, end)
            if last == -1:
                return readings
            inside = (readings >> 1) ^ ((buf.count(marker, start, last) + 1) & 1)
            return 1 << (((last + size - stop) << 1 if last + size > stop else 0) | inside)
        moved = 0
        while readings:
            low = readings & -readings
            readings ^= low
            bit = low.bit_length() - 1
            pos, inside = start + (bit >> 1), bit & 1
            if pos < stop:
                if self.overlaps:
                    while pos < stop:
                        found = buf.find(marker, pos, end)
                        if found == -1:
                            pos = stop
                            break
                        pos, inside = found + size, inside ^ 1
                else:  # every marker from pos on is one the reading meets: count them, and find the last
                    last = buf.rfind(marker, pos, end)
                    if last == -1:
                        pos = stop
                    else:
                        inside ^= (buf.count(marker, pos, last) + 1) & 1
                        pos = max(stop, last + size)
            moved |= 1 << (((pos - stop) << 1) | inside)
        return moved


def escape_strings(behind: str) -> EscapeStrings | None:
    """The forward reading of a lookbehind body of the form ``L[N]+(?:[^C]|C(?!R)|E(?:(?!E).)*E)*`` (``E`` the
    marker, ``C`` followed by ``R``; ``L``, ``C``, ``R`` and ``E`` written as literals, ``N`` a character class
    without ``C`` and without nested sets), as compiled by `parsing.template` (``regex``, DOTALL, no other flags).
    None for any other body: the scanner then runs the lookbehind with ``regex``."""
    found = _FORM.fullmatch(behind)
    if found is None:
        return None
    try:
        literal = _literal(found.group("literal"))
        first = _literal(found.group("first"))
        rest = _literal(found.group("rest"))
        markers = {_literal(found.group(part)) for part in ("open", "inner", "close")}
        name = compile_pattern(f"[{found.group('name')}]", regex.DOTALL)
    except Exception:
        return None
    excluded = found.group("set")
    excluded = excluded[1] if excluded.startswith("\\") else excluded
    if len(markers) != 1 or len(first) != 1 or first != excluded or not literal or not rest:
        return None
    marker = markers.pop()
    if marker != first + rest or name.match(first) is not None:
        return None
    return EscapeStrings(literal, marker, name)
