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

Speed (`parsing.prefilter`): no regex runs before it could match. A delimiter with a prefilter is looked at
only from its first candidate position (a literal it must start with, or a proper prefix of one at the buffer
edge); a candidate cut off by the edge is held as it is, without running the regex, until the text decides
it; a regex runs from its candidate (a search from there returns what a search from the scan position
returns). A `WatchSet` unites the prefilters of one state, so a scan with no candidate at all costs one
search of a compiled stdlib pattern. Holding a cut-off candidate the regex would already reject only delays
text, never changes where it goes.

Time (`parsing.budget.SearchClock`): the regex calls looking for the next match of a delimiter share one
budget until a delimiter commits, however the text was cut into chunks. The streaming-only calls (checks a
one-shot search never makes, searches of text cut short) have a probe budget of their own; a delimiter that runs
out of it is held until a commit or the end of the stream (`ScanState.given_up`), never failed for it.

Positions are indexes into the buffer string handed in.
"""

from __future__ import annotations

import re
from collections import _tuplegetter  # namedtuple's field reader (C)
from dataclasses import dataclass, field
from typing import Iterable

from .behind import LookbehindReader
from .budget import NO_LIMITS, ParseContext, ProbeGaveUp, SearchClock, as_context
from .decided import alternative_patterns
from .prefilter import Prefilter, make_prefilter
from .shapes import (FAIL, MATCH, PAUSE_BRANCH, PAUSE_CAPTURES, PAUSE_EDGE, PAUSE_ITEM, PAUSE_LITERALS, PAUSE_MARKS,
                     PAUSE_POS, PAUSE_RUN, UNDECIDED, Shape, cut_off)
from .template import CompiledTemplate, Delimiter

OPEN_FIRST = {"open": 0, "close": 1}
# A partial regex match is left alone (held, its regex not run again) while none of the pattern's suffix literals
# has arrived. Its regex runs again (one anchored partial match) once the buffer has grown by RECHECK_CHARS since
# it last ran, or, past WAIT_CHARS from its start, by a RECHECK_SHARE of the held text: a candidate the text has
# ruled out stops holding within about that many characters, and the rechecks of a long partial match (a
# 12,000-character gpt-oss call header) cost time linear in its length, not quadratic (each reads the held text).
WAIT_CHARS = 256
RECHECK_CHARS = 16
RECHECK_SHARE = 4  # past WAIT_CHARS: rechecked when the held text has grown by a quarter
# The cause of a deferral (`ScanState.deferred`) held from a partial match the regex reported (or from where the
# edge pattern reaches the buffer edge, `_edge_pending`): past WAIT_CHARS of held text, its regex runs again only
# once the held text has grown by a RECHECK_SHARE (or a suffix literal of the pattern has arrived), so a match
# attempt that stays partial for a long text costs time linear in its length, not quadratic. Holding without
# running it is what a scan of the same text, fed in fewer chunks, would do (nothing commits at or after a hold,
# and the text before it is gone): the answer is the same, only its text may be released later.
HELD_PARTIAL = "partial"


class ScanState(SearchClock):
    """What one parse's scans remember between feeds, until a delimiter commits (`ResponseParser._process` then
    empties every field below but ``checked``, ``searched`` and ``candidates``, inline: a call cost 0.5% of a
    transcript's instructions; a field added here is cleared there too): the regex time of each
    search (`SearchClock`); per delimiter, a complete match held at its candidate because its lookahead may read
    past the buffer edge (a stable pattern: the match stays, so the hold stays, and the regex need not run again
    before the buffer reaches what the lookahead may read, or the end of the stream when its reach is unbounded);
    the lookbehind answers of split delimiters per position. Offsets are absolute: buffer index plus the
    ``base`` the scan was given."""

    __slots__ = ("waiting", "deferred", "checked", "searched", "lookbehinds", "dead_at_start", "decided", "quotes",
                 "given_up", "candidates")

    def __init__(self) -> None:
        # `SearchClock.__init__`, inlined: a parse makes one of these at its first scan (most parses do)
        self.spent = {}
        self.slow = set()
        self.probes = {}
        # delimiter id -> (stream offset of a complete match held there, stream offset the buffer must reach
        # before it can be decided, or None: the end of the stream)
        self.waiting: dict[int, tuple[int, int | None]] = {}
        # (delimiter id, lookbehind index, stream offset) -> whether a split delimiter's lookbehind holds there (it
        # never changes).
        self.lookbehinds: dict[tuple[int, int, int], bool] = {}
        # (position, delimiter, shape, cause) when the last scan held from a regex delimiter it did not run (a
        # suffix still missing, or a match waiting for the end of the stream; shape and cause None), or from a
        # `parsing.shapes` delimiter whose shape was undecided there (the shape it runs there, and the pause
        # `Shape.decide` gave, if any: why, the run that reached the buffer edge or the literal it cuts off, and where
        # the walk stopped): `still_deferred` re-checks just that, and decides again from where the walk stopped.
        self.deferred: tuple[int, Delimiter, Shape | None, object] | None = None
        # The stream offset the buffer ended at when the deferred delimiter's regex last ran, or up to which the
        # deferred shape's edge run is known to reach (`still_deferred`).
        self.checked = 0
        # The stream offset up to which the held text was looked through for the deferred pattern's suffix literals
        # since then (`_suffix_arrived`): each feed looks at the new text only.
        self.searched = 0
        # Ids of `WatchSet.start_dies` delimiters seen to fail at index 0 of the buffer, even as a partial match:
        # no more text can make them match there, and they match nowhere else but at their literals.
        self.dead_at_start: set[int] = set()
        # (buffer index, buffer length, base, shape, status, end, captures, delimiter): the decision `still_deferred`
        # reached when the deferred shape turned out decided (MATCH or FAIL), for `shape_step` to take instead of
        # deciding the same shape on the same text again.
        self.decided: tuple | None = None
        # (delimiter id, lookbehind index) -> [stream offset of the window, stream offset read up to, states] of a
        # balanced-quote lookbehind (`_balanced_holds`): where the text since the window has been read to, and the
        # states its readings from each end of the literal are in there.
        self.quotes: dict = {}
        # delimiter id -> stream offset it holds from until a delimiter commits or the stream ends: a streaming-only
        # call of it ran out of the probe budget (`SearchClock.probe`); it is not searched again before then.
        self.given_up: dict[int, int] = {}
        # id of a prefilter -> (stream offset searched from, its first candidate there, or -1, stream offset the
        # buffer ended at): `_next_candidate`. Kept across commits: the text at an offset never changes.
        self.candidates: dict[int, tuple[int, int, int]] = {}

    def still_deferred(self, buf: str, at: int, base: int = 0, ctx: ParseContext = NO_LIMITS) -> bool:
        """Whether a scan of ``buf`` (stream offset ``base`` at index 0; unconsumed text from ``at``, no candidate
        before it) would hold from ``at`` again for the reason the last one did: then it holds from there,
        whatever the other delimiters do. A match waiting for its suffix is asked again whether it can still
        start at ``at`` every `RECHECK_CHARS` characters (under ``ctx``'s limits); in between, holding on is only a
        delay."""
        deferred = self.deferred
        if deferred is None or deferred[0] != at + base:
            return False
        shape = deferred[2]
        if shape is not None:
            cause = deferred[3]
            end = len(buf)
            if cause is not None:
                literals, run = cause[PAUSE_LITERALS], cause[PAUSE_RUN]
                if literals is not None:
                    rest = buf[at + cause[PAUSE_EDGE]:]  # (`cut_off`, less a call: this runs on most held feeds)
                    for literal in literals:
                        if len(literal) > len(rest) and literal.startswith(rest):
                            return True  # the buffer still ends inside the literal that left it undecided
                elif run is not None:
                    if run.rx.match(buf, self.checked - base).end() == end:
                        # Only more of the run that reached the edge: still undecided, and nothing before it is
                        # read again (a 32 KB function name streamed a character at a time costs linear time).
                        self.checked = end + base
                        return True
                if run is None and cause[PAUSE_ITEM] == len(shape.branches[cause[PAUSE_BRANCH]][0]) \
                        and not self._due(deferred[1], buf, at, base):
                    return True  # only its lookahead waits (it reads on to the edge): asked again when due
            match = {} if shape.named else None
            # resumed where the last walk stopped (`Shape.decide`, less a call, when its resume function is made)
            resume = shape.resumes.get((cause[PAUSE_BRANCH], cause[PAUSE_ITEM])) if cause is not None else None
            if resume is not None and cause[PAUSE_ITEM] >= 0 and (match is None or cause[PAUSE_CAPTURES] is not None):
                status, cause = resume(buf, at, False, match, cause[PAUSE_POS], cause[PAUSE_CAPTURES],
                                       cause[PAUSE_MARKS])
            else:
                status, cause = shape.decide(buf, at, False, match, cause)
            if status != UNDECIDED:
                self.decided = (at, end, base, shape, status, cause, match, deferred[1])
                return False
            self.deferred = (deferred[0], deferred[1], shape, cause)
            self.checked = end + base
            return True
        delim = deferred[1]
        if deferred[3] is HELD_PARTIAL:
            return not self._due(delim, buf, at, base)
        waits = self.waiting.get(id(delim))
        if waits is not None and waits[0] == at + base:
            return waits[1] is None or len(buf) + base < waits[1]
        if self._suffix_arrived(delim, buf, at, base):
            return False
        held = len(buf) - at
        if not _rechecked(delim):
            return held <= WAIT_CHARS  # past it, their regex runs on every scan
        if len(buf) + base - self.checked >= (held // RECHECK_SHARE if held > WAIT_CHARS else RECHECK_CHARS):
            self.checked = len(buf) + base
            try:
                return self.probe(delim, "match", buf, at, ctx, partial=True) is not None
            except ProbeGaveUp:
                self.given_up[id(delim)] = at + base
                return True  # held until a delimiter commits or the stream ends
        return True

    def _due(self, delim: Delimiter, buf: str, at: int, base: int) -> bool:
        """Whether a deferral held from ``at`` that only a new run of its pattern can decide (`HELD_PARTIAL`, a shape
        whose lookahead waits) is due to run it: always within `WAIT_CHARS` of held text; past it, once the held
        text has grown by a `RECHECK_SHARE` since it last ran, or a suffix literal of the pattern has arrived."""
        held = len(buf) - at
        if held <= WAIT_CHARS or len(buf) + base - self.checked >= held // RECHECK_SHARE:
            return True
        return delim.suffixes is not None and self._suffix_arrived(delim, buf, at, base)

    def _suffix_arrived(self, delim: Delimiter, buf: str, at: int, base: int) -> bool:
        """`_suffix_after`, looking only at the text that arrived since the last look (or the last scan: it saw
        the text before); the look that finds one does not count (the scan it calls for starts the next one)."""
        width = delim.min_width
        seen = max(self.checked, self.searched) - base
        for suffix in delim.suffixes:
            if buf.find(suffix, max(at, at + width - len(suffix), seen - len(suffix) + 1)) != -1:
                return True
        self.searched = len(buf) + base
        return False


def _rechecked(delim: Delimiter) -> bool:
    """Whether a partial match of ``delim`` waiting for its suffix can be rechecked with one anchored partial
    match (`ScanState.still_deferred`); not a split delimiter (its variant depends on the text before it) nor an
    edge-blind one (its partial matching cannot see past the edge): those wait at most `WAIT_CHARS`."""
    return delim.split is None and not delim.edge_blind


class Hit(tuple):
    """A committable delimiter match: ``start``/``end`` in the buffer, and its named captures; ``text``: the matched
    text, when the parser scanned a longer string than its buffer (else None). Built by `make_hit` from
    ``(delim, start, end, captures, text)``: a tuple made by one C call, the class's own (a class with an ``__init__``
    costs a Python frame per commit, about ten times as much; ``partial(tuple.__new__, Hit)`` about 1.5 times as
    much: its wrapper builds an argument tuple and checks the type); read by name."""

    __slots__ = ()

    delim: Delimiter = _tuplegetter(0, "The delimiter that matched.")
    start: int = _tuplegetter(1, "Buffer index where the match starts.")
    end: int = _tuplegetter(2, "Buffer index where the match ends.")
    captures: dict = _tuplegetter(3, "Its named captures.")
    text: str | None = _tuplegetter(4, "The matched text, when the parser scanned a longer string than its buffer.")

    @property
    def kind(self) -> str:
        return self[0].kind


make_hit = Hit  # make_hit((delim, start, end, captures, text)) -> Hit (no __new__ or __init__ of its own)


@dataclass(frozen=True)
class WatchSet:
    """The delimiters that can fire in one parser state, and what lets a scan skip text none of them can start.

    Attributes:
        delimiters: in an explicit region, its close (if it has one); in the implicit region (or the sink when
            there is none), every open and the implicit field's close.
        prefilter: the union of their prefilters: a position it rules out is one where none of them can match or
            partially match. None when one of them has no prefilter.
        triggers: the first characters of the prefilter's literals, or None without a prefilter. A chunk that has
            none of them, arriving while nothing is held, cannot start a delimiter (unless the prefilter's
            ``at_start`` applies, at index 0 of the buffer).
        literal_set: the prefilter's literals, to tell a whole one from one cut off by the buffer edge.
    """

    delimiters: tuple[Delimiter, ...]
    prefilter: Prefilter | None
    triggers: str | None
    literal_set: frozenset = frozenset()
    finder: object = None  # the prefilter's compiled finder, when there is one: a whole scan can start with it
    at_start: bool = False  # the prefilter's at_start
    # Every delimiter is a literal list: (literal, delimiter) pairs, longest literal first, for `literal_step`.
    literal_owners: tuple | None = None
    # A delimiter's lookbehind reach is unbounded (and not split): scans that may run its regex need the whole
    # stream (a split delimiter's lookbehinds read the kept text before the buffer: `scan`'s ``before``).
    history: bool = False
    # Ids of the delimiters whose prefilter applies at index 0 whatever the text there (``^``): `start_ids`; those
    # of them that, once they fail at index 0 even as a partial match, can never match there (`start_dies`: every
    # branch a sure failure, no lookbehind of unbounded reach, no \K, no search from an origin).
    start_ids: frozenset = frozenset()
    start_dies: frozenset = frozenset()
    # Every delimiter is a literal list, a `parsing.shapes` pattern (or a split one whose variants are), or a pattern
    # that can match only at index 0 of the buffer (``^...``: its prefilter has `at_start` and no literal):
    # `shape_step` can scan the state.
    steps: bool = False
    # `steps`, with a finder, and every delimiter that may match at index 0 whatever the text (``^``) is a shape:
    # `shape_step` can scan the state from index 0 before those have failed there.
    start_steps: bool = False
    # Whole literal of the finder -> the delimiters that may match where it starts (one of their prefilter literals
    # starts with it, or it with one): the others cannot, for every match starts with one of its delimiter's
    # prefilter literals (`shape_step` past index 0 decides only these).
    candidates: dict = field(default_factory=dict)


def watch_sets(template: CompiledTemplate) -> dict:
    """Field name (and None, the state without an implicit field) -> the `WatchSet` of that state.

    The implicit field's name maps to the same set as None: both mean "no explicit region is open".
    """
    fields, implicit = template.fields, template.implicit
    sets: dict = {}
    for state in [*fields, None]:
        if state is not None and state != implicit:
            close = fields[state].close
            delimiters = (close,) if close is not None else ()
        else:
            opens = [f.open for f in fields.values() if f.open is not None]
            if implicit is not None and fields[implicit].close is not None:
                opens.append(fields[implicit].close)
            delimiters = tuple(opens)
        prefilter = None
        if delimiters and all(d.prefilter is not None for d in delimiters):
            prefilter = make_prefilter([lit for d in delimiters for lit in d.prefilter.literals],
                                       any(d.prefilter.at_start for d in delimiters))
        fast = prefilter is not None and (prefilter.finder is not None or not prefilter.literals)
        steps = prefilter is not None and all(d.literals is not None or d.shape is not None
                                              or d.split_shapes is not None or not d.prefilter.literals
                                              for d in delimiters)
        owners = None
        if delimiters and all(d.literals is not None for d in delimiters):
            owners = tuple(sorted(((lit, d) for d in delimiters for lit in d.literals), key=lambda p: -len(p[0])))
        sets[state] = WatchSet(delimiters, prefilter, prefilter.first_chars if fast else None,
                               frozenset(prefilter.literals) if prefilter is not None else frozenset(),
                               prefilter.finder if prefilter is not None else None,
                               prefilter is not None and prefilter.at_start, owners,
                               any(d.literals is None and d.lookbehind is None and d.split is None
                                   for d in delimiters),
                               frozenset(id(d) for d in delimiters if d.prefilter is not None and d.prefilter.at_start),
                               frozenset(id(d) for d in delimiters if _dies_at_start(d)),
                               steps,
                               steps and prefilter.finder is not None and all(
                                   d.shape is not None or d.split_shapes is not None
                                   for d in delimiters if d.prefilter.at_start),
                               _candidates(delimiters, prefilter))
    return sets


# Literal pairs compared at most to fill `WatchSet.candidates` (a template of many fields with many literals each
# would make the table quadratic to build; without it, `shape_step` decides every delimiter, as before).
MAX_CANDIDATE_PAIRS = 50_000


def _candidates(delimiters: tuple, prefilter: Prefilter | None) -> dict:
    """`WatchSet.candidates` of a state (empty: too many literals to compare, or no prefilter)."""
    if prefilter is None:
        return {}
    if len(prefilter.literals) * sum(len(d.prefilter.literals) for d in delimiters) > MAX_CANDIDATE_PAIRS:
        return {}
    return {lit: tuple(d for d in delimiters
                       if any(p.startswith(lit) or lit.startswith(p) for p in d.prefilter.literals))
            for lit in prefilter.literals}


def _dies_at_start(delim: Delimiter) -> bool:
    """Whether a failure of ``delim`` at index 0 (no complete and no partial match from a search there) is final."""
    if delim.shape is not None:
        return delim.prefilter is not None and delim.prefilter.at_start  # a shape's failure is final
    return (delim.prefilter is not None and delim.prefilter.at_start and delim.literals is None
            and delim.branches is not None and len(delim.branches) > 0
            and all(b.sure_failure for b in delim.branches) and delim.split is None and delim.lookbehind is not None
            and delim.attempt_regex is None and not delim.search_from_origin and not delim.edge_blind)


def literal_step(watch: WatchSet, buf: str, at: int, eos: bool) -> tuple[Hit | None, int]:
    """`scan` for a state whose delimiters are all literals, given ``at``: the first position at or after the
    scan position where a literal starts whole (the state's finder found one there; nothing before it).

    The delimiters with a literal at ``at`` compete there (longest, then opens first, then field name). While
    streaming, the scan holds from ``at`` instead if a literal of any of them is cut off there by the buffer
    edge, or if a match ends at the edge in a list where one literal extends another. Same result as `scan`.
    """
    end = len(buf)
    best = None
    seen = set()
    for lit, delim in watch.literal_owners:  # longest first: a delimiter's first hit is its longest literal
        if len(lit) > end - at:
            if not eos and buf.startswith(lit[:end - at], at):
                return None, at  # cut off by the edge: more text may make it whole
            continue
        if id(delim) in seen or not buf.startswith(lit, at):
            continue
        seen.add(id(delim))
        stop = at + len(lit)
        if not eos and stop == end and delim.can_extend:
            return None, at
        key = (at - stop, OPEN_FIRST[delim.kind], delim.field)
        if best is None or key < best[0]:
            best = (key, delim, stop)
    return make_hit((best[1], at, best[2], {}, None)), end


def shape_step(watch: WatchSet, buf: str, at: int, eos: bool, clock: ScanState, base: int, ctx: ParseContext,
               before: str = "", window: int | None = None, literal: str | None = None) -> tuple[Hit | None, int]:
    """`scan` for a state whose delimiters `WatchSet.steps` covers, given ``at``: the first position at or after the
    scan position where the state's finder found a whole literal (nothing before it), and (unless every ``^``-only
    delimiter failed there for good) not index 0 of the buffer; or index 0 itself, the scan position, when the
    state's ``^``-delimiters are all shapes (`WatchSet.start_steps`: a shape decides index 0 like any other).

    Position by position from ``at`` (the finder's next match each time): every delimiter decides there at once
    (a literal by ``startswith``, a shape by `Shape.decide`; a ``^``-only pattern cannot match past index 0). One
    undecided there (a literal cut off by the buffer edge or a longer one that may still come, an undecided
    shape) holds from there; else the matches there compete (longest, then opens first, then field name); else
    the next position. A split delimiter runs the shape of the variant its lookbehind selects there (`_variant`,
    with ``before``, ``window`` and ``ctx`` as for `scan`). Same result as `scan`; an undecided shape is recorded
    in ``clock.deferred`` as `scan` does. ``literal``: the finder's match at ``at``, if known: past index 0, only
    its `WatchSet.candidates` can match there.
    """
    end = len(buf)
    memo = clock.decided
    if memo is not None:
        clock.decided = None
        if eos or memo[0] != at or memo[1] != end or memo[2] != base:
            memo = None
    candidates = watch.candidates
    while True:
        best = None
        delimiters = watch.delimiters if not at or literal is None else candidates.get(literal, watch.delimiters)
        for delim in delimiters:
            shape = delim.shape
            if shape is None and delim.split_shapes is not None:
                # (the variant `still_deferred` just decided, if it is this delimiter's: the one `_variant` selects
                # here, for a lookbehind's answer at a place is kept until a commit)
                shape = (memo[3] if memo is not None and memo[7] is delim
                         else delim.split_shapes[_variant(delim, buf, at, base, before, ctx, clock, window)])
            if shape is not None:
                if memo is not None and memo[3] is shape:  # `ScanState.still_deferred` decided it just now
                    status, stop, match = memo[4], memo[5], memo[6]
                else:
                    match = {} if shape.named else None
                    decide = shape.compiled  # `Shape.decide` with no pause, less a call
                    status, stop = (decide(buf, at, eos, match) if decide is not None
                                    else shape.walk(buf, at, eos, match))
                if status == FAIL:
                    if not at and not eos and id(delim) in watch.start_dies:
                        clock.dead_at_start.add(id(delim))  # a ^-shape failed at index 0: for good
                    continue
                if status == UNDECIDED:
                    clock.deferred = (at + base, delim, shape, stop)
                    clock.checked = end + base
                    return None, at
            elif delim.literals is not None:
                for lit in delim.ordered:  # (`_longest_at`, less a call) longest first
                    if buf.startswith(lit, at):
                        stop = at + len(lit)
                        break
                else:
                    stop = -1
                if not eos and (stop == end and delim.can_extend
                                or end - at < delim.max_width and cut_off(delim.literals, buf, at)):
                    clock.deferred = None
                    return None, at
                if stop == -1:
                    continue
                match = None
            else:
                continue  # matches at index 0 of the buffer only
            if best is None:  # (most often the only match: its rank is built only when another competes)
                best = (None, delim, stop, match)
                continue
            key = (at - stop, OPEN_FIRST[delim.kind], delim.field)
            other = best[0]
            if other is None:
                other = (at - best[2], OPEN_FIRST[best[1].kind], best[1].field)
            if key < other:
                best = (key, delim, stop, match)
            elif best[0] is None:
                best = (other, best[1], best[2], best[3])
        if best is not None:
            match = best[3]
            return make_hit((best[1], at, best[2], {} if match is None else match, None)), end
        found = watch.finder.search(buf, at + 1)
        if found is None:
            clock.deferred = None
            return None, end
        at = found.start()
        memo = None
        literal = found.group()
        if not eos and literal not in watch.literal_set:
            clock.deferred = None
            return None, at  # a literal cut off by the buffer edge


def _longest_at(delim: Delimiter, buf: str, at: int) -> int:
    """End of the longest literal of ``delim`` that starts at ``at``, or -1."""
    for lit in delim.ordered:  # longest first
        if buf.startswith(lit, at):
            return at + len(lit)
    return -1


def _literal_search(delim: Delimiter, buf: str, pos: int) -> tuple[int, int]:
    """Leftmost complete match of any literal at or after ``pos`` (the longest one at that start), like a
    search for the longest-first alternation; ``(-1, -1)`` when none."""
    start = stop = -1
    for lit in delim.ordered:  # longest first, so on equal start the longer literal is kept
        i = buf.find(lit, pos)
        if i != -1 and (start == -1 or i < start):
            start, stop = i, i + len(lit)
    return start, stop


def _regex_pending(delim: Delimiter, buf: str, lo: int, hi: int, ctx: ParseContext,
                   clock: SearchClock, base: int = 0, before: str = "", window: int | None = None,
                   pattern=None, candidate: int = -1) -> int | None:
    """Leftmost p in [lo, hi] from which a match of the regex (or ``pattern``; default: the pattern without
    ``\\K``, or for a split delimiter the variant its lookbehind selects there) could still reach past the
    buffer edge. ``candidate``: a position known to be a candidate of the delimiter's prefilter (where a match
    starts), which spares the search for it when the range begins there."""
    if lo > hi:
        return None
    end = len(buf)
    if delim.max_width is not None:
        reach = delim.max_width + (delim.lookahead or 0)
        lo = max(lo, end - reach)
    prefilter = delim.prefilter if pattern is None else None
    p = lo if prefilter is None or lo == candidate else prefilter.candidate(buf, lo)
    while -1 < p <= hi:
        run = pattern
        if run is None:
            run = (delim.attempt_regex if delim.split is None
                   else delim.split[1][_variant(delim, buf, p, base, before, ctx, clock, window)])
        if clock.probe(delim, "fullmatch", buf, p, ctx, pattern=run) is not None:
            return p
        p = p + 1 if prefilter is None else prefilter.candidate(buf, p + 1)
    return None


def _edge_pending(delim: Delimiter, buf: str, lo: int, ctx: ParseContext, clock: SearchClock) -> int | None:
    """For an `edge_blind <Delimiter.edge_blind>` delimiter: the leftmost position in ``[lo, len(buf))`` from which
    a match attempt reaches the buffer edge, or reads up to it (`parsing.edge`: the partial matching of the pattern
    itself can miss one), so that more text could make or change a match there; None if there is none. A superset
    of those places: only ever adds a hold (the end of the stream decides with the real text). Without an edge
    pattern (syntax `parsing.edge` does not read): ``lo``, the first candidate."""
    end = len(buf)
    pattern = delim.edge_regex
    if pattern is None:
        return lo if lo < end else None
    if delim.max_width is not None and delim.lookahead is not None:
        lo = max(lo, end - delim.max_width - delim.lookahead)  # an attempt from before reads nothing at the edge
    if lo >= end:
        return None
    # The edge pattern never matches completely: a partial search returns its leftmost partial match.
    found = clock.probe(delim, "search", buf, lo, ctx, pattern=pattern)
    return found.start() if found is not None and found.start() < end else None


def _variant(delim: Delimiter, buf: str, at: int, base: int, before: str, ctx: ParseContext, clock: SearchClock,
              window: int | None = None) -> int:
    """For a split delimiter (`Delimiter.split`): the index of the variant of its pattern to run at ``at`` (bit i
    set when its lookbehind i holds there).

    Each lookbehind is evaluated at most once per position and remembered: not at all where the alternatives it
    guards cannot even partially match (a backward-only `parsing.behind` reading, no dearer than deciding them: not
    where none of their first literals starts); first on the text from ``window`` (where the current region began, an
    index into ``buf``) when a match there is one in the whole stream; else on the whole stream (``before`` +
    ``buf``). A lookbehind with a reading of its own (balanced quotes, escape-delimited strings) is read, not run,
    both ways, each reading going on from where its last call stopped."""
    memo = getattr(clock, "lookbehinds", None)
    selected = 0
    for i, (behind, rest, window_safe, rest_shape, quick) in enumerate(delim.split[0]):
        key = (id(delim), i, at + base)
        holds = memo.get(key) if memo is not None else None
        if holds is None:
            # A backward-only `LookbehindReader` written out as one function (with a `ScanState`, as every reading):
            # read without the tests below and without deciding the guarded alternatives first.
            read = quick.read if type(quick) is LookbehindReader and quick.backward_only and memo is not None else None
            if rest_shape is not None:
                # Most candidates start none of the guarded alternatives' first literals (a close's special token,
                # where the guarded ones start with ";"): `Shape.walk`'s first test, with no call.
                lead = rest_shape.lead
                if lead is not None and not buf.startswith(lead[0], at) and (
                        len(buf) - at >= lead[1] or at < len(buf) and buf[at] not in lead[2]):
                    continue  # the guarded alternatives fail here (even partially) whatever the lookbehind says
                # A backward-only reading is read without deciding them first: where they fail, its answer selects a
                # variant that differs only by alternatives that fail here.
                if read is None:
                    decide = rest_shape.compiled
                    if (decide(buf, at, False) if decide is not None else rest_shape.walk(buf, at, False))[0] == FAIL:
                        continue
            elif clock.run(delim, "match", buf, at, ctx, partial=True, pattern=rest) is None:
                continue
            if read is not None:
                holds = (window_safe and window is not None and 0 <= window <= at and read(buf, window, at)
                         or read(before + buf if before else buf, 0, at + len(before)))
                memo[key] = holds
                if holds:
                    selected |= 1 << i
                continue
            holds = False
            # A reading without `regex` (`parsing.template.balanced_quotes`, `parsing.escape_strings`) where the
            # lookbehind has one and the clock is a `ScanState`: it reads on from where its last call stopped.
            quotes = clock.quotes if quick is not None and memo is not None else None
            if window_safe and window is not None and 0 <= window <= at:
                if quotes is None:
                    holds = clock.run(delim, "match", buf[window:], at - window, ctx, pattern=behind) is not None
                elif type(quick) is tuple:
                    holds = _balanced_holds(quick, buf, window, at, base, quotes, (id(delim), i))
                else:
                    holds = quick.holds(buf, window, at, base, quotes, (id(delim), i))
            if not holds:
                text = before + buf if before else buf
                if quotes is None:
                    holds = clock.run(delim, "match", text, at + len(before), ctx, pattern=behind) is not None
                elif type(quick) is tuple:  # (the whole text's reading: a key of its own)
                    holds = _balanced_holds(quick, text, 0, at + len(before), base - len(before), quotes,
                                            (id(delim), i, 0))
                else:
                    holds = quick.holds(text, 0, at + len(before), base - len(before), quotes, (id(delim), i, 0))
            if memo is not None:
                memo[key] = holds
        if holds:
            selected |= 1 << i
    return selected


def _balanced_holds(quick: tuple, buf: str, lo: int, at: int, base: int, memo: dict, key: object) -> bool:
    """Whether a balanced-quote lookbehind (`parsing.template.balanced_quotes`) holds at ``at`` in ``buf[lo:]`` (as
    the lookbehind's regex run on that text): the literal ends at some k and the text from k to ``at`` is characters
    outside the set and whole strings. Read as a small automaton (outside a string, inside one, after a backslash
    inside one) run from every end of the literal at once, in jumps over the characters that change nothing; the
    reading of ``buf[lo:]`` goes on from where the last one (``memo[key]``, a `ScanState`'s ``quotes``) stopped at or
    before ``at`` (stream offsets: ``base`` is that of ``buf[0]``), so the candidates of one region cost time linear
    in its length."""
    literal, _, outside, inside = quick
    entry = memo.get(key)
    if entry is not None and entry[0] == lo + base and entry[1] <= at + base:
        start, states = entry[1] - base, entry[2]
    else:
        start, states = lo, 0
    width = len(literal)
    found = buf.find(literal, max(lo, start - width + 1), at)
    while found != -1:
        end = found + width
        states = _quote_states(states, buf, start, end, outside, inside) | _OUT
        start = end
        found = buf.find(literal, found + 1, at)
    states = _quote_states(states, buf, start, at, outside, inside)
    memo[key] = [lo + base, at + base, states]
    return bool(states & _OUT)


# The states of `_balanced_holds`'s automaton, as bits: outside a string, inside one, right after a backslash in one.
_OUT, _IN, _ESC = 1, 2, 4


def _quote_states(states: int, text: str, start: int, stop: int, outside, inside) -> int:
    """The states the readings in ``states`` at ``start`` are in at ``stop`` (a reading outside a string dies at a
    character of the set other than the quote). ``outside``/``inside``: compiled runs of the characters that leave a
    reading outside/inside a string as it is. Each reading is one match of a standard-library pattern
    (`_quote_readers`), not a loop step per quote."""
    if not states or start == stop:
        return states
    from_out, in_string = _quote_readers(outside)
    result = 0
    if states & _OUT:
        result = _outside_end(from_out.match(text, start, stop), stop)
    if states & _IN:
        result |= _string_end(text, in_string.match(text, start, stop).end(), stop, from_out)
    if states & _ESC:  # the escaped character (any), then inside the string
        result |= (_IN if start + 1 == stop
                   else _string_end(text, in_string.match(text, start + 1, stop).end(), stop, from_out))
    return result


def _string_end(text: str, i: int, stop: int, from_out) -> int:
    """The state of a reading inside a string whose run of plain string characters (and escapes) ends at ``i``."""
    if i == stop:
        return _IN
    if text[i] == "\\":  # (the run takes every whole escape: a backslash it stops at is the last character)
        return _ESC
    return _outside_end(from_out.match(text, i + 1, stop), stop) if i + 1 < stop else _OUT


def _outside_end(found, stop: int) -> int:
    """The state of a reading outside strings at ``stop``, from `_quote_readers`'s ``from_out`` match."""
    if found.end() != stop:
        return 0  # a character of the set outside a string: the reading died there
    if found.group(1) is None:
        return _OUT
    return _ESC if found.group(2) is not None else _IN


_QUOTE_READERS: dict = {}


def _quote_readers(outside) -> tuple:
    """For ``outside`` (``[^SET]*``, `parsing.template.balanced_quotes`): ``(from_out, in_string)``, standard-library
    patterns reading as `_quote_states`'s automaton does. ``from_out``: from outside a string, whole strings and
    characters outside the set, then an unterminated string (group 1 its quote; group 2 a trailing backslash),
    each taken whole as the automaton reads them (their alternatives start with different characters: one way to
    read the text); a match short of the end: the reading died there. ``in_string``: plain string characters and
    whole escapes."""
    readers = _QUOTE_READERS.get(outside.pattern)
    if readers is None:
        plain = outside.pattern[:-1]  # [^SET]
        # Runs of plain characters taken whole ("unrolled" loops, possessive: one step per string or escape, not
        # per character, and nothing to backtrack).
        string = r'[^"\\]*+(?:\\.[^"\\]*+)*+'
        readers = (re.compile(f'{plain}*+(?:"{string}"{plain}*+)*+(?:(")' + string + r"(\\)?)?", re.DOTALL),
                   re.compile(string, re.DOTALL))
        if len(_QUOTE_READERS) < 256:
            _QUOTE_READERS[outside.pattern] = readers
    return readers


def scan(watch: Iterable[Delimiter] | WatchSet, buf: str, pos: int, eos: bool,
         timeout: ParseContext | float | None = None, origin: int | None = None,
         clock: SearchClock | None = None, base: int = 0, before: str = "",
         window: int | None = None) -> tuple[Hit | None, int]:
    """Find the next delimiter to commit in ``buf[pos:]``, holding back whatever more input could change.

    Args:
        watch: the delimiters that can fire in the current state (a `WatchSet`, or any iterable of them).
        buf: the buffer (it may start before ``pos``: earlier text is context for lookbehinds).
        pos: where unconsumed text starts.
        eos: end of stream; nothing is held and every complete match can commit.
        timeout: the regex time limits (a `ParseContext`, seconds per search, or None).
        origin: where the reference would search from (the end of the last delimiter, ``<= pos``; default
            ``pos``). Delimiters whose matches depend on where a search starts (`Delimiter.search_from_origin`:
            ``\\G``, fuzzy, reverse) are searched from there; flushing text never moves it.
        clock: the parse's `SearchClock` (regex time per search since the last commit; a `ScanState` also
            remembers what need not be searched again); None: a fresh one.
        base: the stream offset of ``buf[0]`` (positions a `ScanState` remembers are stream offsets).
        before: the stream text before ``buf[0]`` that the parser kept (all of it, when a delimiter's lookbehind
            may read back to the start): what a split delimiter's lookbehind is evaluated on, with ``buf``.
        window: index in ``buf`` where the current region began (its open delimiter), if it is in ``buf``: a
            split delimiter's lookbehind is tried on the text from there first.

    Returns:
        ``(hit, hold_start)``: the winning committable match (earliest start, then longest, then opens before
        closes, then field name) or None; and the leftmost position that must be held back
        (``len(buf)`` when nothing is pending).

    Raises:
        PatternTimeoutError, BudgetExceededError: a search exceeded its budget, or the deadline passed.
    """
    end = len(buf)
    start_dies = None
    if type(watch) is WatchSet:
        start_dies = watch.start_dies or None
        watch = watch.delimiters
    ctx = timeout if type(timeout) is ParseContext else as_context(timeout)
    if clock is None:
        clock = SearchClock()
    elif not eos and type(clock) is ScanState:
        deferred = clock.deferred
        if deferred is not None and deferred[3] is HELD_PARTIAL and deferred[0] == pos + base \
                and clock.still_deferred(buf, pos, base, ctx):
            return None, pos  # a partial match held here, not due to be asked again
    if origin is None:
        origin = pos
    hold = end
    best = None  # (key, delim, start, stop, match or None)
    kept_text = []  # where the attempts of complete \K matches began (the text before \K is part of the match)
    deferred = None  # (position, delimiter, shape, run) of the leftmost delimiter held without running its regex
    # Each delimiter is looked at from its first candidate (where its prefilter lets a match begin; without one,
    # where its search starts), in the order of those candidates. Every match or hold a delimiter gives starts at
    # or after its candidate: once a candidate lies past the winning match found so far (it will commit), or
    # past the hold (nothing can commit, and the hold cannot move further left), the rest cannot change the result.
    dead = clock.dead_at_start if type(clock) is ScanState and clock.dead_at_start else None
    given_up = clock.given_up if not eos and type(clock) is ScanState and clock.given_up else None
    if given_up is not None:
        # Delimiters held until a commit or the end of the stream (`ScanState.given_up`): nothing commits from
        # their holds on, so no other delimiter is searched past them either.
        hold = max(pos, min(given_up.values()) - base)
    memo = clock.candidates if type(clock) is ScanState else None
    order = []
    for delim in watch:
        prefilter = delim.prefilter
        if prefilter is None:
            order.append((origin if delim.search_from_origin else pos, delim))
        else:
            at = (prefilter.candidate(buf, pos, pos == 0 and dead is not None and id(delim) in dead)
                  if memo is None or not pos else _next_candidate(memo, prefilter, buf, pos, base))
            if at != -1:
                order.append((at, delim))
    if len(order) > 1:
        order.sort(key=_candidate)
    for at, delim in order:
        if at > hold or best is not None and at > best[2]:
            break
        match = None
        prefilter = delim.prefilter
        start_at = at
        if delim.literals is not None:
            if eos:
                start, stop = _literal_search(delim, buf, at)
                if start == -1:
                    continue
            else:
                # The leftmost place a literal starts or is cut off by the edge: it holds if the literal is cut
                # off, if a longer literal could still start there, or if one literal of the list extends another.
                stop = _longest_at(delim, buf, at)
                if stop == -1 or (stop == end and delim.can_extend) or (
                        end - at < delim.max_width and cut_off(delim.literals, buf, at)):
                    hold = min(hold, at)
                    continue
                start = at
        elif delim.shape is not None or delim.split_shapes is not None:
            # Decided by string operations (`parsing.shapes`): the first candidate where a match starts, unless an
            # earlier one may still become one. A split delimiter's shape is its variant's at each candidate.
            start = at
            shape = delim.shape
            while True:
                if shape is None or delim.split_shapes is not None:
                    shape = delim.split_shapes[_variant(delim, buf, start, base, before, ctx, clock, window)]
                match = {} if shape.named else None  # its captures
                status, stop = shape.decide(buf, start, eos, match)
                if status != FAIL:
                    break
                if start == 0 and not eos and start_dies is not None and id(delim) in start_dies \
                        and type(clock) is ScanState:
                    clock.dead_at_start.add(id(delim))  # a ^-shape failed at index 0: for good
                start = prefilter.candidate(buf, start + 1)
                if start == -1 or start > hold or best is not None and start > best[2]:
                    break
            if status != MATCH:
                if status == UNDECIDED:
                    hold = min(hold, start)
                    if deferred is None or start < deferred[0]:
                        deferred = (start, delim, shape, stop)  # undecided until more text
                continue
        else:
            if given_up is not None and id(delim) in given_up:
                hold = min(hold, given_up[id(delim)] - base)  # until a delimiter commits or the stream ends
                continue
            try:
                if prefilter is not None:
                    if not eos and not (prefilter.at_start and at == 0):
                        if not _literal_starts(prefilter, buf, at):
                            hold = min(hold, at)  # only a cut-off literal at the edge: wait for the text to decide it
                            continue
                        waiting = getattr(clock, "waiting", None)
                        waits = waiting.get(id(delim)) if waiting else None
                        if (delim.suffixes is not None and (end - at <= WAIT_CHARS or _rechecked(delim))
                                and not _suffix_after(delim, buf, at)
                                and _may_match_at(delim, buf, at, base, before, ctx, clock, window)
                                or waits is not None and waits[0] == at + base
                                and (waits[1] is None or end + base < waits[1])):
                            # A match from here must end with a suffix that has not arrived (and one may still start
                            # here); or a complete match here is one that only the end of the stream decides.
                            hold = min(hold, at)
                            if deferred is None or at < deferred[0]:
                                deferred = (at, delim, None, None)
                            continue
                if delim.edge_blind and not eos:
                    edge = _edge_pending(delim, buf, start_at, ctx, clock)
                    if edge is not None:
                        hold = min(hold, edge)
                        if deferred is None or edge < deferred[0]:
                            deferred = (edge, delim, None, HELD_PARTIAL)
                if eos:
                    match = _search(delim, buf, start_at, False, ctx, clock, base=base, before=before, window=window)
                    if match is None:
                        continue
                    start, stop = match.span()
                elif delim.unbounded:
                    # Fuzzy matching: which match a search finds can change with any later text, so nothing from
                    # the search origin on is decided before the end of the stream.
                    hold = min(hold, start_at)
                    continue
                elif delim.reverse:
                    # A reverse search finds the match that ends last, and more text can always bring a later one:
                    # it commits only at the end of the stream. Its match cannot start before the leftmost position
                    # where the same pattern, searching forwards, matches or partially matches.
                    ahead = clock.capped(delim, "search", buf, start_at, ctx, pattern=delim.forward_regex)
                    if ahead is not None:
                        first = ahead.start()
                        if not ahead.partial:  # a complete match is preferred to an earlier partial one: look before it
                            earlier = _regex_pending(delim, buf, start_at, first - 1, ctx, clock,
                                                     pattern=delim.forward_regex)
                            first = first if earlier is None else earlier
                        hold = min(hold, first)
                    continue
                else:
                    match = _search(delim, buf, start_at, True, ctx, clock, streaming=True, base=base, before=before,
                                    window=window)
                    # With \K the reported match starts after text the attempt already consumed; hold from where
                    # the attempt began (the same pattern without \K), or that text could be flushed away.
                    attempt = match if delim.attempt_regex is None else clock.capped(
                        delim, "search", buf, start_at, ctx, pattern=delim.attempt_regex)
                    if attempt is None:
                        if start_at == 0 and start_dies is not None and id(delim) in start_dies \
                                and type(clock) is ScanState:
                            clock.dead_at_start.add(id(delim))  # nothing from index 0 on, and none can come at 0
                        continue
                    if attempt.partial or match is None or match.partial:
                        start = attempt.start()
                        hold = min(hold, start)
                        if deferred is None or start < deferred[0]:
                            deferred = (start, delim, None, HELD_PARTIAL)  # (`ScanState.still_deferred`)
                        continue
                    start, stop = match.span()
                    pending = _pending_start(delim, buf, start_at, attempt.start(), stop, ctx, clock, base, before,
                                             window)
                    if pending is not None:
                        hold = min(hold, pending)
                        if (delim.stable and start == start_at and pending == start and prefilter is not None
                                and isinstance(clock, ScanState) and (delim.lookahead is None or stop < end)
                                and delim.branches is None):  # with branches, more text may decide it sooner
                            # Held at its candidate until the end of the stream (unbounded lookahead) or until its
                            # lookahead has the text it may read: until then, the same scan would hold here again.
                            until = None if delim.lookahead is None else stop + delim.lookahead + base
                            clock.waiting[id(delim)] = (start + base, until)
                            if deferred is None or start < deferred[0]:
                                deferred = (start, delim, None, None)
                        if pending <= start:
                            continue
                    if attempt.start() < start:
                        kept_text.append(attempt.start())
            except ProbeGaveUp:
                # A streaming-only call ran out of the probe budget (`SearchClock.probe`): hold from where this
                # delimiter could begin until a delimiter commits or the stream ends, where the one-shot rule decides,
                # without asking again on every feed.
                gave = max(start_at, pos)
                hold = min(hold, gave)
                if type(clock) is ScanState:
                    clock.given_up[id(delim)] = gave + base
                continue
        key = (start, start - stop, OPEN_FIRST[delim.kind], delim.field)
        if best is None or key < best[0]:
            best = (key, delim, start, stop, match)
    if best is None or best[2] >= hold:
        # Nothing commits yet. A complete \K match that waits must keep the text its attempt consumed before
        # \K: flushed, that text would be gone from the next search, and the match with it.
        if kept_text:
            hold = min(hold, *kept_text)
        if isinstance(clock, ScanState):
            clock.deferred = (hold + base, *deferred[1:]) if deferred is not None and deferred[0] == hold else None
            clock.checked = end + base  # a suffix-waiting deferral was just asked (`_may_match_at`)
        return None, hold
    _, delim, start, stop, match = best
    return make_hit((delim, start, stop, _captures(match), None)), hold


def _captures(match) -> dict:
    """The named groups of a delimiter match that took part in it (``{}`` for a literal delimiter's hit; a shape's
    hit brings them as a dict)."""
    if match is None:
        return {}
    if type(match) is dict:  # a shape's captures (`parsing.shapes`)
        return match
    groups = match.groupdict()
    if not groups or None not in groups.values():
        return groups
    return {k: v for k, v in groups.items() if v is not None}


def _next_candidate(memo: dict, prefilter: Prefilter, buf: str, pos: int, base: int) -> int:
    """``prefilter.candidate(buf, pos)`` for ``pos > 0``, from the last answer for this prefilter when it still
    holds (``memo``: `ScanState.candidates`). Each commit scans again from its end, and a search for a literal
    that does not occur runs to the end of the buffer: with many delimiters, a one-shot parse of a long text
    (every commit in one buffer) cost time quadratic in its length. The text at a stream offset never changes, so
    a search from an earlier offset answers for a later one up to its candidate: a whole literal there (one that
    fits before the buffer's end then) stays the first; and where it found none, only a literal reaching into
    text added since can start."""
    start = pos + base
    end = len(buf) + base
    known = memo.get(id(prefilter))
    if known is not None and known[0] <= start:
        found, upto = known[1], known[2]
        if found >= start:
            if found + prefilter.width <= upto:
                return found - base
        elif found == -1:
            if upto == end:
                return -1
            start = max(start, upto - prefilter.width + 1)
    at = prefilter.candidate(buf, start - base)
    memo[id(prefilter)] = (pos + base, -1 if at == -1 else at + base, end)
    return at


def _candidate(entry: tuple) -> int:
    return entry[0]


def _search(delim: Delimiter, buf: str, at: int, partial: bool, ctx: ParseContext, clock: SearchClock,
            streaming: bool = False, base: int = 0, before: str | None = None, window: int | None = None):
    """``delim.regex.search(buf, at, partial=partial)`` under the search's budget.

    A pattern whose lookbehind reach is unbounded (one that re-reads the stream back to its start at every
    place it is tried) is searched one candidate at a time, with the same result: the leftmost complete match
    at a candidate, else (``partial``) the leftmost partial one. The ``regex`` module does not interrupt a
    lookbehind, so one call over a long text could run far past the budget; candidate by candidate, the budget
    is checked between calls, and a one-shot parse stops where a streamed one does.

    ``streaming`` (`scan`, not the reference's rule): such a lookbehind makes ``regex`` report a partial match
    at a place where the text after it already rules one out (it ran more than the pattern's widest match, and
    its lookahead, past that place): that is no partial match, and holding there would hold the rest of the
    stream, re-reading it on every feed. Skipped.

    ``before`` (not None: `scan`'s streaming and end-of-stream searches): a split delimiter runs the variant its
    lookbehind selects at each candidate (`_variant`), on ``buf`` alone.
    """
    prefilter = delim.prefilter
    run = clock.capped if streaming else clock.run  # streaming: on text cut short (`SearchClock.capped`)
    if prefilter is None or delim.lookbehind is not None:
        match = run(delim, "search", buf, at, ctx, partial=partial)
        while streaming and match is not None and match.partial and _no_alternative_at(delim, buf, match.start(),
                                                                                          ctx, clock):
            if match.start() >= len(buf):
                # A partial match at the end of the text that no alternative makes: nothing starts later. (A
                # search from past the end starts at the end again: it found the same match forever.)
                return None
            match = run(delim, "search", buf, match.start() + 1, ctx, partial=partial)
        return match
    decided = None
    if streaming and delim.max_width is not None and delim.lookahead is not None:
        decided = len(buf) - delim.max_width - delim.lookahead  # a match starting before this is decided
    first_partial = None
    split = delim.split is not None and before is not None
    p = at
    while p != -1:
        pattern = delim.split[1][_variant(delim, buf, p, base, before, ctx, clock, window)] if split else None
        m = run(delim, "match", buf, p, ctx, partial=partial, pattern=pattern)
        if m is not None:
            if not m.partial:
                return m
            if first_partial is None and (decided is None or p >= decided) and not (
                    streaming and pattern is None and _no_alternative_at(delim, buf, p, ctx, clock)):
                first_partial = m
        p = prefilter.candidate(buf, p + 1)
    return first_partial


def _no_alternative_at(delim: Delimiter, buf: str, at: int, ctx: ParseContext, clock: SearchClock) -> bool:
    """Whether none of the pattern's top-level alternatives matches at ``at``, even partially, although the whole
    pattern reported a partial match there (`parsing.decided.alternative_patterns`: the ``regex`` module can
    report such a partial match, and holding there held the rest of the stream and re-read it on every feed:
    a 5 KB hermes call with ``</tool_call>`` inside a string ran out of its regex budget streamed, while the
    one-shot parse took 8 ms). A pattern that cannot be split is trusted."""
    alternatives = alternative_patterns(delim.source, delim.regex.flags)
    if alternatives is None:
        return False
    return all(clock.probe(delim, "match", buf, at, ctx, pattern=rx) is None for rx in alternatives)


def _may_match_at(delim: Delimiter, buf: str, at: int, base: int, before: str, ctx: ParseContext,
                  clock: SearchClock, window: int | None) -> bool:
    """Whether a match of ``delim`` may still start at ``at`` (a complete or partial match there), before the text
    from ``at`` is held waiting for a suffix: ``<|channel|>analysis<|message|>`` starts a candidate of
    ``<|channel|>analysis to=functions...`` that already fails, and holding it until a later suffix arrives would
    hold the whole reasoning. An edge-blind pattern (`Delimiter.edge_blind`) is not asked: its partial matching
    cannot see past the edge."""
    if delim.edge_blind:
        return True
    pattern = (delim.split[1][_variant(delim, buf, at, base, before, ctx, clock, window)]
               if delim.split is not None else None)
    return clock.probe(delim, "match", buf, at, ctx, pattern=pattern) is not None


def _suffix_after(delim: Delimiter, buf: str, at: int) -> bool:
    """Whether one of the delimiter's suffix literals occurs where a match starting at or after ``at`` could end
    with it (no earlier than its shortest match allows)."""
    width = delim.min_width
    for suffix in delim.suffixes:
        if buf.find(suffix, max(at, at + width - len(suffix))) != -1:
            return True
    return False


def _literal_starts(prefilter: Prefilter, buf: str, at: int) -> bool:
    """Whether a whole literal of the prefilter starts at ``at`` (else only a cut-off one is there)."""
    return buf.startswith(prefilter.literals, at)


def scan_as_reference(watch: Iterable[Delimiter] | WatchSet, buf: str, pos: int, origin: int,
                      timeout: ParseContext | float | None = None,
                      clock: SearchClock | None = None, base: int = 0, before: str | None = None,
                      window: int | None = None) -> tuple[Hit | None, int]:
    """One step of the reference's own (not stream-safe) rule, for the two places where its one-shot result
    depends on it: the end of the prompt prefix, and the end of the generation before the final flush.

    transformers 5.23 searches each delimiter once with partial matching. A partial match, or a complete one
    ending exactly at the buffer edge that could grow there (a regex, a zero-width match, or a literal another
    literal of its list extends), holds from its reported start (after ``\\K``, if any); any other complete
    match is final, even when more text could still lengthen it. Same arguments, result and errors as `scan`
    (with ``eos`` false); ``origin`` is where the reference searches from. A delimiter whose prefilter rules
    out all of ``buf[pos:]`` is skipped (its search would find nothing, or an empty partial match at the edge,
    which holds nothing), and one with a candidate is searched from there: the same result, fewer calls.

    ``before`` (not None; with ``base`` and ``window`` as for `scan`): a split delimiter (`Delimiter.split`) runs,
    at each candidate, the variant of its pattern that its lookbehind selects there (`_variant`, remembered in a
    `ScanState` clock: the streaming scans have most often evaluated it at that place already), not its whole
    pattern, which evaluates the lookbehind again, reading back over the region. A match from one place is the
    same either way (the lookbehind reads only text before that place, all of it there). None: the whole pattern.
    """
    if isinstance(watch, WatchSet):
        watch = watch.delimiters
    ctx = as_context(timeout)
    if clock is None:
        clock = SearchClock()
    end = len(buf)
    hold = end
    best = None
    for delim in watch:
        start_at = origin if delim.search_from_origin else pos
        if delim.prefilter is not None:
            start_at = delim.prefilter.candidate(buf, pos)
            if start_at == -1:
                continue
        if delim.literals is not None:
            # The search of the escaped literals, without the regex: a complete match anywhere comes first
            # (leftmost, longest at its start), else the leftmost literal cut off by the edge (a partial match).
            start, stop = _literal_search(delim, buf, start_at)
            if start == -1 or (stop == end and delim.can_extend):
                hold = min(hold, start_at if start == -1 else start)
                continue
            key = (start, start - stop, OPEN_FIRST[delim.kind], delim.field)
            if best is None or key < best[0]:
                best = (key, delim, start, stop, None)
            continue
        match = _search(delim, buf, start_at, True, ctx, clock, base=base, before=before, window=window)
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
    return make_hit((delim, start, stop, _captures(match), None)), hold


def _decided(delim: Delimiter, buf: str, start: int, stop: int, ctx: ParseContext, clock: SearchClock,
             base: int = 0, before: str = "", window: int | None = None) -> bool:
    """Whether the complete match [start, stop) is final (`parsing.decided`): the first branch that matches at
    ``start`` is one whose matches the text already decides (at the buffer edge: one that reads nothing past its
    last character), and it gives the same match; every branch before it fails there even as a partial match. A split delimiter is judged by the branches
    of the variant its lookbehind selects at ``start``."""
    branches = delim.branches
    if delim.split is not None:
        branches = delim.split_branches[_variant(delim, buf, start, base, before, ctx, clock, window)]
        if branches is None:
            return False
    elif len(branches) == 1:
        # The branch is the whole pattern (same source, same flags), and [start, stop) its complete match there.
        branch = branches[0]
        return branch.decided if stop < len(buf) else branch.edge_final
    for branch in branches:
        m = clock.probe(delim, "match", buf, start, ctx, pattern=branch.regex)
        if m is None:
            if not branch.sure_failure:
                return False  # more text might still make it match here (`a\B|a` seeing `a`)
            continue
        return (branch.decided if stop < len(buf) else branch.edge_final) and not m.partial and m.end() == stop
    return False


def _pending_start(delim: Delimiter, buf: str, pos: int, start: int, stop: int, ctx: ParseContext,
                   clock: SearchClock, base: int = 0, before: str = "", window: int | None = None) -> int | None:
    """For a complete regex match at [start, stop) while streaming: the leftmost position from which the same
    delimiter might still match differently once more text arrives, or None if the match is final."""
    end = len(buf)
    if delim.branches is not None and _decided(delim, buf, start, stop, ctx, clock, base, before, window):
        # No text that may follow can change this match: only an earlier attempt could still be pending.
        return _regex_pending(delim, buf, pos, start - 1, ctx, clock, base, before, window)
    if stop == end or delim.lookahead is None or stop + delim.lookahead > end:
        # The match itself may still change (it ends at the edge, or its lookahead may read past it). And a
        # partial search reports a complete match in preference to an earlier partial one (`a.*z|b` seeing
        # `a b` reports `b`), so an earlier attempt may be pending too.
        earlier = _regex_pending(delim, buf, pos, start - 1, ctx, clock, base, before, window)
        return start if earlier is None else earlier
    return _regex_pending(delim, buf, pos, start, ctx, clock, base, before, window, candidate=start)
