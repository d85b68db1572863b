"""Lookbehind bodies of a few plain forms, read with string operations instead of ``regex``.

A split delimiter (`parsing.prefilter.split_leading_lookbehinds`) evaluates each of its leading lookbehinds once
per candidate position. ``regex`` runs a lookbehind backwards from the position, a few microseconds for the shortest
(``(?<=</arg_value>\\s*|<tool_call>[^\\s<]+\\s*)``) and tens of microseconds for one that re-reads the call since
its open (hermes' ``(?<=^\\s*(?:[^"\\\\<]|"(?:[^"\\\\]|\\\\.)*")*)``). `lookbehind_reader` recognises, from the
pattern text, bodies every alternative of which is one of these forms (groups of alternatives written out as
alternatives, as `parsing.shapes` does), and anything else keeps the ``regex`` path:

* a sequence of ``^`` (first only), literal text and greedy runs ``C*`` / ``C+`` of one character class (the items
  of `parsing.shapes`), matched backwards from the position: a run takes the longest run of its class ending
  there; what stands before it must then end where that run starts (a literal one of whose characters the class
  refuses: the last such character stands right before the run; ``^``; a run of a disjoint class; or nothing),
  so there is one way to split the text and the reading is that one way. A literal made only of the class's
  characters is allowed first in the alternative: it may then end anywhere in the run (one ``str.find``).
* a head then a balanced-quote tail ``(?:[^SET]|"(?:[^"\\\\]|\\\\.)*")*`` (`parsing.template.balanced_quotes`'s
  tail): the lookbehind holds where a reading of the tail started at an end of the head stands outside strings.
  The head is ``^``, or ``^`` then literals and runs each followed by a literal whose first character the run
  refuses (one end at most), or one literal (an end after each of its occurrences), each with runs ``C*`` after it whose
  classes the tail takes outside strings (a reading started at their start goes through them as a reading started
  anywhere in them would: they add nothing). The readings are `parsing.scanner`'s balanced-quote automaton
  (`parsing.scanner._balanced_holds`, `parsing.scanner._quote_states`), reading on from where the last candidate
  of the same region stopped.

Both answer what ``regex`` answers on ``buf[lo:]`` (the text a scan runs the lookbehind on): ``^`` is ``lo``; no
character before ``lo`` is read. Runs are matched by ``regex`` compiled with the template's flags (its ``\\s`` is not
`str.isspace`), backwards (``(?r)``).
"""

from __future__ import annotations

import re

import regex

from .regex_cost import compile_pattern

from .shapes import (_TEMPLATE_BUDGET, MAX_COMPILED_ITEMS, START, _Choice, _class_within, _classes_disjoint,
                     _expanded, _NotAShape, _Run, _sequence, _Writer, join_literals)

# At most this many alternatives once choices are written out (a body with more keeps the regex).
MAX_ALTERNATIVES = 16

# A balanced-quote tail at the end of an alternative (the form `parsing.template.balanced_quotes` reads).
_TAIL = re.compile(r'\(\?:\[\^(?P<set>(?:\\.|[^\]\\])+)\]' + re.escape(r'|"(?:[^"\\]|\\.)*")*') + r"\Z")
_FLAGS = regex.DOTALL


class _Back:
    """One alternative without a tail, matched backwards: ``steps`` from the right, each ``(kind, value, arg)``:
    ``("lit", text, None)``; ``("start", None, None)``; ``("run", reverse matcher, (least, before))`` where
    ``before`` says what must end where the run starts: ``("at", offset)`` (the item before ends ``offset``
    characters into the run: a literal whose last refused character stands right before it), ``("find", text)``
    (a literal made of the class's characters, first in the alternative, ending anywhere in the run), ``("start",)``
    or ``("none",)`` (nothing before the run)."""

    __slots__ = ("steps",)

    def __init__(self, steps: tuple) -> None:
        self.steps = steps

    def holds(self, buf: str, lo: int, at: int) -> bool:
        q = at
        for kind, value, arg in self.steps:
            if kind == "lit":
                if not buf.endswith(value, lo, q):
                    return False
                q -= len(value)
            elif kind == "start":
                return q == lo
            else:
                least, before = arg
                j = value(buf, lo, q).start()
                how = before[0]
                if how == "none":
                    return q - j >= least
                if how == "start":
                    return j == lo and q - j >= least
                if how == "find":
                    literal = before[1]
                    stop = q - least  # (never a negative end: str.find would count it from the end)
                    return stop - lo >= len(literal) and buf.find(literal, max(lo, j - len(literal)), stop) != -1
                k = j + before[1]
                if k > q - least:
                    return False
                q = k
        return True


class LookbehindReader:
    """The reading of one lookbehind body (see the module docstring).

    Attributes:
        backward: the alternatives without a tail (`_Back`), matched backwards from the position.
        literals: heads of the tail alternatives that are literals (each occurrence's end starts a reading).
        anchored: heads of the tail alternatives that start with ``^`` (`_forward_end` gives their one end).
        outside, inside: the tail's runs ``[^SET]*`` and ``[^"\\\\]*`` (stdlib), as
            `parsing.template.balanced_quotes` makes them.
        backward_only: no tail alternative: a reading looks back from the position over the literals and runs that
            end there only (nothing read from a region's start): about as cheap as deciding the alternatives the
            lookbehind guards (`parsing.scanner._variant` then reads it without deciding them first).
        read: ``read(buf, lo, at)``, whether one of ``backward`` holds at ``at`` in ``buf[lo:]``: their steps written
            out as one Python function (`_written_reader`; None: past the template's code budget, `_Back.holds`
            reads them).
    """

    __slots__ = ("backward", "literals", "anchored", "outside", "inside", "backward_only", "read")

    def __init__(self, backward: tuple, literals: tuple, anchored: tuple, outside, inside) -> None:
        self.backward = backward
        self.literals = literals
        self.anchored = anchored
        self.outside = outside
        self.inside = inside
        self.backward_only = not literals and not anchored
        self.read = _written_reader(backward) if backward else None

    def holds(self, buf: str, lo: int, at: int, base: int, memo: dict, key: object) -> bool:
        """Whether the lookbehind holds at ``at`` when ``regex`` runs it on ``buf[lo:]`` (``lo <= at <=
        len(buf)``). ``memo`` (a `parsing.scanner.ScanState`'s ``quotes``) keeps, under keys made from ``key``,
        where the tail's readings stand (stream offsets; ``base`` is that of ``buf[0]``), so the candidates of one
        region read each character a bounded number of times."""
        read = self.read
        if read is not None:
            if read(buf, lo, at):
                return True
        else:
            for alternative in self.backward:
                if alternative.holds(buf, lo, at):
                    return True
        if not self.literals and not self.anchored:
            return False
        from . import scanner  # (scanner imports the template module, which imports this one)

        for n, literal in enumerate(self.literals):
            if scanner._balanced_holds((literal, None, self.outside, self.inside), buf, lo, at, base, memo,
                                       (key, n)):
                return True
        for n, items in enumerate(self.anchored):
            slot = (key, "^", n)
            entry = memo.get(slot)
            if entry is None or entry[0] != lo + base:
                end = _forward_end(items, buf, lo)
                if end is None:
                    continue  # not settled yet: the head reaches the buffer edge
                entry = memo[slot] = [lo + base, end + base if end >= 0 else -1, None, 0]
            if entry[1] < 0 or entry[1] > at + base:
                continue  # the head never matches here, or ends after the position
            if entry[2] is not None and entry[2] <= at + base:
                start, states = entry[2] - base, entry[3]
            else:
                start, states = entry[1] - base, scanner._OUT
            states = scanner._quote_states(states, buf, start, at, self.outside, self.inside)
            entry[2], entry[3] = at + base, states
            if states & scanner._OUT:
                return True
        return False


def _written_reader(backward: tuple):
    """``read(buf, lo, at)``: whether one of the alternatives ``backward`` (`_Back`) holds at ``at`` in ``buf[lo:]``,
    as `_Back.holds` reads each, written out as one function (no call and no step dispatch per alternative); the
    template's items code budget (`parsing.shapes.CodeBudget`) pays for its steps as for a shape's. None past it."""
    size = sum(len(alternative.steps) for alternative in backward)
    budget = _TEMPLATE_BUDGET.get()
    if size > MAX_COMPILED_ITEMS or budget is not None and budget.compile_left < size:
        return None
    if budget is not None:
        budget.compile_left -= size
    w = _Writer()
    w.emit(0, "def read(buf, lo, at):")
    for alternative in backward:
        w.emit(1, "while True:  # an alternative: break = it does not hold")
        w.emit(2, "q = at")
        for kind, value, arg in alternative.steps:
            if kind == "lit":
                w.emit(2, f"if not buf.endswith({w.const(value)}, lo, q):")
                w.emit(3, "break")
                w.emit(2, f"q -= {len(value)}")
            elif kind == "start":
                w.emit(2, "if q == lo:")
                w.emit(3, "return True")
                w.emit(2, "break")
            else:
                least, before = arg
                w.emit(2, f"j = {w.const(value)}(buf, lo, q).start()")
                how = before[0]
                if how == "none":
                    w.emit(2, f"if q - j >= {least}:")
                    w.emit(3, "return True")
                    w.emit(2, "break")
                elif how == "start":
                    w.emit(2, f"if j == lo and q - j >= {least}:")
                    w.emit(3, "return True")
                    w.emit(2, "break")
                elif how == "find":
                    literal = before[1]
                    w.emit(2, f"stop = q - {least}  # (never a negative end: str.find would count it from the end)")
                    w.emit(2, f"if stop - lo >= {len(literal)} and buf.find({w.const(literal)}, "
                              f"max(lo, j - {len(literal)}), stop) != -1:")
                    w.emit(3, "return True")
                    w.emit(2, "break")
                else:
                    w.emit(2, f"if j + {before[1]} > q - {least}:")
                    w.emit(3, "break")
                    w.emit(2, f"q = j + {before[1]}")
        w.emit(2, "return True")
    w.emit(1, "return False")
    namespace = {**w.names, "__builtins__": {"max": max}}
    exec(compile("\n".join(w.lines), "<lookbehind>", "exec"), namespace)  # noqa: S102 - constants are names
    return namespace["read"]


def _forward_end(items: tuple, buf: str, lo: int) -> int | None:
    """Where a ``^``-head (``items`` after the ``^``: literals, and runs each followed by a literal whose first
    character the run refuses) ends when matched from ``lo``: -1 when it cannot match there whatever follows,
    None when the buffer edge leaves that open."""
    i = lo
    end = len(buf)
    for item in items:
        if type(item) is str:
            if buf.startswith(item, i):
                i += len(item)
            elif end - i < len(item) and item.startswith(buf[i:]):
                return None
            else:
                return -1
        else:
            j = item.rx.match(buf, i).end()
            if j == end:
                return None
            if j - i < item.least:
                return -1
            i = j
    return i


def lookbehind_reader(behind: str) -> LookbehindReader | None:
    """The reading of a lookbehind body of the forms of the module docstring (compiled by `parsing.template` with
    ``regex``, DOTALL and no other flag), or None for any other body: the scanner then runs it with ``regex``."""
    try:
        return _reader(behind)
    except (_NotAShape, regex.error, IndexError, ValueError, RecursionError):
        return None


def _reader(behind: str) -> LookbehindReader | None:
    if "(?" in behind.replace("(?:", "") or "(" in behind.replace("(?", "") or "\0" in behind:
        return None  # lookarounds, named or capturing groups, inline flags: not read here
    tails: set = set()
    backward, literals, anchored = [], [], []
    pieces = []
    for alternative in _expanded_top(behind):
        tail = _TAIL.search(alternative)
        head = alternative[:tail.start()] if tail else alternative
        for items in _written_out(_sequence(head, _FLAGS, True) if head else ()):
            pieces.append((items, tail.group("set") if tail else None))
    if not pieces or len(pieces) > MAX_ALTERNATIVES:
        return None
    outside = inside = None
    for items, tail_set in pieces:
        if tail_set is None:
            backward.append(_backward(items))
            continue
        tails.add(tail_set)
        if len(tails) > 1:
            return None
        if outside is None:
            from .template import balanced_quotes  # (the template module imports this one)

            quick = balanced_quotes('a(?:[^' + tail_set + r']|"(?:[^"\\]|\\.)*")*')
            if quick is None:
                return None
            outside, inside = quick[2], quick[3]
        items = list(items)
        while items and type(items[-1]) is _Run and not items[-1].least \
                and _class_within(items[-1].cls, "[^" + tail_set + "]"):
            items.pop()  # (may be empty, taken by the tail outside strings: a reading from its start covers it)
        if items and items[0] is START:
            _check_forward(items[1:])
            anchored.append(tuple(items[1:]))
        elif len(items) == 1 and type(items[0]) is str:
            literals.append(items[0])
        else:
            return None
    return LookbehindReader(tuple(backward), tuple(dict.fromkeys(literals)), tuple(anchored), outside, inside)


def _expanded_top(behind: str) -> list[str]:
    """The body's alternatives with groups written out (`parsing.shapes._expanded`), a tail kept whole: the tail
    is a quantified group, which writing out does not take."""
    tail = _tail_text(behind)
    if not tail:
        return _expanded(behind)
    return [alternative.replace("\0", tail) for alternative in _expanded(behind.replace(tail, "\0"))]


def _tail_text(behind: str) -> str:
    """The balanced-quote tail text of the body, if it has one (every alternative with one ends with the same)."""
    start = behind.find('(?:[^')
    while start != -1:
        end = behind.find(r'|"(?:[^"\\]|\\.)*")*', start)
        if end == -1:
            return ""
        text = behind[start:end + len(r'|"(?:[^"\\]|\\.)*")*')]
        if _TAIL.fullmatch(text):
            return text
        start = behind.find('(?:[^', start + 1)
    return ""


def _written_out(items: tuple) -> list[tuple]:
    """The sequence with every choice of literals written out as alternatives (in order)."""
    out: list[tuple] = [()]
    for item in items:
        if type(item) is _Choice:
            out = [done + (literal,) for done in out for literal in item.literals]
        elif type(item) is str or item is START or type(item) is _Run and item.name is None and not item.single:
            out = [done + (item,) for done in out]
        else:
            raise _NotAShape("an item not read backwards")
        if len(out) > MAX_ALTERNATIVES:
            raise _NotAShape("too many alternatives")
    return [join_literals(sequence) for sequence in out]


def _accepts(run: _Run, char: str) -> bool:
    return run.rx.match(char).end() > 0


def _backward(items: tuple) -> _Back:
    """The backward steps of an alternative without a tail (`_Back`); `_NotAShape` where the text could be split
    more than one way."""
    if not items:
        raise _NotAShape("an empty alternative")  # (always holds: the pattern keeps its regex)
    steps = []
    for k in range(len(items) - 1, -1, -1):
        item = items[k]
        if item is START:
            if k:
                raise _NotAShape("^ after the start")
            steps.append(("start", None, None))
        elif type(item) is str:
            steps.append(("lit", item, None))
        else:
            matcher = compile_pattern(f"(?r)(?:{item.cls})*", _FLAGS).match
            left = items[k - 1] if k else None
            if left is None:
                before = ("none",)
            elif left is START:
                before = ("start",)
            elif type(left) is str:
                refused = [i for i, char in enumerate(left) if not _accepts(item, char)]
                if refused:
                    before = ("at", len(left) - 1 - refused[-1])
                elif k == 1:
                    before = ("find", left)
                else:
                    raise _NotAShape("a literal the run could take, not first")
            else:
                if not _classes_disjoint(item.cls, left.cls):
                    raise _NotAShape("two runs that could share characters")
                before = ("at", 0)
            steps.append(("run", matcher, (item.least, before)))
            if before[0] in ("none", "start", "find"):
                break  # the steps end here (what is before is read by this one)
    return _Back(tuple(steps))


def _check_forward(items: list) -> None:
    """`_NotAShape` unless a ``^``-head after its ``^`` has one way to match: literals, and runs each followed by
    a literal whose first character the run refuses."""
    for k, item in enumerate(items):
        if item is START:
            raise _NotAShape("^ after the start")
        if type(item) is _Run:
            following = items[k + 1] if k + 1 < len(items) else None
            if type(following) is not str or _accepts(item, following[0]):
                raise _NotAShape("a run with more than one end")


__all__ = ["LookbehindReader", "MAX_ALTERNATIVES", "lookbehind_reader"]
