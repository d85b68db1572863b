"""Delimiter patterns simple enough to be matched with string operations instead of the regex engine.

Most library delimiters are alternations of a few plain forms: ``</think>\\s*|(?=<|im_end|>)``,
``<response>\\s*|</response>\\s*|<|im_end|>``, ``(?=>>>[\\w.-]+\\n)|<|eot_id|>``. While a delimiter arrives in
pieces, the scanner would run its regex on every feed (and again per alternative to see whether the match is
final). For a pattern of this module's forms, `Shape.decide` gives the same answer from ``str.startswith`` and
one bounded character-run match per repeat: where, from a candidate position on, the delimiter's one-shot match
starts and ends, or from where the text must be held because more text could still change it.

Forms (a pattern is a `Shape` only if every top-level alternative is one of them, once groups and optional items
are written out as alternatives: ``P(?:A|B)S`` as ``PAS|PBS``, ``P(?:A)?S`` and ``Px?S`` as ``PAS|PS``, which the
engine tries in that same order, `_expanded`):

* a sequence of items: literal characters (plain, or escaped punctuation, ``\\n``, ``\\t``, ``\\r``), choices
  ``(?:a|b)`` of literals, and greedy runs ``C*`` / ``C+`` of one character class ``C`` (``\\s``, ``\\w``,
  ``\\d``, or a bracket set of plain characters, ranges and those escapes), where a run can never usefully give a
  character back (`_check_runs`): what may come right after it (through runs that may be empty, and into a
  lookahead) is a character it does not accept, or a run that may be empty and accepts all it accepts; the
  engine's first path is then the only one that can match;
* optionally ending in a positive lookahead ``(?=S1|S2|...)`` of such sequences (alone, it is a zero-width
  alternative).

Groups only as ``(?P<name>C*)`` (a named run, outside lookaheads), ``(?:a|b)`` (literals none of which is a prefix
of another, else written out) and ``(?!a|b)`` (literals; not right after a run); no anchor but ``^`` first in an
alternative, other assertions, lazy/possessive quantifiers, groups quantified otherwise than by ``?``, or inline
flags. Runs are matched by the ``regex`` module with the delimiter's own flags (its ``\\s`` is not `str.isspace`).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator

import re

import regex

from .regex_cost import compile_pattern

# Flags a shape may be compiled under: what every template pattern gets (DOTALL), and the defaults.
_PLAIN_FLAGS = regex.DOTALL | regex.UNICODE | regex.VERSION0
_SPECIAL = set(".^$*+?{}[]|()\\")
_LITERAL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_CLASS_ESCAPES = set("swd")

MATCH, FAIL, UNDECIDED = 0, 1, 2
# The pattern that never matches (`parsing.prefilter.split_leading_lookbehind`'s variant with no alternative left).
NEVER = "(?!)"


class _Start:
    """``^`` first in an alternative (no MULTILINE flag is allowed): it matches at index 0 of the buffer only."""


START = _Start()


class _NotAShape(Exception):
    """The pattern uses something outside the forms this module handles."""


@dataclass(frozen=True)
class _Run:
    """A greedy run of one character class: ``regex`` matching the longest run at a position, its minimum
    length, and the name of the group capturing it (None: none)."""

    rx: object
    least: int
    name: str | None = None
    cls: str = ""  # the class as written (``\\s``, ``[^<]``)
    # The literal right after the run when the run accepts its first character (`_check_runs`): the walk then
    # tries the greedy end first and then, as the engine backtracks, each shorter end where that literal starts.
    back: str | None = None
    rest: tuple = ()  # with ``back``: the items after the run
    # One character of the class, not a run (``rx`` matches it or nothing; ``least`` 1): only in a lookahead, where
    # a run's rules read the same for it (it never reaches past one character, and never gives any back).
    single: bool = False


@dataclass(frozen=True)
class _Mark:
    """Where a named group that holds more than one run opens (``opening``) or closes (zero width)."""

    name: str
    opening: bool


@dataclass(frozen=True)
class _Choice:
    """``(?:a|b|...)`` of literals none of which is a prefix of another: at most one can match at a position, so
    the first that matches is the only one (no backtracking into the group can help). ``longest``: the length of
    the longest (a shorter rest of the buffer may cut one off)."""

    literals: tuple[str, ...]
    longest: int


@dataclass(frozen=True)
class _Not:
    """``(?!a|b)`` of literals: no match where one of them starts (never right after a run, which could otherwise
    give characters back until it passes). ``longest`` as for `_Choice`."""

    literals: tuple[str, ...]
    longest: int


# Why a shape is undecided (`Shape.decide`'s cause), and where its walk stopped, so that deciding it again on a
# longer buffer need not walk the text before that again: a tuple ``(branch, item, pos, captures, marks, literals,
# run)``: the branch (every earlier one failed for good); the index of the item the walk stopped at (the length of
# the branch's items: only its lookahead was undecided; -1: the walk cannot resume there, inside the items after a
# run that gives characters back, and walks the branch again from its start); ``pos`` where that item starts
# (characters from the shape's start); the captures and group marks of the text before it (None when none were
# asked for / none are open; captures copied, never changed); ``literals``: the edge cuts off one of them starting
# at ``edge`` (undecided while the buffer still ends inside one); ``run``: the run starting at ``pos`` reached the
# edge (undecided while more text only continues it); both None when only the lookahead waits, unless one sequence
# of the lookahead alone waits, for one of ``literals`` cut off by the edge (every other one failed for good);
# ``edge``: where those literals start (``pos`` for a literal of the consumed text), characters from the start.
PAUSE_BRANCH, PAUSE_ITEM, PAUSE_POS, PAUSE_CAPTURES, PAUSE_MARKS, PAUSE_LITERALS, PAUSE_RUN, PAUSE_EDGE = range(8)
_NO_CAPTURES: dict = {}  # shared, never changed: a pause's captures when there were none yet


@dataclass(frozen=True)
class Shape:
    """A delimiter pattern of this module's forms.

    Attributes:
        branches: the top-level alternatives in order, each ``(items, ahead)``: the sequence it consumes (a tuple
            of strings, literal text, and `_Run` objects; empty for a bare lookahead), and the sequences of the
            lookahead that ends it (None: none).
        named: whether a run is a named group (`decide` can fill ``captures``).
    """

    branches: tuple
    named: bool = False
    # The group names in the pattern's order, when a named group holds more than one run (its capture is made
    # when it closes, after those inside it): a MATCH's captures are put in this order, as ``groupdict()`` has them.
    order: tuple | None = None
    # The literals a match must start with (each branch's first literal or choice of them, or its lookahead's when
    # it consumes nothing), or None when a branch may start otherwise (a run, ``^``); and the longest of them.
    heads: tuple | None = None
    head_width: int = 0
    # The first characters of `heads`: nearer the buffer edge than the longest head, a character there that starts
    # none of them still rules every branch out (the text at the start of a stream is most often such text).
    head_firsts: frozenset = field(default=frozenset(), compare=False)
    # `walk` written out as Python for this shape (`_compiled_decide`), or None: what `decide` runs without a pause.
    compiled: object = field(default=None, compare=False, repr=False)
    # (branch, item) -> `walk` resumed there, written out (`_compiled_decide`), made when first needed.
    resumes: dict = field(default_factory=dict, compare=False, repr=False)
    # The `CodeBudget` of the template this shape belongs to (None: outside a template compile), and the shape's
    # items in all (what one more resume function costs from it).
    budget: object = field(default=None, compare=False, repr=False)
    size: int = field(default=0, compare=False, repr=False)
    # (heads, head width, head first characters) as `heads` and its two companions would be for any number of
    # branches (one included), or None where a branch may start otherwise: what rules every branch out at a
    # position with one `str.startswith` and no walk (`parsing.scanner._variant`, before its lookbehind).
    lead: tuple | None = field(default=None, compare=False, repr=False)

    def decide(self, buf: str, at: int, eos: bool, captures: dict | None = None,
               pause: tuple | None = None) -> tuple:
        """`walk`, by the shape's compiled functions when it has them."""
        compiled = self.compiled
        if compiled is None:
            return self.walk(buf, at, eos, captures, pause)
        if pause is None:
            return compiled(buf, at, eos, captures)
        item, pos, caps = pause[1], pause[2], pause[3]
        if item < 0 or captures is not None and caps is None and self.named:
            item, pos, caps = 0, 0, None  # walk that branch again from its start
        key = (pause[0], item)
        resume = self.resumes.get(key)
        if resume is None:
            budget = self.budget
            if len(self.resumes) >= MAX_RESUMES or budget is not None and budget.resume_left < self.size:
                return self.walk(buf, at, eos, captures, pause)
            if budget is not None:
                budget.resume_left -= self.size
            resume = self.resumes[key] = _compiled_decide(self, *key, True)
        return resume(buf, at, eos, captures, pos, caps, pause[4])

    def walk(self, buf: str, at: int, eos: bool, captures: dict | None = None,
             pause: tuple | None = None) -> tuple:
        """The pattern's outcome at ``at`` in ``buf``: ``(MATCH, end)`` when a match starting there is final
        whatever text follows (the first alternative that matches, every earlier one failing for good);
        ``(UNDECIDED, cause)`` when more text could still make or change a match there (a literal cut off by the
        buffer edge, a run reaching it, a lookahead reading up to it): ``cause`` is a pause (`PAUSE_BRANCH`) saying
        why and where the walk stopped, or None; ``(FAIL, -1)`` when no match can start there. ``eos``: the buffer is the whole
        rest of the stream (nothing is undecided). ``captures``: a dict to receive the named groups of a MATCH (as
        ``Match.groupdict()`` without the groups that took no part). ``pause``: the cause of the last UNDECIDED
        answer at ``at``, on a shorter buffer (same ``at``, same text up to its edge): the walk resumes where it
        stopped, with the same result as deciding from the start."""
        if pause is not None:
            return self._resume(buf, at, eos, captures, pause)
        heads = self.heads
        if heads is not None and not buf.startswith(heads, at) and (
                eos or len(buf) - at >= self.head_width or at < len(buf) and buf[at] not in self.head_firsts):
            return FAIL, -1  # no branch's first literal starts here (near the edge, the walk tells a cut-off one)
        index = -1
        for items, ahead in self.branches:
            index += 1
            end = at
            if items:
                status, end = _walk(items, buf, at, eos, True, captures, None, 0, at, index)
                if status != MATCH:
                    if captures:
                        captures.clear()
                    if status == UNDECIDED:
                        return UNDECIDED, end
                    continue
            if ahead is not None:
                pending, edge = 0, None
                for sequence in ahead:
                    status, why = _walk(sequence, buf, end, eos, False, None)
                    if status == MATCH:
                        break
                    if status == UNDECIDED:
                        pending, edge = pending + 1, why
                else:
                    if pending:
                        return UNDECIDED, self._waiting(at, captures, index, items, end,
                                                        edge if pending == 1 else None)
                    if captures:
                        captures.clear()
                    continue
            if self.order is not None and captures:
                self._ordered(captures)
            return MATCH, end
        return FAIL, -1

    def _waiting(self, at: int, captures: dict | None, index: int, items: tuple, end: int,
                 edge: tuple | None = None) -> tuple:
        """The pause of branch ``index`` whose consumed text matched up to ``end`` and whose lookahead alone is
        undecided (``captures`` copied, then cleared); ``edge``: the literals its one waiting sequence waits for,
        cut off by the buffer edge, and where they start (a buffer index), or None."""
        cause = (index, len(items), end - at,
                 dict(captures) if captures else (None if captures is None else _NO_CAPTURES), None,
                 None if edge is None else edge[0], None, end - at if edge is None else edge[1] - at)
        if captures:
            captures.clear()
        return cause

    def _ahead(self, buf: str, at: int, eos: bool, captures: dict | None, index: int, items: tuple, ahead: tuple,
               end: int) -> tuple:
        """Branch ``index``, its consumed text matched up to ``end``: its lookahead decides (captures put in order
        on a MATCH, cleared otherwise)."""
        pending, edge = 0, None
        for sequence in ahead:
            status, why = _walk(sequence, buf, end, eos, False, None)
            if status == MATCH:
                if self.order is not None and captures:
                    self._ordered(captures)
                return MATCH, end
            if status == UNDECIDED:
                pending, edge = pending + 1, why
        if pending:
            return UNDECIDED, self._waiting(at, captures, index, items, end, edge if pending == 1 else None)
        if captures:
            captures.clear()
        return FAIL, -1

    def _resume(self, buf: str, at: int, eos: bool, captures: dict | None, pause: tuple) -> tuple:
        """`decide` from ``pause``: the branch it names from where its walk stopped, then the later branches."""
        index, start = pause[0], pause[1]
        if start < 0 or captures is not None and pause[3] is None and self.named:
            start = 0  # walk that branch again from its start
        branches = self.branches
        while index < len(branches):
            items, ahead = branches[index]
            end = at
            if start:
                end += pause[2]
                if captures is not None and pause[3]:
                    captures.update(pause[3])
            if start < len(items):
                marks = {name: at + offset for name, offset in pause[4].items()} if start and pause[4] else None
                status, end = _walk(items, buf, end, eos, True, captures, marks,
                                    start, at, index)
                if status != MATCH:
                    if captures:
                        captures.clear()
                    if status == UNDECIDED:
                        return UNDECIDED, end
                    index, start = index + 1, 0
                    continue
            if ahead is not None:
                status, end = self._ahead(buf, at, eos, captures, index, items, ahead, end)
                if status != MATCH:
                    if status == UNDECIDED:
                        return UNDECIDED, end
                    index, start = index + 1, 0
                    continue
            elif self.order is not None and captures:
                self._ordered(captures)
            return MATCH, end
        return FAIL, -1

    def _ordered(self, captures: dict) -> None:
        """Put ``captures`` in the pattern's group order (``groupdict()``'s)."""
        ordered = {name: captures[name] for name in self.order if name in captures}
        captures.clear()
        captures.update(ordered)


def _walk(items: tuple, buf: str, at: int, eos: bool, consuming: bool, captures: dict | None,
          marks: dict | None = None, start: int = 0, origin: int = 0, branch: int = 0) -> tuple:
    """One sequence at ``at`` (from its item ``start``): ``(MATCH, end)``, ``(FAIL, -1)``, or UNDECIDED: the buffer
    edge cut it (``(UNDECIDED, None)``; in a lookahead, ``(UNDECIDED, (literals, index))`` when it cuts off one of
    ``literals`` starting at buffer index ``index``); in consumed text (``consuming``), a run reaches the edge and could take more
    (whatever follows the run would meet the edge too, so the outcome is undecided whatever the items after it), or
    the edge cuts off a literal (or a choice of them): ``(UNDECIDED, pause)`` (`PAUSE_BRANCH`) with the item's index and start (all
    before it is decided, so while the buffer still ends inside one of them, or the run continues, the outcome stays
    undecided): the pause of branch ``branch`` of a shape starting at buffer index ``origin``."""
    end = len(buf)
    i = at
    k = start - 1
    for item in items[start:] if start else items:
        k += 1
        kind = type(item)
        if item is START:
            if i:
                return FAIL, -1
        elif kind is str:
            if buf.startswith(item, i):
                i += len(item)
            elif not eos and end - i < len(item) and item.startswith(buf[i:]):
                if not consuming:
                    return UNDECIDED, ((item,), i)
                return UNDECIDED, (branch, k, i - origin, dict(captures) if captures else (
                    None if captures is None else _NO_CAPTURES), _relative(marks, origin), (item,), None, i - origin)
            else:
                return FAIL, -1
        elif kind is _Run:
            j = item.rx.match(buf, i).end()
            if j == end and not eos and (consuming or j - i < item.least):
                if not consuming:
                    return UNDECIDED, None
                return UNDECIDED, (branch, k, i - origin, dict(captures) if captures else (
                    None if captures is None else _NO_CAPTURES), _relative(marks, origin), None, item, i - origin)
            if j - i < item.least:
                return FAIL, -1
            if item.back is not None:
                status, found = _give_back(item, buf, i, j, eos, consuming, captures, marks)
                if status == UNDECIDED and found is not None:
                    # inside the items after the run (buffer positions): not resumable from the branch
                    found = (branch, -1, found[2] - origin, *found[3:7], found[7] - origin)
                return status, found
            if captures is not None and item.name is not None:
                captures[item.name] = buf[i:j]
            i = j
        elif kind is _Mark:
            if item.opening:
                if marks is None:
                    marks = {}
                marks[item.name] = i
            elif captures is not None:
                captures[item.name] = buf[marks[item.name]:i]
        elif kind is _Choice:
            for literal in item.literals:
                if buf.startswith(literal, i):
                    i += len(literal)
                    break
            else:
                if not eos and end - i < item.longest and cut_off(item.literals, buf, i):
                    if not consuming:
                        return UNDECIDED, (item.literals, i)
                    return UNDECIDED, (branch, k, i - origin, dict(captures) if captures else (
                        None if captures is None else _NO_CAPTURES), _relative(marks, origin), item.literals,
                                       None, i - origin)
                return FAIL, -1
        else:
            if buf.startswith(item.literals, i):
                return FAIL, -1
            if not eos and end - i < item.longest and cut_off(item.literals, buf, i):
                return UNDECIDED, None
    return MATCH, i


def _relative(marks: dict | None, origin: int) -> dict | None:
    """A pause's copy of the open group marks, as offsets from the shape's start (the buffer may lose its consumed
    text before the walk resumes)."""
    return {name: index - origin for name, index in marks.items()} if marks else None


def _give_back(run: _Run, buf: str, i: int, j: int, eos: bool, consuming: bool, captures: dict | None,
               marks: dict | None) -> tuple:
    """The items after ``run`` (which matched ``buf[i:j]`` greedily, short of the edge or at the end of the stream)
    as the engine tries them: the literal after the run (``run.back``) cannot start at the greedy end (the run
    stopped at a character it does not accept, and it accepts the literal's first one), so from each shorter end
    where that literal starts, longest first. The first that matches wins; one undecided before any matches (the
    literal cut off by the edge, or the rest undecided) leaves the whole undecided."""
    back = run.back
    lo = i + run.least
    if not eos:
        for k in range(max(lo, len(buf) - len(back) + 1), j):
            if back.startswith(buf[k:]):
                return UNDECIDED, None
    k = buf.rfind(back, lo, j - 1 + len(back))
    while k != -1:
        status, found = _walk(run.rest, buf, k, eos, consuming, captures, marks)
        if status != FAIL:
            if status == MATCH and captures is not None and run.name is not None:
                captures[run.name] = buf[i:k]
            return status, found
        k = buf.rfind(back, lo, k - 1 + len(back)) if k > lo else -1
    return FAIL, -1


def cut_off(literals: tuple[str, ...], buf: str, at: int) -> bool:
    """Whether ``buf[at:]`` is a proper prefix of one of ``literals`` (the buffer ends inside it)."""
    rest = len(buf) - at
    if rest < 0:
        return False
    for literal in literals:  # a loop, not any() over a generator: this runs on most held feeds
        if len(literal) > rest and literal.startswith(buf[at:]):
            return True
    return False


def shape_of(source: str, flags: int) -> Shape | None:
    """The `Shape` of a delimiter pattern compiled with ``flags``, or None when it is not of this module's forms."""
    if flags & ~_PLAIN_FLAGS:
        return None
    if source == NEVER:
        return Shape(())
    try:
        branches = []
        for alternative in _expanded(source):
            k = _last_group(alternative)
            if k != -1 and alternative.startswith("(?=", k) and _closing(alternative[k:]):
                items = _sequence(alternative[:k], flags, True) if k else ()
                ahead = tuple(_sequence(s, flags, False, single=True) for s in _expanded(alternative[k + 3:-1]))
                branches.append((items, ahead))
            else:
                branches.append((_sequence(alternative, flags, True), None))
        branches = [(_check_runs(items, ahead),
                     None if ahead is None else tuple(_check_runs(sequence, None, False) for sequence in ahead))
                    for items, ahead in branches]
        _check_written_out(branches)
        named = any(type(item) is _Run and item.name is not None or type(item) is _Mark
                    for items, _ in branches for item in _all_items(items))
        order = None
        if any(type(item) is _Mark for items, _ in branches for item in _all_items(items)):
            groups = compile_pattern(source, flags).groupindex
            order = tuple(sorted(groups, key=groups.get))
        try:
            lead = _heads(branches)
        except IndexError:  # (an empty lookahead: one branch may match anywhere; more than one: no shape, as before)
            if len(branches) > 1:
                raise
            lead = None
        if lead is not None:
            lead = (lead, max(map(len, lead), default=0), frozenset(head[0] for head in lead if head))
        heads = lead if len(branches) > 1 else None  # one branch: its walk rules it out as fast
        shape = Shape(tuple(branches), named, order, *(heads or (None, 0, frozenset())), lead=lead)
        size = sum(len(items) + sum(map(len, ahead or ())) for items, ahead in branches)
        budget = _TEMPLATE_BUDGET.get()
        if size <= MAX_COMPILED_ITEMS and (budget is None or budget.compile_left >= size):
            if budget is not None:
                budget.compile_left -= size
            object.__setattr__(shape, "budget", budget)
            object.__setattr__(shape, "size", size)
            object.__setattr__(shape, "compiled", _compiled_decide(shape))
        return shape
    except (_NotAShape, regex.error, IndexError):
        return None


def _item_key(item) -> tuple:
    """What an item matches, for comparing written-out alternatives (a run without what it gives back to)."""
    kind = type(item)
    if kind is _Run:
        return (_Run, item.cls, item.least, item.name, item.single)
    return (kind, item)


def _check_written_out(branches: list) -> None:
    """`_NotAShape` where writing groups and optional items out as alternatives (`_expanded`) would change the
    match: a run that gives characters back (`_Run.back`) followed by a written-out group (then two alternatives
    share every item up to and past that run). The engine tries the group's alternatives (an optional's
    "without") at the run's greedy end before giving back anything; the written-out alternatives give characters
    back first (``b[^>]*(?:a)?`` on ``ba2:``: the engine matches ``ba2:``, the first alternative ``b[^>]*a`` would
    match ``ba``). Also a group name used twice in one alternative (the engine keeps the last capture)."""
    keys = [tuple(_item_key(item) for item in items) for items, _ in branches]
    for index, (items, _) in enumerate(branches):
        names = [item.name for item in items if type(item) is _Run and item.name is not None
                 or type(item) is _Mark and item.opening]
        if len(names) != len(set(names)):
            raise _NotAShape("a group name used twice in one alternative")
        for k, item in enumerate(items):
            if type(item) is _Run and item.back is not None:
                prefix = keys[index][:k + 1]
                if any(other != index and keys[other][:k + 1] == prefix for other in range(len(branches))):
                    raise _NotAShape("a written-out group after a run that gives characters back")


def _heads(branches: list) -> tuple | None:
    """`Shape.heads` of these branches."""
    heads: list = []
    for items, ahead in branches:
        for sequence in ((items,) if items else ahead):
            item = sequence[0]
            if type(item) is str:
                heads.append(item)
            elif type(item) is _Choice:
                heads.extend(item.literals)
            else:
                return None
    return tuple(dict.fromkeys(heads))


def _all_items(items: tuple):
    """The items of a sequence, with those after a run that gives characters back (`_Run.rest`)."""
    for item in items:
        yield item
        if type(item) is _Run and item.back is not None:
            yield from _all_items(item.rest)


# At most this many alternatives after expanding groups and optional items (a pattern with more is no shape).
MAX_ALTERNATIVES = 64


def _expanded(text: str) -> list[str]:
    """``text``'s top-level alternatives, with every group ``(?:A|B)`` that is not a choice of literals (`_Choice`),
    and every optional ``(?:A)?`` or ``x?`` (a literal character), written out: ``P(?:A|B)S`` as ``PAS|PBS``,
    ``Px?S`` as ``PxS|PS``, in that order. The same matches in the same order: the engine tries a group's
    alternatives (a greedy ``?``: with, then without) before giving back anything matched before it, and in each
    written-out alternative nothing before the group can give characters back usefully (`_check_runs`), so its
    first path is the only one that can match. Lookaround and named groups are left as they are."""
    out: list[str] = []
    for alternative in _split(text, 0, len(text)):
        out.extend(_expanded_sequence(alternative))
        if len(out) > MAX_ALTERNATIVES:
            raise _NotAShape("too many alternatives")
    return out


def _expanded_sequence(alt: str) -> list[str]:
    """One alternative (no top-level ``|``) written out as in `_expanded`."""
    i = 0
    while i < len(alt):
        char = alt[i]
        if char == "\\":
            j = i + 2
        elif char == "[":
            j = _class_end(alt, i)
        elif char == "(":
            close = _group_end(alt, i)
            j = close + 1
            if alt.startswith("(?P<", i):
                head = alt.index(">", i) + 1
                inner = alt[head:close]
                choices = _expanded(inner)
                if choices != [inner]:  # P(?P<n>A|B)S as P(?P<n>A)S|P(?P<n>B)S
                    rests = _expanded_sequence(alt[j:])
                    if len(choices) * len(rests) > MAX_ALTERNATIVES:
                        raise _NotAShape("too many alternatives")
                    return [alt[:head] + choice + ")" + rest for choice in choices for rest in rests]
            if alt.startswith("(?:", i):
                optional = alt.startswith("?", j)
                if optional and alt[j + 1:j + 2] in ("?", "+"):
                    raise _NotAShape("lazy or possessive")
                inner = alt[i + 3:close]
                if optional or not _literal_choice(inner):
                    choices = _expanded(inner) + ([""] if optional else [])
                    rests = _expanded_sequence(alt[j + optional:])
                    if len(choices) * len(rests) > MAX_ALTERNATIVES:
                        raise _NotAShape("too many alternatives")
                    return [alt[:i] + choice + rest for choice in choices for rest in rests]
        else:
            j = i + 1
        if alt.startswith("?", j) and (char not in _SPECIAL or char == "\\" and alt[i + 1] not in _CLASS_ESCAPES):
            if alt[j + 1:j + 2] in ("?", "+"):
                raise _NotAShape("lazy or possessive")
            rests = _expanded_sequence(alt[j + 1:])
            if 2 * len(rests) > MAX_ALTERNATIVES:
                raise _NotAShape("too many alternatives")
            return [alt[:j] + rest for rest in rests] + [alt[:i] + rest for rest in rests]
        i = j
    return [alt]


def _literal_choice(inner: str) -> bool:
    """Whether a group's content is a `_Choice`: literals, none empty, none a prefix of another."""
    try:
        literals = [_literal(part) for part in _split(inner, 0, len(inner))]
    except (_NotAShape, IndexError):
        return False
    return "" not in literals and not any(a != b and a.startswith(b) for a in literals for b in literals)


def _structure(text: str, start: int = 0, stop: int | None = None):
    """``(index, char, depth)`` for each ``(``, ``)`` and ``|`` of ``text[start:stop]`` outside escapes and sets;
    ``depth``: the groups open around it (a group's parentheses get the depth outside it)."""
    stop = len(text) if stop is None else stop
    depth, i = 0, start
    while i < stop:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(text, i)
            continue
        if char == "(":
            yield i, char, depth
            depth += 1
        elif char == ")":
            depth -= 1
            yield i, char, depth
        elif char == "|":
            yield i, char, depth
        i += 1


def _last_group(alternative: str) -> int:
    """Index of the last ``(`` at the top level of ``alternative``, or -1."""
    return max((i for i, char, depth in _structure(alternative) if char == "(" and depth == 0), default=-1)


def _group_end(text: str, i: int) -> int:
    """Index of the ``)`` closing the group that opens at ``text[i] == "("``."""
    for j, char, depth in _structure(text, i):
        if char == ")" and depth == 0:
            return j
    raise _NotAShape("unbalanced")


def _closing(alternative: str) -> bool:
    """Whether the group that starts ``alternative`` closes at its last character (the whole alternative)."""
    return _group_end(alternative, 0) == len(alternative) - 1


def _split(source: str, start: int, stop: int) -> list[str]:
    """``source[start:stop]`` cut at its top-level ``|`` (inside no group or set)."""
    parts, begin = [], start
    for i, char, depth in _structure(source, start, stop):
        if char == "|" and depth == 0:
            parts.append(source[begin:i])
            begin = i + 1
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


def _class(text: str, i: int) -> tuple[str, int] | None:
    """The character class at ``text[i]`` (``\\s``, ``\\w``, ``\\d`` or a bracket set) and the index after it, or
    None when there is none."""
    if text[i] == "\\" and text[i + 1] in _CLASS_ESCAPES:
        return text[i:i + 2], i + 2
    if text[i] == "[":
        end = _class_end(text, i)
        return text[i:end], end
    return None


def _run(text: str, i: int, flags: int, name: str | None, single: bool = False) -> tuple[_Run, int]:
    """The run ``C*`` / ``C+`` at ``text[i]`` and the index after it; ``single``: or one character of the class,
    ``C`` alone (`_Run.single`)."""
    found = _class(text, i)
    if found is None:
        raise _NotAShape("not a class")
    cls, i = found
    if single and (i >= len(text) or text[i] not in "*+?{"):
        return _Run(_run_matcher(cls, flags, "?"), 1, name, cls, single=True), i
    # A class must be repeated by * or + (nothing lazy or possessive after it).
    if i >= len(text) or text[i] not in "*+":
        raise _NotAShape("class without a run")
    least = 0 if text[i] == "*" else 1
    i += 1
    if i < len(text) and text[i] in "?+{":
        raise _NotAShape("lazy or possessive")
    return _Run(_run_matcher(cls, flags), least, name, cls), i


# The characters `regex`'s ``\s`` matches (Unicode White_Space; the standard library's ``\s`` also takes
# \x1c-\x1f): `_run_matcher` writes ``\s`` out as these for the standard library (checked over every code point by
# tests/parsing/test_shapes.py).
REGEX_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _run_matcher(cls: str, flags: int, repeat: str = "*"):
    """The compiled pattern matching the longest run of the class ``cls`` at a position (``repeat`` ``?``: one
    character of it, or nothing): the standard library's
    ``re`` (a call costs about half of `regex`'s) when the class reads the same there (plain characters, ranges and
    ``\\s`` written out as `REGEX_WHITESPACE`), else `regex` with the delimiter's flags (``\\w``, ``\\d``)."""
    negated, members = _class_parts(cls)
    written = []
    for member in members:
        if type(member) is tuple:
            written.append(f"{_set_char(member[0])}-{_set_char(member[1])}")
        elif member == "\\s":
            written.append(REGEX_WHITESPACE)
        elif len(member) == 1:
            written.append(_set_char(member))
        else:  # \w, \d: their Unicode tables differ between the two engines
            return compile_pattern(f"(?:{cls}){repeat}", flags)
    return re.compile(f"[{'^' if negated else ''}{''.join(written)}]{repeat}")


def _set_char(char: str) -> str:
    """One character written inside a standard-library bracket set."""
    return "\\" + char if char in "\\]-^[" else char if char.isprintable() and char != " " else f"\\U{ord(char):08x}"


def _literal(text: str) -> str:
    """The text a sequence of literal characters matches."""
    items = _sequence(text, 0, False)
    if len(items) != 1 or type(items[0]) is not str:
        raise _NotAShape("not a literal")
    return items[0]


def _sequence(text: str, flags: int, named: bool, top: bool = True, single: bool = False) -> tuple:
    """The items of one alternative (no ``|`` at its top level); ``named``: a run may be a named group; ``top``:
    the text starts the alternative (where ``^`` may stand); ``single``: a class may stand alone (one character of
    it, `_Run.single`: in a lookahead)."""
    items: list = []
    i = 0
    if named and top and text.startswith("^"):
        items.append(START)
        i = 1
    while i < len(text):
        char = text[i]
        if char == "\\" and text[i + 1] not in _CLASS_ESCAPES:
            escaped = text[i + 1]
            if escaped in _LITERAL_ESCAPES:
                items.append(_LITERAL_ESCAPES[escaped])
            elif not escaped.isalnum() and not escaped.isspace():
                items.append(escaped)
            else:
                raise _NotAShape("escape")
            i += 2
        elif char == "(":
            end = _group_end(text, i)
            if end + 1 < len(text) and text[end + 1] in "*+?{":
                raise _NotAShape("quantified group")
            if named and text.startswith("(?P<", i):
                close = text.index(">", i)
                name = text[i + 4:close]
                if not name.isidentifier():
                    raise _NotAShape("group name")
                try:
                    item, after = _run(text, close + 1, flags, name)
                except _NotAShape:
                    after = -1
                if after != end:
                    # A named group of more than one run: its items between marks where it opens and closes.
                    inner = _sequence(text[close + 1:end], flags, True, top=False)
                    items.extend((_Mark(name, True), *inner, _Mark(name, False)))
                    i = end + 1
                    continue
            elif text.startswith("(?:", i):
                literals = tuple(_literal(alt) for alt in _split(text, i + 3, end))
                if any(a != b and a.startswith(b) for a in literals for b in literals) or "" in literals:
                    raise _NotAShape("one literal of a group is a prefix of another")
                item = _Choice(literals, max(map(len, literals)))
            elif text.startswith("(?!", i):
                literals = tuple(_literal(alt) for alt in _split(text, i + 3, end))
                item = _Not(literals, max(map(len, literals)))
            else:
                raise _NotAShape("group")
            items.append(item)
            i = end + 1
        elif char == "\\" or char == "[":
            item, i = _run(text, i, flags, None, single)
            items.append(item)
        elif char in _SPECIAL:
            raise _NotAShape(char)
        else:
            items.append(char)
            i += 1
    if not items:
        raise _NotAShape("empty")
    return join_literals(items)


def join_literals(items) -> tuple:
    """``items`` (a shape's sequence: literal strings and other items) with adjacent literals joined into one
    string: ``("<", "a", RUN, "b")`` -> ``("<a", RUN, "b")``."""
    merged: list = []
    for item in items:
        if type(item) is str and merged and type(merged[-1]) is str:
            merged[-1] += item
        else:
            merged.append(item)
    return tuple(merged)


def _check_runs(items: tuple, ahead: tuple | None, consuming: bool = True) -> tuple:
    """``items`` once every run of the sequence (followed by ``ahead``'s sequences, when it ends in a lookahead) is
    one whose matches the walk tries as the engine does. Mostly that is a run whose greedy match is the only one
    that can lead to a match: whatever a shorter match of it would leave next cannot be taken by what follows. So
    the characters that may come right after it (through runs that may be empty, and into the lookahead) must be
    ones it does not accept; or the next item is a run that may be empty, accepts all it accepts and gives nothing
    back itself (given back, they would be taken by that run, which ends where it would have). In consumed text (``consuming``) a run may
    also be followed directly by a literal whose first character it accepts: the walk then gives characters back
    as the engine does (`_Run.back`, `_give_back`). Else greedy matching could have to give characters back in
    ways the walk does not follow: `_NotAShape`."""
    items = list(items)
    giving = 0
    for k in range(len(items) - 1, -1, -1):
        item = items[k]
        if type(item) is _Run and _check_follow(item, items[k + 1:], ahead):
            if not consuming:
                raise _NotAShape("a run giving characters back in a lookahead")
            giving += 1
            if giving > MAX_GIVE_BACK_RUNS:
                raise _NotAShape("too many runs giving characters back")
            items[k] = _Run(item.rx, item.least, item.name, item.cls, items[k + 1], tuple(items[k + 1:]))
    return tuple(items)


# Runs that give characters back, at most, in one sequence of a shape (the library has one, kimi-k2's call open):
# each holds the rest of its sequence, so their readings and walks grow exponentially with their number. `'<q>' +
# '[a-z]*a' * 24` (171 characters) took over a minute to load; past the cap the pattern keeps the regex (under its
# time limits).
MAX_GIVE_BACK_RUNS = 4


def _check_follow(run: _Run, rest, ahead: tuple | None, may_give_back: bool = True) -> bool:
    """Whether ``run`` is followed right away by a literal whose first character it accepts (the walk must give
    characters back); raises `_NotAShape` when what follows it is beyond `_check_runs`'s rules."""
    first = True
    for following in rest:
        kind = type(following)
        if kind is _Mark:
            continue
        if kind is _Run:
            if following.least == 0 and following.back is None and _class_within(run.cls, following.cls):
                return False
            if not _classes_disjoint(run.cls, following.cls):
                raise _NotAShape("a run could give characters back to the run after it")
            if following.least:
                return False
            first = False
            continue
        if kind is _Not or following is START:
            raise _NotAShape("a run followed by a negative lookahead")
        firsts = following[0] if kind is str else "".join(lit[0] for lit in following.literals)
        if any(run.rx.match(char).end() > 0 for char in firsts):
            if may_give_back and first and kind is str and following is rest[0]:
                return True
            raise _NotAShape("a run could give characters back")
        return False
    for sequence in ahead or ():
        _check_follow(run, sequence, None, False)
    return False


def _class_parts(cls: str) -> tuple[bool, list]:
    """A class as ``(negated, members)``: members are characters, ``(low, high)`` ranges, and the escapes ``"\\s"``,
    ``"\\w"``, ``"\\d"``."""
    if cls.startswith("\\"):
        return False, [cls]
    i = 1
    negated = cls.startswith("^", i)
    i += negated
    members: list = []
    while i < len(cls) - 1:
        if cls[i] == "\\":
            escaped = cls[i + 1]
            members.append(cls[i:i + 2] if escaped in _CLASS_ESCAPES else _LITERAL_ESCAPES.get(escaped, escaped))
            i += 2
        else:
            members.append(cls[i])
            i += 1
        if cls.startswith("-", i) and i + 1 < len(cls) - 1 and type(members[-1]) is str and len(members[-1]) == 1:
            high = cls[i + 1]
            if high == "\\":
                escaped = cls[i + 2]
                if escaped in _CLASS_ESCAPES:
                    raise _NotAShape("a range to a class")
                high, i = _LITERAL_ESCAPES.get(escaped, escaped), i + 3
            else:
                i += 2
            members[-1] = (members[-1], high)
    return negated, members


_DISJOINT_ESCAPES = ({"\\s", "\\w"}, {"\\s", "\\d"})
# Ranges longer than this are not enumerated (a class relation that needs it is taken as unknown: no shape).
_RANGE_LIMIT = 4096


def _excludes(cls: str, member) -> bool:
    """Whether the class ``cls`` accepts none of the characters of one member of another class (`_class_parts`)."""
    rx = compile_pattern(cls, _PLAIN_FLAGS)
    if type(member) is tuple:
        low, high = ord(member[0]), ord(member[1])
        if high - low > _RANGE_LIMIT:
            return False
        return not any(rx.match(chr(c)) for c in range(low, high + 1))
    if len(member) == 1:
        return rx.match(member) is None
    negated, members = _class_parts(cls)
    if negated:  # [^...] excludes all of \s, \w, \d only if it lists it (\d: or \w, its superset)
        return member in members or member == "\\d" and "\\w" in members
    # a positive class excludes an escape's characters if none of its own members is one of them
    escape = compile_pattern(member, _PLAIN_FLAGS)
    for own in members:
        if type(own) is tuple:
            low, high = ord(own[0]), ord(own[1])
            if high - low > _RANGE_LIMIT or any(escape.match(chr(c)) for c in range(low, high + 1)):
                return False
        elif len(own) != 1:  # an escape: \\s shares no character with \\w or \\d (checked over every code point
            if {own, member} not in _DISJOINT_ESCAPES:  # with `regex`'s own set operations)
                return False
        elif escape.match(own):
            return False
    return True


def _classes_disjoint(a: str, b: str) -> bool:
    """Whether no character is in both classes (False when that cannot be shown this simply)."""
    negated_b, members_b = _class_parts(b)
    if not negated_b:
        return all(_excludes(a, m) for m in members_b)
    negated_a, members_a = _class_parts(a)
    if not negated_a:
        return all(_excludes(b, m) for m in members_a)
    return False


def _class_within(a: str, b: str) -> bool:
    """Whether every character class ``a`` accepts, ``b`` accepts (False when that cannot be shown this simply)."""
    negated_b, members_b = _class_parts(b)
    if negated_b:  # a within [^X]: a accepts nothing of X
        return all(_excludes(a, m) for m in members_b)
    negated_a, members_a = _class_parts(a)
    if negated_a:
        return False
    rx = compile_pattern(b, _PLAIN_FLAGS)
    for m in members_a:
        if type(m) is tuple:
            low, high = ord(m[0]), ord(m[1])
            if high - low > _RANGE_LIMIT or not all(rx.match(chr(c)) for c in range(low, high + 1)):
                return False
        elif len(m) == 1:
            if rx.match(m) is None:
                return False
        elif not (m in members_b or m == "\\d" and "\\w" in members_b):
            return False
    return True


# ----------------------------------------------------------------------------------------------- compiled shapes
# A shape is written out only up to this many items in all (the library's longest has 35): code generation costs
# time and memory in the size of the shape, and a hostile template could make it the parse's cost. A shape keeps at
# most MAX_RESUMES resume functions (each the size of the rest of the shape); past that, pauses resume by the walk.
MAX_COMPILED_ITEMS = 48
MAX_RESUMES = 16
# The shapes of one template share a budget too (`CodeBudget`): under the per-shape caps, a template of a few hundred
# fields could still write out thousands of functions. The library's templates write out at most 108 items at compile
# and 392 in resume functions (gpt_oss, every transcript in chunks of 1-7 characters).
MAX_TEMPLATE_COMPILED_ITEMS = 256
MAX_TEMPLATE_RESUME_ITEMS = 1024


class CodeBudget:
    """Items the shapes of one template may still write out as Python: when the template is compiled
    (``compile_left``) and in resume functions made while it parses (``resume_left``, for the template's life: a
    template reused by many parses keeps what its first parses made). Past it, shapes walk generically: same answers."""

    __slots__ = ("compile_left", "resume_left")

    def __init__(self) -> None:
        self.compile_left = MAX_TEMPLATE_COMPILED_ITEMS
        self.resume_left = MAX_TEMPLATE_RESUME_ITEMS


# The budget of the template being compiled (`template_code_budget`); None: `shape_of` called on its own.
_TEMPLATE_BUDGET: ContextVar[CodeBudget | None] = ContextVar("shape_code_budget", default=None)


@contextmanager
def template_code_budget() -> Iterator[CodeBudget]:
    """Scope of one template's compile: the shapes `shape_of` makes inside it share one new `CodeBudget`."""
    token = _TEMPLATE_BUDGET.set(CodeBudget())
    try:
        yield _TEMPLATE_BUDGET.get()
    finally:
        _TEMPLATE_BUDGET.reset(token)

# `Shape.decide` walks the items of each branch generically (a type test per item). For the shapes of the library
# (literals, choices, runs that give nothing back, a negative lookahead, a lookahead) `_compiled_decide` writes the
# same walk out as straight-line Python, one function per shape: same answers, same pauses, same captures, about a
# third of the interpreter's work. Shapes with group marks or runs that give characters back keep the generic walk.


class _Writer:
    """Lines of a generated function, the constants they name, and the next free name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict = {}

    def const(self, value) -> str:
        name = f"c{len(self.names)}"
        self.names[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


_CAPS = "(dict(captures) if captures else (None if captures is None else NOCAP))"


def _compiled_decide(shape: "Shape", first: int = 0, item: int = 0, resuming: bool = False):
    """A function ``(buf, at, eos, captures)`` giving `Shape.walk`'s answer with no pause given. ``resuming``:
    ``(buf, at, eos, captures, pos, caps, marks)``, the answer of `Shape.walk` given a pause of branch ``first`` at
    its item ``item``, starting ``pos`` characters from ``at`` with the captures ``caps`` and group ``marks`` (offsets
    from ``at``) made before it."""
    w = _Writer()
    w.names.update(NOCAP=_NO_CAPTURES, cut_off=cut_off, give_back=_give_back, MATCH=MATCH, FAIL=FAIL,
                   UNDECIDED=UNDECIDED)
    named = shape.named
    if resuming:
        w.emit(0, "def decide(buf, at, eos, captures, pos, caps, marks):")
        w.emit(1, "end = len(buf)")
        if named:
            w.emit(1, "if captures is not None and caps:")
            w.emit(2, "captures.update(caps)")
    else:
        w.emit(0, "def decide(buf, at, eos, captures=None):")
        w.emit(1, "end = len(buf)")
    if shape.heads is not None and not resuming:
        w.emit(1, f"if not buf.startswith({w.const(shape.heads)}, at) and (eos or end - at >= {shape.head_width}"
                  f" or at < end and buf[at] not in {w.const(shape.head_firsts)}):")
        w.emit(2, "return FAIL, -1")
    for index, (items, ahead) in enumerate(shape.branches):
        if index < first:
            continue
        w.emit(1, "while True:  # branch %d: break = it fails (every way through it ends in a return or a break)" % index)
        if named and index > first:
            w.emit(2, "if captures:")
            w.emit(3, "captures.clear()")
        w.emit(2, "i = at + pos" if resuming and index == first else "i = at")
        opened: dict = {}  # group name -> the local holding where it opened
        for k, part in enumerate(items):
            if type(part) is _Mark and part.opening:
                opened[part.name] = f"m{len(opened)}"
                if index == first and k < item:  # opened before the pause: where, from the pause
                    w.emit(2, f"{opened[part.name]} = at + marks[{part.name!r}]")
            if index == first and k < item:
                continue
            if type(part) is _Mark:
                if part.opening:
                    w.emit(2, f"{opened[part.name]} = i")
                else:
                    w.emit(2, "if captures is not None:")
                    w.emit(3, f"captures[{part.name!r}] = buf[{opened[part.name]}:i]")
                continue
            relative = "{" + ", ".join(f"{n!r}: {v} - at" for n, v in opened.items()) + "}" if opened else "None"
            absolute = "{" + ", ".join(f"{n!r}: {v}" for n, v in opened.items()) + "}" if opened else "None"
            _write_item(w, part, 2, True, index, k, named, marks=(relative, absolute))
            if type(part) is _Run and part.back is not None:
                break  # the items after it are walked by `_give_back`
        if ahead is not None and len(ahead) == 1:
            # One lookahead sequence, walked in the branch's own loop: a failure breaks out of the branch, a wait
            # returns its pause at once (no count of waiting sequences to keep).
            w.emit(2, "j0 = i")
            for part in ahead[0]:
                _write_item(w, part, 2, False, index, len(items), named, var="j0", direct=True)
        elif ahead is not None:
            w.emit(2, "pending = 0")
            w.emit(2, "edge = None")
            w.emit(2, "ok = False")
            for sequence in ahead:
                w.emit(2, "if not ok:")
                w.emit(3, "for _ in (0,):  # a lookahead sequence: break = it fails or waits")
                w.emit(4, "j0 = i")
                for part in sequence:
                    _write_item(w, part, 4, False, index, -1, named, var="j0")
                w.emit(4, "ok = True")
            w.emit(2, "if not ok:")
            w.emit(3, "if pending:")
            w.emit(4, "if pending == 1 and edge is not None:  # one sequence waits, for a literal cut off")
            w.emit(5, f"cause = ({index}, {len(items)}, i - at, {_CAPS}, None, edge[0], None, edge[1] - at)")
            w.emit(4, "else:")
            w.emit(5, f"cause = ({index}, {len(items)}, i - at, {_CAPS}, None, None, None, i - at)")
            if named:
                w.emit(4, "if captures:")
                w.emit(5, "captures.clear()")
            w.emit(4, "return UNDECIDED, cause")
            w.emit(3, "break")
        if shape.order is not None:  # a named group of several items: captures in the pattern's order
            w.emit(2, "if captures:")
            w.emit(3, f"ordered = {{name: captures[name] for name in {w.const(shape.order)} if name in captures}}")
            w.emit(3, "captures.clear()")
            w.emit(3, "captures.update(ordered)")
        w.emit(2, "return MATCH, i")
    if named:
        w.emit(1, "if captures:")
        w.emit(2, "captures.clear()")
    w.emit(1, "return FAIL, -1")
    namespace = dict(w.names)
    exec(compile("\n".join(w.lines), f"<shape {id(shape):x}>", "exec"), namespace)
    return namespace["decide"]


def _write_item(w: _Writer, item, depth: int, consuming: bool, index: int, k: int, named: bool,
                var: str = "i", marks: tuple = ("None", "None"), direct: bool = False) -> None:
    """Lines walking one item at ``var`` (`_walk`'s rules): on a failure ``break``; in consumed text an undecided
    item returns its pause; in a lookahead it sets ``pending`` and breaks, or with ``direct`` (the branch's only
    lookahead sequence, after its ``k`` consumed items, which end at ``i``) returns the branch's pause.
    ``marks``: expressions of the group marks opened so far, as a pause keeps them and as `_give_back` takes
    them."""
    def undecided(literals: str | None, run: str | None) -> None:
        if consuming or direct:
            if consuming:
                w.emit(depth + 1, f"cause = ({index}, {k}, {var} - at, {_CAPS}, {marks[0]}, {literals}, {run}, "
                                  f"{var} - at)")
            else:  # (`Shape._waiting`'s pause: where the consumed items end, and the literal cut off, if one is)
                w.emit(depth + 1, f"cause = ({index}, {k}, i - at, {_CAPS}, None, {literals}, None, "
                                  f"{var if literals is not None else 'i'} - at)")
            if named:
                w.emit(depth + 1, "if captures:")
                w.emit(depth + 2, "captures.clear()")
            w.emit(depth + 1, "return UNDECIDED, cause")
        else:
            w.emit(depth + 1, "pending += 1")
            w.emit(depth + 1, f"edge = ({literals}, {var})" if literals is not None else "edge = None")
            w.emit(depth + 1, "break")

    kind = type(item)
    if item is START:
        w.emit(depth, f"if {var}:")
        w.emit(depth + 1, "break")
    elif kind is str:
        lit = w.const(item)
        w.emit(depth, f"if buf.startswith({lit}, {var}):")
        w.emit(depth + 1, f"{var} += {len(item)}")
        w.emit(depth, f"elif not eos and end - {var} < {len(item)} and {lit}.startswith(buf[{var}:]):")
        undecided(w.const((item,)), "None")
        w.emit(depth, "else:")
        w.emit(depth + 1, "break")
    elif kind is _Run:
        rx = w.const(item.rx.match)
        w.emit(depth, f"j = {rx}(buf, {var}).end()")
        if consuming:
            w.emit(depth, "if j == end and not eos:")
            undecided("None", w.const(item))
        elif item.least:
            w.emit(depth, f"if j == end and not eos and j - {var} < {item.least}:")
            undecided(None, None)
        if item.least:
            w.emit(depth, f"if j - {var} < {item.least}:")
            w.emit(depth + 1, "break")
        if item.back is not None:  # `_walk`: the rest of the sequence as the engine gives characters back
            w.emit(depth, f"status, found = give_back({w.const(item)}, buf, {var}, j, eos, True, captures, {marks[1]})")
            w.emit(depth, "if status == FAIL:")
            w.emit(depth + 1, "break")
            w.emit(depth, "if status == UNDECIDED:")
            w.emit(depth + 1, "if found is not None:  # inside the items after the run: not resumable")
            w.emit(depth + 2, f"found = ({index}, -1, found[2] - at, *found[3:7], found[7] - at)")
            if named:
                w.emit(depth + 1, "if captures:")
                w.emit(depth + 2, "captures.clear()")
            w.emit(depth + 1, "return UNDECIDED, found")
            w.emit(depth, f"{var} = found")
            return
        if consuming and item.name is not None:
            w.emit(depth, "if captures is not None:")
            w.emit(depth + 1, f"captures[{item.name!r}] = buf[{var}:j]")
        w.emit(depth, f"{var} = j")
    elif kind is _Choice:
        keyword = "if"
        for literal in item.literals:
            w.emit(depth, f"{keyword} buf.startswith({w.const(literal)}, {var}):")
            w.emit(depth + 1, f"{var} += {len(literal)}")
            keyword = "elif"
        lits = w.const(item.literals)
        w.emit(depth, f"elif not eos and end - {var} < {item.longest} and cut_off({lits}, buf, {var}):")
        undecided(lits, "None")
        w.emit(depth, "else:")
        w.emit(depth + 1, "break")
    else:  # _Not
        lits = w.const(item.literals)
        w.emit(depth, f"if buf.startswith({lits}, {var}):")
        w.emit(depth + 1, "break")
        w.emit(depth, f"if not eos and end - {var} < {item.longest} and cut_off({lits}, buf, {var}):")
        if consuming:  # `_walk` gives UNDECIDED with no pause here
            if named:
                w.emit(depth + 1, "if captures:")
                w.emit(depth + 2, "captures.clear()")
            w.emit(depth + 1, "return UNDECIDED, None")
        elif direct:
            undecided(None, None)
        else:
            w.emit(depth + 1, "pending += 1")
            w.emit(depth + 1, "edge = None")
            w.emit(depth + 1, "break")
