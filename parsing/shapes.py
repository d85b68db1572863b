"""Delimiter patterns simple enough to be matched with string operations instead of the regex engine.

Most library delimiters are alternations of a few plain forms: ``</think>\\s*|(?=<|im_end|>)``,
``<response>\\s*|</response>\\s*|<|im_end|>``, ``(?=>>>[\\w.-]+\\n)|<|eot_id|>``. While a delimiter arrives in
pieces, the scanner would run its regex on every feed (and again per alternative to see whether the match is
final). For a pattern of this module's forms, `Shape.decide` gives the same answer from ``str.startswith`` and
one bounded character-run match per repeat: where, from a candidate position on, the delimiter's one-shot match
starts and ends, or from where the text must be held because more text could still change it.

Forms (a pattern is a `Shape` only if every top-level alternative is one of them):

* a sequence of items: literal characters (plain, or escaped punctuation, ``\\n``, ``\\t``, ``\\r``) and greedy
  runs ``C*`` / ``C+`` of one character class ``C`` (``\\s``, ``\\w``, ``\\d``, or a bracket set of plain
  characters, ranges and those escapes), where no run is followed by another run or by a literal whose first
  character ``C`` accepts: a greedy run can then never give a character back, so the engine's first path is the
  only one that can match;
* a positive lookahead ``(?=S1|S2|...)`` of such sequences, alone as the alternative (a zero-width match).

No groups, captures, anchors, other assertions, lazy/possessive quantifiers or inline flags. Runs are matched by
the ``regex`` module with the delimiter's own flags (its ``\\s`` is not `str.isspace`).
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

# Flags a shape may be compiled under: what every template pattern gets (DOTALL), and the defaults.
_PLAIN_FLAGS = regex.DOTALL | regex.UNICODE | regex.VERSION0
_SPECIAL = set(".^$*+?{}[]|()\\")
_LITERAL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_CLASS_ESCAPES = set("swd")

MATCH, FAIL, UNDECIDED = 0, 1, 2
# The pattern that never matches (`parsing.prefilter.split_leading_lookbehind`'s variant with no alternative left).
NEVER = "(?!)"


class _NotAShape(Exception):
    """The pattern uses something outside the forms this module handles."""


@dataclass(frozen=True)
class _Run:
    """A greedy run of one character class: ``regex`` matching the longest run at a position, and its minimum."""

    rx: object
    least: int


@dataclass(frozen=True)
class Shape:
    """A delimiter pattern of this module's forms.

    Attributes:
        branches: the top-level alternatives in order, each ``(zero_width, sequences)``: a consuming alternative
            is ``(False, (items,))``, a lookahead ``(True, (items, items, ...))``; items are strings (literal
            text) and `_Run` objects.
    """

    branches: tuple

    def decide(self, buf: str, at: int, eos: bool) -> tuple[int, int]:
        """The pattern's outcome at ``at`` in ``buf``: ``(MATCH, end)`` when a match starting there is final
        whatever text follows (the first alternative that matches, every earlier one failing for good);
        ``(UNDECIDED, -1)`` when more text could still make or change a match there (a literal cut off by the
        buffer edge, a run reaching it); ``(FAIL, -1)`` when no match can start there. ``eos``: the buffer is the
        whole rest of the stream (nothing is undecided)."""
        for zero_width, sequences in self.branches:
            if zero_width:
                pending = False
                for items in sequences:
                    status, _ = _walk(items, buf, at, eos, False)
                    if status == MATCH:
                        return MATCH, at
                    if status == UNDECIDED:
                        pending = True
                if pending:
                    return UNDECIDED, -1
                continue
            status, end = _walk(sequences[0], buf, at, eos, True)
            if status != FAIL:
                return status, end
        return FAIL, -1


def _walk(items: tuple, buf: str, at: int, eos: bool, consuming: bool) -> tuple[int, int]:
    """One sequence at ``at``: MATCH with its end, FAIL, or UNDECIDED (the buffer edge cut it, or, in a
    ``consuming`` alternative, a run that ends the sequence reaches the edge and could take more)."""
    end = len(buf)
    i = at
    for item in items:
        if type(item) is str:
            if buf.startswith(item, i):
                i += len(item)
            elif not eos and end - i < len(item) and item.startswith(buf[i:]):
                return UNDECIDED, -1
            else:
                return FAIL, -1
        else:
            j = item.rx.match(buf, i).end()
            if j - i < item.least:
                return (UNDECIDED, -1) if j == end and not eos else (FAIL, -1)
            i = j
    if consuming and i == end and not eos and type(items[-1]) is not str:
        return UNDECIDED, -1  # the closing run may take more characters
    return MATCH, i


def shape_of(source: str, flags: int) -> Shape | None:
    """The `Shape` of a delimiter pattern compiled with ``flags``, or None when it is not of this module's forms."""
    if flags & ~_PLAIN_FLAGS:
        return None
    if source == NEVER:
        return Shape(())
    try:
        branches = []
        for alternative in _split(source, 0, len(source)):
            if alternative.startswith("(?=") and _closing(alternative):
                inner = alternative[3:-1]
                branches.append((True, tuple(_sequence(s, flags) for s in _split(inner, 0, len(inner)))))
            else:
                branches.append((False, (_sequence(alternative, flags),)))
        return Shape(tuple(branches))
    except (_NotAShape, regex.error, IndexError):
        return None


def _closing(alternative: str) -> bool:
    """Whether the ``(?=`` that starts ``alternative`` closes at its last character (a whole-branch lookahead)."""
    depth = 0
    i = 0
    while i < len(alternative):
        char = alternative[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(alternative, i)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i == len(alternative) - 1
        i += 1
    raise _NotAShape("unbalanced")


def _split(source: str, start: int, stop: int) -> list[str]:
    """``source[start:stop]`` cut at its top-level ``|`` (inside no group or set)."""
    parts, depth, i, begin = [], 0, start, start
    while i < stop:
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(source, i)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[begin:i])
            begin = i + 1
        i += 1
    parts.append(source[begin:stop])
    return parts


def _class_end(source: str, i: int) -> int:
    """Index after the bracket set that starts at ``source[i] == "["``; only plain sets are accepted."""
    j = i + 1
    if j < len(source) and source[j] == "^":
        j += 1
    if j < len(source) and source[j] == "]":
        raise _NotAShape("']' first in a set")
    while source[j] != "]":
        if source[j] == "\\":
            escaped = source[j + 1]
            if escaped.isalnum() and escaped not in _CLASS_ESCAPES and escaped not in _LITERAL_ESCAPES:
                raise _NotAShape("escape in a set")
            j += 2
            continue
        if source[j] in "[&~|":  # nested sets and set operations (VERSION1), or ambiguous syntax
            raise _NotAShape("set operation")
        j += 1
    return j + 1


def _sequence(text: str, flags: int) -> tuple:
    """The items of one alternative (no ``|`` at its top level)."""
    items: list = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            escaped = text[i + 1]
            if escaped in _CLASS_ESCAPES:
                cls, i = text[i:i + 2], i + 2
            elif escaped in _LITERAL_ESCAPES:
                items.append(_LITERAL_ESCAPES[escaped])
                i += 2
                continue
            elif not escaped.isalnum() and not escaped.isspace():
                items.append(escaped)
                i += 2
                continue
            else:
                raise _NotAShape("escape")
        elif char == "[":
            end = _class_end(text, i)
            cls, i = text[i:end], end
        elif char in _SPECIAL:
            raise _NotAShape(char)
        else:
            items.append(char)
            i += 1
            continue
        # A class must be repeated by * or + (nothing lazy or possessive after it).
        if i >= len(text) or text[i] not in "*+":
            raise _NotAShape("class without a run")
        least = 0 if text[i] == "*" else 1
        i += 1
        if i < len(text) and text[i] in "?+{":
            raise _NotAShape("lazy or possessive")
        items.append(_Run(regex.compile(f"(?:{cls})*", flags), least))
    if not items:
        raise _NotAShape("empty")
    merged: list = []
    for item in items:
        if type(item) is str and merged and type(merged[-1]) is str:
            merged[-1] += item
        else:
            merged.append(item)
    for item, following in zip(merged, merged[1:]):
        if type(item) is _Run and (type(following) is _Run or item.rx.match(following[0]).end() > 0):
            raise _NotAShape("a run could give characters back")
    return tuple(merged)
