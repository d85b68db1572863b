"""Prefilters: the literals a delimiter's every match must start with, so no regex runs before one is present.

Most delimiter patterns begin with a literal (``<\\|channel\\|>commentary to=functions\\.(?P<name>...)``,
``<｜tool▁call▁begin｜>...``, ``(?=\\{\\s*"name")``). A match attempt can only succeed, completely or partially
(the text ends inside a possible match), at a position where the text starts with one of those literals, or
where the rest of the text is a proper prefix of one. `derive_prefilter` finds such literals with a small,
conservative reading of the pattern; whatever it does not fully understand gives no prefilter (the pattern
then runs everywhere, as before), never a wrong one. Positions the prefilter rules out are positions where
``regex`` would find neither a match nor a partial match, so a search may start at the first candidate
instead of at the scan position and return the same result (lookbehinds still see the text before it).

The reading covers literal characters and escapes, groups (capturing, named, non-capturing, atomic) with
alternations, quantifiers (an optional atom ends the literal), positive lookaheads (their literal is text at
the match start), zero-width assertions that consume nothing (negative lookahead, lookbehinds, ``\\b``,
``\\B``), and ``^`` / ``\\A`` (with MULTILINE off they match only at the start of the searched string). A
global ``(?s)`` changes nothing (DOTALL is on for every delimiter already). It gives up on the whole pattern for
inline flags other than ``s`` (global ones apply to the whole pattern in the ``regex`` module, wherever written;
scoped ones include reverse search), fuzzy matching, ``\\K``, ``\\G``, recursion, conditionals and anything
unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Escapes of these characters stand for the character itself (checked against `regex` by the tests).
_LITERAL_ESCAPES = frozenset("\\.^$*+?{}[]()|-#&~/ :;,=!\"'@%`<>_")
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_METACHARS = frozenset(".^$*+?{}[]()|\\")
# Zero-width escapes that consume nothing and may be stepped over.
_ZERO_WIDTH_ESCAPES = frozenset("bB")
_START_ESCAPES = frozenset("A")
# Global inline flags (`(?i)`, `(?V1)`, `(?r)` ...) change how the whole pattern matches.
_GLOBAL_FLAGS = re.compile(r"\(\?([-a-zA-Z0-9]*)\)")
# Escapes after an even number of backslashes.
_UNSAFE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[KG]")
_BRACE = re.compile(r"(?<!\\)(?:\\\\)*\{")
_REPEAT_BODY = re.compile(r"\d*(?:,\d*)?\}")

MAX_FINDER_CHARS = 4000  # literals longer than this in all get no compiled finder (its pattern would be huge)


class _GiveUp(Exception):
    """The pattern uses something the reading does not cover: no prefilter."""


class _Start:
    """Marker: an alternative that can only match at the start of the searched string (``^``, ``\\A``)."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "START"


START = _Start()


@dataclass(frozen=True)
class Prefilter:
    """Where a delimiter's match attempts can succeed.

    Attributes:
        literals: non-empty strings; an attempt at position p can succeed (completely, or partially at the
            end of the text) only if the text at p starts with one of them or the rest of the text is a proper
            prefix of one.
        at_start: an alternative can match at position 0 of the searched string, whatever the text there.
        first_chars: the first characters of `literals` (a chunk with none of them, arriving when nothing is
            held, cannot hold the start of a match unless at_start applies).
        finder: compiled stdlib pattern whose ``search(text, pos)`` finds the first position at or after ``pos``
            where a literal starts or is cut off by the end of ``text`` (`at_start` aside); None when there are
            no literals, or too many characters of them to compile into one pattern.
        automaton: where `finder` is None, the literals as a `_LiteralAutomaton`, which finds the same positions
            in time linear in the text searched, however many literals there are.
        width: the length of the longest literal (characters): a candidate at least this far from the end of the
            text is where a whole literal starts, not one cut off by the end.
    """

    literals: tuple[str, ...]
    at_start: bool
    first_chars: str
    finder: re.Pattern | None
    automaton: _LiteralAutomaton | None = field(default=None, compare=False, repr=False)
    width: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", max(map(len, self.literals), default=0))

    def candidate(self, text: str, pos: int, past_start: bool = False) -> int:
        """The first position >= ``pos`` where an attempt could succeed, or -1 when there is none.

        A position at the very end of ``text`` is a candidate only for `at_start` with ``pos == 0 ==
        len(text)`` (``^`` matching an empty text); elsewhere an empty remainder cannot start a match.
        ``past_start``: the caller knows no attempt can succeed at index 0 whatever `at_start` says.
        """
        if self.at_start and pos == 0 and not past_start:
            return 0
        if self.finder is not None:
            m = self.finder.search(text, pos)
            return -1 if m is None else m.start()
        return -1 if self.automaton is None else self.automaton.candidate(text, pos)


class _LiteralAutomaton:
    """The literals of a prefilter too large for a compiled finder, as an Aho-Corasick automaton.

    A search walks the text once from its start position, whatever the number of literals: looking each literal
    up with ``str.find`` instead costs a scan to the end of the text per literal that does not occur, at every
    region open, which made a delimiter of a few hundred alternatives quadratic in the stream's length.

    Nodes are numbered; node 0 is the root. ``goto[n]`` maps a character to the next node, ``fail[n]`` is the
    node of the longest proper suffix of n's path that is also a path, ``depth[n]`` is n's path length, and
    ``ends[n]`` is the length of the longest literal that n's path ends with (0: none).
    """

    __slots__ = ("goto", "fail", "depth", "ends", "first")

    def __init__(self, literals: tuple[str, ...]) -> None:
        goto: list[dict[str, int]] = [{}]
        depth = [0]
        ends = [0]
        for lit in literals:
            node = 0
            for char in lit:
                nxt = goto[node].get(char)
                if nxt is None:
                    nxt = goto[node][char] = len(goto)
                    goto.append({})
                    depth.append(depth[node] + 1)
                    ends.append(0)
                node = nxt
            ends[node] = len(lit)
        fail = [0] * len(goto)
        queue = list(goto[0].values())  # breadth first: a node's suffix link is set before its children's
        for node in queue:
            for char, child in goto[node].items():
                link = fail[node]
                while link and char not in goto[link]:
                    link = fail[link]
                fail[child] = goto[link].get(char, 0)
                if not ends[child]:
                    ends[child] = ends[fail[child]]
                queue.append(child)
        self.goto, self.fail, self.depth, self.ends = goto, fail, depth, ends
        self.first = re.compile("[" + "".join(re.escape(char) for char in goto[0]) + "]")

    def candidate(self, text: str, pos: int) -> int:
        """The first position >= ``pos`` where ``text`` has a literal, or ends inside one (-1: none)."""
        goto, fail, depth, ends = self.goto, self.fail, self.depth, self.ends
        end = len(text)
        best = -1
        node = 0
        i = pos
        while i < end:
            if not node:  # only a literal's first character leaves the root
                found = self.first.search(text, i)
                if found is None:
                    break
                i = found.start()
            char = text[i]
            while node and char not in goto[node]:
                node = fail[node]
            node = goto[node].get(char, 0)
            i += 1
            if ends[node] and (best == -1 or i - ends[node] < best):
                best = i - ends[node]
            if best != -1 and i - depth[node] >= best:
                return best  # every match still in progress starts after the one found
        if node and (best == -1 or end - depth[node] < best):
            return end - depth[node]  # the text ends inside a literal
        return best


def _finder_source(literals) -> str:
    """A stdlib regex matching, at a position, any literal, or a proper prefix of one that runs to the end."""
    trie: dict = {}
    for lit in literals:
        node = trie
        for char in lit:
            node = node.setdefault(char, {})
        node[""] = {}  # a literal ends here

    def emit(node: dict, root: bool) -> str:
        if "" in node:
            return ""  # a whole literal is present: accept here
        options = [re.escape(char) + emit(child, False) for char, child in node.items()]
        if not root:
            options.append(r"\Z")  # the text ended inside the literal
        return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"

    return emit(trie, True)


def make_prefilter(literals, at_start: bool = False) -> Prefilter | None:
    """A `Prefilter` for these literals (a literal delimiter's own, or those derived from a pattern).

    Returns None when there is nothing to filter on (no literal and not `at_start`).
    """
    literals = tuple(dict.fromkeys(lit for lit in literals if lit))
    if not literals and not at_start:
        return None
    finder = None
    if literals and sum(len(lit) for lit in literals) <= MAX_FINDER_CHARS:
        try:
            finder = re.compile(_finder_source(literals), re.DOTALL)
        except (re.error, RecursionError, OverflowError):  # pragma: no cover - deep nesting; use the loop
            finder = None
    automaton = _LiteralAutomaton(literals) if literals and finder is None else None
    return Prefilter(literals, at_start, "".join(dict.fromkeys(lit[0] for lit in literals)), finder, automaton)


def _check_whole(source: str) -> None:
    """Give up on patterns whose meaning the reading cannot follow anywhere in them."""
    if _UNSAFE_ESCAPE.search(source):
        raise _GiveUp("\\K / \\G")
    for flags in _GLOBAL_FLAGS.findall(source):
        if set(flags) - {"s"}:
            raise _GiveUp("inline flags")
    for m in _BRACE.finditer(source):
        if not _REPEAT_BODY.match(source, m.end()):
            raise _GiveUp("a brace that is not a plain repeat (fuzzy matching, or a literal brace)")


def derive_prefilter(source: str) -> Prefilter | None:
    """The prefilter of a delimiter pattern (DOTALL on, MULTILINE off, ``regex`` module syntax), or None.

    None means: no literal could be derived with certainty (a pattern that can match anywhere, such as
    ``\\s*</x>``, or one using syntax this reading gives up on); the pattern must then run at every position.
    """
    try:
        _check_whole(source)
        heads, i = _alternation(source, 0)
        if i != len(source):
            raise _GiveUp("unbalanced parenthesis")
    except (_GiveUp, IndexError, ValueError):
        return None
    if heads is None:
        return None
    return make_prefilter(sorted(h for h in heads if h is not START), START in heads)


def derive_suffixes(source: str) -> tuple[str, ...] | None:
    """Literals one of which every complete match ends with (or, for a match that ends in a positive lookahead,
    the text the lookahead reads ends with), or None when the reading cannot tell.

    A partial match cannot become complete before one of them has arrived: the scanner uses this to leave a
    partial match alone, without running its regex again, while the text after it has none of them.
    """
    try:
        _check_whole(source)
        ends, i = _alternation_ends(source, 0)
        if i != len(source):
            raise _GiveUp("unbalanced parenthesis")
    except (_GiveUp, IndexError, ValueError):
        return None
    return None if not ends else tuple(sorted(ends))


def split_leading_lookbehinds(source: str) -> tuple[tuple[str, ...], tuple[tuple[int, str], ...]] | None:
    """For a pattern some of whose top-level alternatives begin with a positive lookbehind ``(?<=LB)``:
    ``(lookbehinds, alternatives)``: the distinct lookbehind bodies in the order they first appear, and every
    top-level alternative as ``(index of its lookbehind, or -1, the alternative without it)``. At any one position
    a lookbehind's truth is fixed, so there the pattern matches exactly as the alternation of the alternatives
    whose lookbehind holds (and those without one), in order. None when no alternative begins with a lookbehind,
    when there are more than `MAX_LOOKBEHINDS` different ones, or when the pattern uses a backreference or
    something the reading gives up on.

    A lookbehind that may read back to the start of the stream is then evaluated once per position (its truth
    there never changes as text is added after it), and the rest of the pattern, searched again as more text
    arrives, no longer needs the text before the scan buffer.
    """
    try:
        _check_whole(source)
        if re.search(r"(?<!\\)(?:\\\\)*(?:\\[1-9]|\(\?P=|\\g<)", source):
            raise _GiveUp("backreference")
        alternatives = []
        i = start = 0
        while True:
            while i < len(source) and source[i] not in "|)":
                _, _, i = _atom(source, i)
                _, i = _quantifier(source, i)
            alternatives.append(source[start:i])
            if i >= len(source):
                break
            if source[i] == ")":
                raise _GiveUp("unbalanced parenthesis")
            i = start = i + 1
    except (_GiveUp, IndexError, ValueError):
        return None
    behinds: list[str] = []
    parts = []
    for alt in alternatives:
        if alt.startswith("(?<="):
            try:
                kind, _, end = _group(alt, 0)
                low, after = _quantifier(alt, end)
            except (_GiveUp, IndexError, ValueError):
                return None
            if kind != "zero" or low is not None:
                return None
            body = alt[4:end - 1]
            if body not in behinds:
                behinds.append(body)
            parts.append((behinds.index(body), alt[end:]))
        else:
            parts.append((-1, alt))
    if not behinds or len(behinds) > MAX_LOOKBEHINDS:
        return None
    return tuple(behinds), tuple(parts)


# At most this many different leading lookbehinds in one pattern are split (`split_leading_lookbehinds`): the
# pattern has a variant for each combination of their truths.
MAX_LOOKBEHINDS = 3


def lookbehind_variant(parts: tuple[tuple[int, str], ...], holds: int) -> str:
    """The pattern at a position where the lookbehinds whose bits are set in ``holds`` hold and the others do not
    (`split_leading_lookbehinds`'s ``alternatives``): the alternatives kept, in order; ``(?!)`` when none is."""
    kept = [alt for index, alt in parts if index == -1 or holds >> index & 1]
    return "|".join(kept) if kept else "(?!)"


def _alternation_ends(src: str, i: int):
    """Suffix literals of ``alt|alt|...`` from ``i`` to an unmatched ``)`` or the end: (set or None, index)."""
    ends: set | None = set()
    while True:
        alt, i = _sequence_ends(src, i)
        ends = None if alt is None or ends is None else ends | alt
        if i < len(src) and src[i] == "|":
            i += 1
            continue
        return ends, i


def _sequence_ends(src: str, i: int):
    """Suffix literals of one alternative (set or None, index past it). Walks it left to right, keeping what
    the text matched so far must end with."""
    tail: set | None = None  # what the match so far ends with; None: unknown (or nothing consumed yet)
    ahead = False  # `tail` comes from a lookahead: it reads past the match, so a next consuming atom replaces it
    while i < len(src) and src[i] not in "|)":
        start = i
        kind, value, i = _atom(src, i)
        low, i = _quantifier(src, i)
        if kind in ("zero", "start"):
            continue  # consumes nothing
        if kind == "char" and low is None:
            tail = {value} if tail is None or ahead else {t + value for t in tail}
            ahead = False
        elif kind == "char" and low:
            tail, ahead = {value}, False  # `c+`: ends with at least one c
        elif kind in ("group", "lookahead") and low != 0:
            inner, end = _alternation_ends(src, _group_body(src, start))
            if src[end] != ")" or low not in (None, 1) and kind == "lookahead":
                raise _GiveUp("group")
            tail, ahead = inner, kind == "lookahead"
            if not tail:
                tail = None
        else:  # optional atoms, classes, `.`, backreferences, `$`: the end is unknown
            tail, ahead = None, False
    return (tail or None), i


def _group_body(src: str, i: int) -> int:
    """Index where the alternatives of the group (or lookahead) opening at ``i`` begin."""
    j = i + 1
    if not src.startswith("?", j):
        return j
    c = src[j + 1]
    if c in ":>=":
        return j + 2
    if c == "P":
        return src.index(">", j + 2) + 1
    if c == "<":
        return src.index(">", j + 1) + 1
    if c == "s" or c == "-":
        return src.index(":", j) + 1
    raise _GiveUp(f"group (?{c}")


def _alternation(src: str, i: int):
    """Heads of ``alt|alt|...`` starting at ``i``, up to an unmatched ``)`` or the end: (set or None, index)."""
    heads: set | None = set()
    while True:
        alt, i = _sequence(src, i)
        if alt is None or heads is None:
            heads = None
        else:
            heads |= alt
        if i < len(src) and src[i] == "|":
            i += 1
            continue
        return heads, i


def _sequence(src: str, i: int):
    """Heads of one alternative: every text it matches starts with one of them. (set or None, index past it)."""
    literal = ""
    while i < len(src) and src[i] not in "|)":
        kind, value, i = _atom(src, i)
        low, i = _quantifier(src, i)
        if kind == "zero" or (kind == "start" and low == 0):
            continue  # consumes nothing: the literal goes on after it
        if kind == "char" and low is None:
            literal += value
            continue
        if kind == "char" and low:  # repeated, at least once: the literal ends after its first copy
            return _skip_rest(src, i, {literal + value})
        if kind == "start":
            return _skip_rest(src, i, {literal} if literal else {START})
        if kind in ("group", "lookahead") and low != 0 and value is not None:
            joined = {literal + h for h in value if h is not START}
            if START in value and not literal:
                joined.add(START)
            return _skip_rest(src, i, joined or {literal})
        # An optional atom, a class, `.`, `$`, a backreference, a group of unknown heads: the literal ends here.
        return _skip_rest(src, i, {literal} if literal else None)
    return ({literal} if literal else None), i


def _skip_rest(src: str, i: int, result):
    """Parse (for syntax checks) and skip the rest of an alternative whose heads are already known."""
    while i < len(src) and src[i] not in "|)":
        _, _, i = _atom(src, i)
        _, i = _quantifier(src, i)
    return result, i


def _atom(src: str, i: int):
    """One atom at ``i``: (kind, value, index past it). Kinds: char (value: the character), zero (consumes
    nothing), start (``^``/``\\A``), group / lookahead (value: heads or None), other (anything else)."""
    c = src[i]
    if c == "\\":
        e = src[i + 1]
        if e in _LITERAL_ESCAPES:
            return "char", e, i + 2
        if e in _CONTROL_ESCAPES:
            return "char", _CONTROL_ESCAPES[e], i + 2
        if e in _ZERO_WIDTH_ESCAPES:
            return "zero", None, i + 2
        if e in _START_ESCAPES:
            return "start", None, i + 2
        if e in "pPNxuUgL":  # escapes with an argument: skip it
            j = i + 2
            if j < len(src) and src[j] in "{<":
                close = src.index("}" if src[j] == "{" else ">", j)
                return "other", None, close + 1
            if e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                return "other", None, j + width
            return "other", None, j + 1
        if e.isdigit():
            j = i + 1
            while j < len(src) and src[j].isdigit():
                j += 1
            return "other", None, j
        if e.isalpha():
            return "other", None, i + 2  # \w \d \s \m \M \Z \z \X ...
        raise _GiveUp(f"unknown escape \\{e}")
    if c == "[":
        return "other", None, _class_end(src, i)
    if c == "(":
        return _group(src, i)
    if c == "^":
        return "start", None, i + 1
    if c in "$.":
        return "other", None, i + 1
    if c in "*+?{":
        raise _GiveUp("a quantifier with nothing to repeat")
    if c in "]}":
        return "other", None, i + 1
    return "char", c, i + 1


def _class_end(src: str, i: int) -> int:
    """Index past the character class starting at ``i`` (``[``)."""
    j = i + 1
    if j < len(src) and src[j] == "^":
        j += 1
    if j < len(src) and src[j] == "]":
        j += 1
    while src[j] != "]":
        if src[j] == "\\":
            j += 1
        elif src[j] == "[":
            if src.startswith("[:", j):  # POSIX class [:alpha:]
                j = src.index(":]", j + 2) + 1
            else:
                raise _GiveUp("nested set")
        j += 1
    return j + 1


def _group(src: str, i: int):
    """A parenthesised construct at ``i``: (kind, heads, index past the closing parenthesis)."""
    j = i + 1
    kind = "group"
    if src.startswith("?", j):
        j += 1
        c = src[j]
        if c == ":" or c == ">":
            j += 1
        elif c == "P" and src.startswith("<", j + 1):
            j = src.index(">", j + 2) + 1
        elif c == "<" and src[j + 1] not in "=!":
            j = src.index(">", j + 1) + 1
        elif c == "=":
            kind, j = "lookahead", j + 1
        elif c in "!" or (c == "<" and src[j + 1] in "=!"):
            j += 1 if c == "!" else 2
            _, j = _alternation(src, j)
            if src[j] != ")":
                raise _GiveUp("unclosed assertion")
            return "zero", None, j + 1
        elif c == "#":
            j = src.index(")", j) + 1
            return "zero", None, j
        elif c in "-s" or c.isalpha():
            flags = re.match(r"[-a-zA-Z0-9]*", src[j:]).group(0)
            k = j + len(flags)
            if src[k] == ":" and set(flags) <= {"s"}:
                j = k + 1
            elif src[k] == ")" and flags and set(flags) <= {"s"}:
                return "zero", None, k + 1  # a global `(?s)`: DOTALL, which every delimiter has already
            else:  # other scoped flags (`(?i:`, `(?r:` ...) or unknown syntax
                raise _GiveUp(f"group (?{flags}{src[k]}")
        else:
            raise _GiveUp(f"group (?{c}")
    heads, j = _alternation(src, j)
    if j >= len(src) or src[j] != ")":
        raise _GiveUp("unclosed group")
    return kind, heads, j + 1


def _quantifier(src: str, i: int):
    """A quantifier at ``i``: (minimum repetitions, or None when there is no quantifier; index past it)."""
    if i >= len(src):
        return None, i
    c = src[i]
    if c in "*?":
        low, i = 0, i + 1
    elif c == "+":
        low, i = 1, i + 1
    elif c == "{":
        m = re.compile(r"\{(\d*)(?:,(\d*))?\}").match(src, i)
        if m is None:
            raise _GiveUp("brace")
        low, i = int(m.group(1) or 0), m.end()
    else:
        return None, i
    if i < len(src) and src[i] in "?+":  # lazy / possessive
        i += 1
    return low, i


__all__ = ["Prefilter", "START", "derive_prefilter", "derive_suffixes", "lookbehind_variant", "make_prefilter",
           "split_leading_lookbehinds"]
