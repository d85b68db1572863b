"""When a complete regex match seen while streaming is already final: no text that may follow can change it.

The scanner holds a complete match whenever the pattern's lookahead reach (over all of it) may pass the buffer
edge. For the library's delimiters that is far too often: ``</think>\\s*|(?=<|im_end|>)`` has a bounded reach
only through its second alternative, and ``<tool_call>(?P<name>[^\\s<]+)(?=\\s*<arg_key>)`` an unbounded one, so
a call's open would wait for the end of the stream. This module finds, per top-level alternative (branch) of a
pattern, whether a match of that branch ending before the buffer edge is decided by the text already there:

* the branch is a sequence of single characters (a literal, a set, a class), greedy repeats of one such
  character, and groups of those (no alternation or nested repeat), followed only by positive lookaheads
  (that capture nothing: a capture in one may still grow);
* every repeat of variable length can never give characters back: the characters it repeats are disjoint from
  every character that what follows it (including the lookaheads) could read first, or what follows matches
  the empty text unconditionally;
* no anchor other than ``^`` / ``\\A`` (they depend on the position alone), no word boundary, negative
  lookaround, conditional, inline flag or back reference; a lookbehind only where no repeat of variable length
  comes before it (it reads text that is already there, and the scan buffer keeps the context it needs; a split
  delimiter is judged by its variants, which have none).

Then the engine's first path (each repeat as long as the text allows) is the only one that can succeed, every
repeat stops at a character that is in the buffer (the match ends before the edge), and a positive lookahead
that held keeps holding whatever is appended. Which branch matches at a start is decided when every earlier
branch fails there even as a partial match (the scanner's usual assumption about partial matching).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from re import _constants as _c  # Python 3.11+

from .regex_cost import CACHED_PATTERN_SIZE, compile_pattern, pattern_weight, sized_cache

# Flags the analysis understands: what every template pattern is compiled with.
_PLAIN_FLAGS = regex.DOTALL | regex.UNICODE | regex.VERSION0
# Category pairs known to share no character.
_DISJOINT_CATEGORIES = {
    frozenset({_c.CATEGORY_SPACE, _c.CATEGORY_DIGIT}), frozenset({_c.CATEGORY_SPACE, _c.CATEGORY_WORD}),
    frozenset({_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE}), frozenset({_c.CATEGORY_DIGIT, _c.CATEGORY_NOT_DIGIT}),
    frozenset({_c.CATEGORY_WORD, _c.CATEGORY_NOT_WORD}),
}
_CATEGORY_RX = {
    _c.CATEGORY_SPACE: regex.compile(r"\s"), _c.CATEGORY_NOT_SPACE: regex.compile(r"\S"),
    _c.CATEGORY_DIGIT: regex.compile(r"\d"), _c.CATEGORY_NOT_DIGIT: regex.compile(r"\D"),
    _c.CATEGORY_WORD: regex.compile(r"\w"), _c.CATEGORY_NOT_WORD: regex.compile(r"\W"),
}
_ENUMERABLE = 512  # a set with at most this many characters is checked character by character


class _Unknown(Exception):
    """Syntax outside what the analysis understands: the branch is never called decided."""


@dataclass(frozen=True)
class Branch:
    """One top-level alternative of a delimiter pattern.

    Attributes:
        regex: the alternative compiled on its own (DOTALL), run at a match's start to see which one matched.
        decided: a complete match of it that ends before the buffer edge is final.
        edge_final: so is one that ends at the edge: a decided branch that ends with a single character (no
            repeat of variable length, no lookahead, so nothing read past its last character).
        sure_failure: when it fails at a position even as a partial match, no text appended can make it match
            there: it has no assertion that `regex`'s partial matching decides at the buffer edge as if the text
            ended there (``\\b``, ``\\B``, ``$``, a negative lookaround; `a\\B|a` seeing ``a``).
    """

    regex: object
    decided: bool
    edge_final: bool = False
    sure_failure: bool = False


@sized_cache(CACHED_PATTERN_SIZE, pattern_weight)
def _compiled_branches(source: str, flags: int) -> tuple | None:
    """``((branch source, branch compiled with flags), ...)`` for the top-level branches of ``source``; None when
    the pattern uses flags or syntax this split does not know, or a branch does not compile alone with the same
    flags (a bar inside a group or set, or an inline global flag that applies to every branch). Kept per pattern,
    bounded by size (`parsing.regex_cost.sized_cache`)."""
    if flags & ~_PLAIN_FLAGS:
        return None
    sources = top_level_branches(source)
    if sources is None:
        return None
    branches = []
    for part in sources:
        try:
            rx = compile_pattern(part, flags)
        except regex.error:
            return None
        if rx.flags != flags:
            return None
        branches.append((part, rx))
    return tuple(branches)


def alternative_patterns(source: str, flags: int) -> tuple | None:
    """The top-level alternatives of a pattern, each compiled on its own with the pattern's flags; None when it
    has one alternative or cannot be split (`_compiled_branches`).

    Used to check a partial match the ``regex`` module reports for the whole alternation: with a lookbehind in
    one alternative and another alternative elsewhere it may report one where no alternative matches even
    partially (hermes' close ``(?<=<tool_call>...)</tool_call>\\s*|...|(?=<\\|im_end\\|>)`` at a
    ``</tool_call>`` inside a JSON string, spanning to the buffer edge, whatever follows)."""
    branches = _compiled_branches(source, flags)
    return None if branches is None or len(branches) < 2 else tuple(rx for _, rx in branches)


def decided_branches(source: str, compiled) -> tuple[Branch, ...] | None:
    """The top-level branches of ``source`` (compiled as ``compiled``), or None when no branch can be decided
    early, the pattern cannot be split, or it uses flags or syntax the analysis does not know."""
    split = _compiled_branches(source, compiled.flags)
    if split is None:
        return None
    branches = []
    for part, rx in split:
        tree = _parse(part)
        decided = tree is not None and _is_decided(tree)
        branches.append(Branch(rx, decided, decided and _ends_with_a_character(tree),
                               tree is not None and not _edge_blind(list(tree))))
    if not any(b.decided for b in branches):
        return None
    return tuple(branches)


def _parse(source: str):
    import re._parser as sre_parse

    try:
        return sre_parse.parse(source, re.DOTALL)
    except Exception:
        return None


def top_level_branches(source: str) -> list[str] | None:
    """``source`` split at its top-level ``|`` (outside groups, sets and escapes); None for verbose mode and
    nested sets, which this scan cannot follow."""
    if "(?x" in source or "(?" in source and regex.search(r"\(\?[a-zA-Z]*x", source):
        return None
    parts, depth, i, start, n = [], 0, 0, 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i += 1
            if i < n and source[i] == "^":
                i += 1
            if i < n and source[i] == "]":
                i += 1
            while i < n and source[i] != "]":
                if source[i] == "\\":
                    i += 1
                elif source[i] == "[":
                    return None  # nested sets (regex V1): not analysed
                i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    return parts


# ``^`` and ``\\A`` (no MULTILINE: the analysis only sees plain flags) depend on the position alone, never on the
# text after it: they read nothing that more text could change.
_START_ANCHORS = (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)


def _is_decided(tree) -> bool:
    try:
        items = [item for item in _flatten(list(tree)) if not (item[0] is _c.AT and item[1] in _START_ANCHORS)]
        consuming, asserts = [], []
        for item in items:
            op, av = item
            if op is _c.ASSERT and av[0] == 1:
                _check_body(av[1], 1)
                asserts.append(item)
            elif op is _c.ASSERT and not asserts:
                _check_body(av[1], -1)  # a lookbehind reads only text that is already there
                consuming.append(item)
            elif asserts:
                return False  # something consuming after a lookahead: not the shape analysed
            else:
                consuming.append(item)
        for k, (op, av) in enumerate(consuming):
            if op is _c.MAX_REPEAT:
                low, high, body = av
                if low == high:
                    continue
                atom = _atom(body[0]) if len(body) == 1 else None
                if atom is None:
                    return False
                atoms, nullable = _first(consuming[k + 1:] + asserts)
                if nullable:
                    continue
                if atoms is None or not all(_disjoint(atom, other) for other in atoms):
                    return False
            elif op is not _c.ASSERT and _atom((op, av)) is None:
                return False
        return True
    except _Unknown:
        return False


def _edge_blind(items) -> bool:
    """Whether ``items`` hold an assertion other than ``^``/``\\A`` or a positive lookaround, or a conditional."""
    for op, av in items:
        if op is _c.AT and av not in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING):
            return True
        if op in (_c.ASSERT_NOT, _c.GROUPREF_EXISTS, _c.GROUPREF):
            return True
        if op is _c.ASSERT and _edge_blind(list(av[1])):
            return True
        if op is _c.SUBPATTERN and _edge_blind(list(av[-1])):
            return True
        if op is _c.BRANCH and any(_edge_blind(list(alt)) for alt in av[1]):
            return True
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) and _edge_blind(list(av[2])):
            return True
        if op is getattr(_c, "ATOMIC_GROUP", None) and _edge_blind(list(av)):
            return True
    return False


def _ends_with_a_character(tree) -> bool:
    try:
        items = _flatten(list(tree))
    except _Unknown:
        return False
    return bool(items) and items[-1][0] not in (_c.MAX_REPEAT, _c.ASSERT) and _atom(items[-1]) is not None


def _flatten(items) -> list:
    """Plain groups (capturing or not, no flags) replaced by their contents."""
    out = []
    for op, av in items:
        if op is _c.SUBPATTERN:
            _, add, remove, body = av
            if add or remove:
                raise _Unknown
            out.extend(_flatten(list(body)))
        elif op is _c.MAX_REPEAT:
            low, high, body = av
            body = _flatten(list(body))
            if len(body) != 1 or _atom(body[0]) is None:
                if low == high and all(_atom(b) is not None for b in body):
                    out.extend(body * low)  # a fixed count of single characters: as many literals
                    continue
                raise _Unknown
            out.append((op, (low, high, body)))
        else:
            out.append((op, av))
    return out


def _check_body(items, direction: int) -> None:
    """A lookahead's body (``direction`` 1) may be any pattern that cannot depend on the end of the text, look
    behind or capture; a lookbehind's (-1), any that cannot look ahead (``^`` allowed: the scan buffer keeps context)."""
    for op, av in items:
        if op is _c.AT and direction == -1 and av in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING):
            continue
        if op in (_c.AT, _c.ASSERT_NOT, _c.GROUPREF, _c.GROUPREF_EXISTS):
            raise _Unknown
        if op is _c.ASSERT:
            if av[0] != direction:
                raise _Unknown
            _check_body(av[1], direction)
        elif op is _c.SUBPATTERN:
            if av[1] or av[2]:
                raise _Unknown
            if direction == 1 and av[0] is not None:
                # A capture in a lookahead may read on to the buffer edge (`(?=(?P<name>b\w*))`): the lookahead
                # keeps holding whatever follows, but the capture can still grow, and with it the delimiter's value.
                raise _Unknown
            _check_body(av[-1], direction)
        elif op is _c.BRANCH:
            for sub in av[1]:
                _check_body(sub, direction)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            _check_body(av[2], direction)
        elif op in (_c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY):
            pass
        else:
            raise _Unknown


def _atom(item):
    """A single-character item as ``(negated, chars, ranges, categories)``, or None."""
    op, av = item
    if op is _c.LITERAL:
        return False, frozenset({chr(av)}), (), frozenset()
    if op is _c.NOT_LITERAL:
        return True, frozenset({chr(av)}), (), frozenset()
    if op is _c.ANY:
        return True, frozenset(), (), frozenset()
    if op is _c.IN:
        negated, chars, ranges, cats = False, set(), [], set()
        for sub_op, sub_av in av:
            if sub_op is _c.NEGATE:
                negated = True
            elif sub_op is _c.LITERAL:
                chars.add(chr(sub_av))
            elif sub_op is _c.RANGE:
                ranges.append(sub_av)
            elif sub_op is _c.CATEGORY and sub_av in _CATEGORY_RX:
                cats.add(sub_av)
            else:
                return None
        return negated, frozenset(chars), tuple(ranges), frozenset(cats)
    return None


def _first(items):
    """(Atoms one of which the first character read by ``items`` belongs to, or None: unknown; whether ``items``
    match the empty text whatever the text is)."""
    atoms = []
    for op, av in items:
        if op is _c.MAX_REPEAT or op is _c.MIN_REPEAT:
            low, _, body = av
            sub, nullable = _first(list(body))
            if sub is None:
                return None, False
            atoms.extend(sub)
            if low > 0 and not nullable:
                return atoms, False
        elif op is _c.SUBPATTERN:
            sub, nullable = _first(list(av[-1]))
            if sub is None:
                return None, False
            atoms.extend(sub)
            if not nullable:
                return atoms, False
        elif op is _c.BRANCH:
            any_nullable = False
            for alt in av[1]:
                sub, nullable = _first(list(alt))
                if sub is None:
                    return None, False
                atoms.extend(sub)
                any_nullable = any_nullable or nullable
            if not any_nullable:
                return atoms, False
        elif op is _c.ASSERT and av[0] == 1:
            sub, nullable = _first(list(av[1]))
            if sub is None:
                return None, False
            atoms.extend(sub)
            if not nullable:
                return atoms, False
        else:
            atom = _atom((op, av))
            if atom is None:
                return None, False
            return atoms + [atom], False
    return atoms, True


def _size(atom) -> int | None:
    negated, chars, ranges, cats = atom
    if negated or cats:
        return None
    total = len(chars) + sum(b - a + 1 for a, b in ranges)
    return total if total <= _ENUMERABLE else None


def _chars(atom):
    _, chars, ranges, _ = atom
    yield from chars
    for a, b in ranges:
        for code in range(a, b + 1):
            yield chr(code)


def _contains(atom, ch: str) -> bool:
    negated, chars, ranges, cats = atom
    found = ch in chars or any(a <= ord(ch) <= b for a, b in ranges) or any(
        _CATEGORY_RX[cat].match(ch) for cat in cats)
    return found != negated


def _disjoint(a, b) -> bool:
    """Whether no character belongs to both atoms (False when unsure)."""
    if _size(a) is not None:
        return not any(_contains(b, ch) for ch in _chars(a))
    if _size(b) is not None:
        return not any(_contains(a, ch) for ch in _chars(b))
    if b[0] and not a[0]:
        a, b = b, a
    if a[0] and not b[0]:
        # a is the complement of its listed members: b must lie inside them.
        _, a_chars, a_ranges, a_cats = a
        _, b_chars, b_ranges, b_cats = b
        inside = (False, a_chars, a_ranges, a_cats)
        if not all(_contains(inside, ch) for ch in b_chars):
            return False
        if any(not any(x <= lo and hi <= y for x, y in a_ranges) for lo, hi in b_ranges):
            return False
        return b_cats <= a_cats
    if not a[0] and not b[0]:
        # Both are unions of characters, ranges and categories: every pair of parts must be disjoint.
        _, a_chars, a_ranges, a_cats = a
        _, b_chars, b_ranges, b_cats = b
        if a_ranges or b_ranges:
            return False
        if any(_contains(b, ch) for ch in a_chars) or any(_contains(a, ch) for ch in b_chars):
            return False
        return all(frozenset({x, y}) in _DISJOINT_CATEGORIES for x in a_cats for y in b_cats)
    return False  # both complements of something: they share almost everything


__all__ = ["Branch", "decided_branches"]
