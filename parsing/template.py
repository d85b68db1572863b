"""Loading, validating and compiling response templates.

A template is validated once and compiled into a `CompiledTemplate` that every
parser reuses. The accepted language is exactly transformers 5.23's (see
``docs/template-language.md``, "Template keys"): whatever the reference
rejects we reject, whatever it accepts we accept. Our errors are
`TemplateError` (a ``ValueError``) carrying the JSON path of the fault and, for
a regex, the position in the pattern; where the reference raises ``TypeError``
(an unhashable ``content`` name, a non-string pattern) ours is a
`TemplateTypeError`, which is both; a delimiter regex nested too deeply for
the regex module to compile (``RecursionError`` in the reference) raises a
`TemplateRecursionError`, both a `TemplateError` and a ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import sys
import re as _stdlib_re
from copy import deepcopy
from dataclasses import dataclass, field as dc_field
from typing import Any

import regex

from .budget import ParseContext, run_regex
from .content import CONTENT_PARSERS
from .errors import TemplateError
from .decided import decided_branches
from .edge import compile_edge
from .regex_cost import MAX_TEMPLATE_SIZE, compile_pattern, compile_size, too_large
from .prefilter import (Prefilter, derive_prefilter, derive_suffixes, lookbehind_variant, make_prefilter,
                        split_leading_lookbehinds)
from .shapes import Shape, shape_of, template_code_budget
from .behind import lookbehind_reader
from .escape_strings import escape_strings
from .shapes import _literal as shapes_literal
from .transform import PLACEHOLDER, check_transform_strings, compile_transform

# Limits that keep a hostile or runaway template from tying up the parser.
MAX_TEMPLATE_JSON_CHARS = 1_000_000
MAX_FIELDS = 256
MAX_PATTERN_CHARS = 20_000

TEMPLATE_KEYS = frozenset({"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"})
FIELD_KEYS = frozenset({
    "open", "open_pattern", "close", "close_pattern", "content", "content_args",
    "repeats", "join", "optional", "transform", "transform_each",
})


class TemplateTypeError(TemplateError, TypeError):
    """A template fault for which transformers raises ``TypeError``; carries a JSON path too."""


class TemplateRecursionError(TemplateError, RecursionError):
    """A delimiter regex nested too deeply for the regex module to compile, where transformers raises
    ``RecursionError``; carries the JSON path of the pattern too."""


@dataclass(frozen=True)
class Delimiter:
    """One compiled delimiter: an open, a close, or the start anchor.

    Attributes:
        field: owning field name (None for the start anchor).
        kind: ``"open"``, ``"close"`` or ``"start_anchor"``.
        regex: compiled pattern (DOTALL; literal lists become an escaped
            alternation, longest literal first).
        source: the pattern as written (literals: the alternation), for messages.
        literals: the literal strings, or None for a regex delimiter.
        can_extend: for literals, whether one literal is a strict prefix of
            another (so a complete match at the buffer edge may still grow).
        max_width: the longest text the pattern can match, None if unbounded.
        lookahead: how many characters past the end of a match the pattern may
            inspect (lookaheads, ``$``, ``\\b``), None if unbounded.
        lookbehind: how many characters before the search position the pattern
            may inspect (lookbehinds, ``\\b``), None if unbounded. ``^`` and ``\\A``
            count as 0: they hold only at index 0 of the scan buffer, and a trimmed
            buffer always keeps context before every position searched (see
            `ResponseParser`), so they never mistake its first index for the stream's.
        attempt_regex: for a pattern with ``\\K`` (which drops the text matched
            before it from the match), the same pattern without ``\\K``, whose
            match starts where the attempt began: hold-back must start there.
        search_from_origin: what the pattern matches depends on where a search
            starts (``\\G``, fuzzy matching, a reverse search), so it is always
            searched from where the reference would search: the end of the last
            delimiter (see `parsing.scanner`), never from a flush position.
        unbounded: fuzzy matching (``{e<=1}``...): which match a search finds
            cannot be bounded by looking at the text near the buffer edge, so the
            scanner holds from the search origin until the end of the stream.
        reverse: the pattern searches backwards (``(?r)``): a search finds the
            match that ends last.
        forward_regex: for a reverse search (``(?r)``), the same pattern searching
            forwards (None if it could not be derived); its leftmost partial or
            complete match bounds where the reverse match can still start.
        prefilter: where a match attempt can succeed at all (`parsing.prefilter`):
            a literal's own strings, or the literals derived from a pattern; None
            for a pattern with none, or one searched from the origin or with ``\\K``.
        suffixes: for a pattern with a prefilter, literals one of which every
            complete match ends with (`parsing.prefilter.derive_suffixes`), or None.
        min_width: the shortest text the pattern can match (0 when unknown).
        stable: a complete match that ends before the end of the text stays a
            match at the same start whatever text follows (no negative
            lookaround, end or boundary assertion in the pattern).
        split: for a pattern with a prefilter whose lookbehind reach is unbounded
            because alternatives begin with lookbehinds ``(?<=LB)`` (at most 3
            different ones; `parsing.prefilter.split_leading_lookbehinds`):
            ``(guards, variants)``. ``guards``: per lookbehind, ``(lookbehind,
            rest, window_safe, rest_shape, quick)``: ``rest`` the alternatives it guards,
            without it (compiled, and as a `parsing.shapes.Shape` or None),
            whether a match of the lookbehind in a suffix of the stream is one in
            the whole stream, and for a balanced-quote or escape-string lookbehind its
            reading without ``regex`` (`balanced_quotes`, `parsing.escape_strings`), else None. ``variants``: the pattern compiled
            for each combination of the lookbehinds' truths (index: bit i set when
            lookbehind i holds). At a position the pattern matches as the variant
            its lookbehinds select there. The scanner evaluates each lookbehind at
            most once per position (not at all where its ``rest`` cannot match),
            on the text since the current region began when that settles it,
            else on the whole stream, and runs the variant on its buffer. None
            otherwise.
        split_lookbehind: the lookbehind reach of the variants.
        branches: the pattern's top-level alternatives when a complete match of one
            of them ending before the buffer edge can be final whatever follows
            (``</think>\\s*|(?=<eos>)``, ``<tool_call>(?=\\s*\\{)``), else None
            (`parsing.decided.decided_branches`). For a split delimiter: ``()`` when
            one of its variants has such branches (``split_branches``: those of
            each variant, or None each).
        shape: the pattern as a `parsing.shapes.Shape` (alternatives of literals, character runs and literal
            lookaheads) when it is one and has a prefilter and no split: the scanner then decides its matches with
            string operations instead of the regex. None otherwise.
        split_shapes: for a split delimiter whose variants are all shapes: the shape of each variant (indexed as
            the variants); the scanner picks one per position as it picks the variant. None otherwise.
        edge_blind: `regex`'s partial matching may miss an attempt that more text could still complete: the
            pattern has an assertion it decides at the end of the text as if the stream ended there (``\\b``,
            ``\\B``, ``\\m``, ``\\M``, a negated ``$``/``\\Z``), or a lazy repeat and a lookbehind (``.+?(?<=a)``).
            While streaming, the scanner also holds from where ``edge_regex`` reaches the buffer edge.
        edge_regex: for an edge-blind pattern, its edge pattern (`parsing.edge`): its leftmost partial match is at
            or before every place where more text could make or change a match. None: not edge-blind, or syntax
            the edge reader does not follow (the scanner then holds from the first candidate).
    """

    field: str | None
    kind: str
    regex: Any
    source: str
    literals: tuple[str, ...] | None
    can_extend: bool
    max_width: int | None
    lookahead: int | None
    lookbehind: int | None = 0
    ordered: tuple[str, ...] = ()
    first_chars: str = ""
    attempt_regex: Any = None
    search_from_origin: bool = False
    unbounded: bool = False
    reverse: bool = False
    forward_regex: Any = None
    prefilter: Prefilter | None = None
    suffixes: tuple[str, ...] | None = None
    min_width: int = 0
    stable: bool = False
    split: tuple | None = None
    split_lookbehind: int = 0
    branches: tuple | None = None
    split_branches: tuple | None = None
    edge_blind: bool = False
    edge_regex: Any = None
    shape: Shape | None = None
    split_shapes: tuple | None = None

    @property
    def is_literal(self) -> bool:
        return self.literals is not None

    def run(self, method: str, text: str, *args, timeout: ParseContext | float | None = None, pattern: Any = None,
            **kwargs) -> Any:
        """Call ``regex.<method>(text, *args, **kwargs)`` on this delimiter's pattern (or ``pattern``, e.g.
        `attempt_regex`) under the time limits ``timeout`` (a `ParseContext`, seconds per call, or None);
        ``finditer`` results come back as a list.

        Raises:
            PatternTimeoutError: the call ran past the per-call budget (naming the field and the pattern).
            BudgetExceededError: the context's deadline passed.
        """
        return run_regex(pattern if pattern is not None else self.regex, method, text, *args, limits=timeout,
                         field=self.field, role=self.kind, source=self.source, **kwargs)


@dataclass(frozen=True)
class FieldSpec:
    """One compiled field. Mirrors the keys of the field's JSON object (section 2 of the spec)."""

    name: str
    open: Delimiter | None
    close: Delimiter | None
    content: str
    content_args: Any
    repeats: Any
    join: str | None
    optional: Any
    transform: Any
    transform_each: bool
    transform_fn: Any = None  # `transform.compile_transform` of ``transform``

    @property
    def dirty(self) -> bool:
        """True when chunks of this field are raw text of a structured value (json, xml-inline, kv-lines)."""
        return self.content not in ("text", "int", "float", "bool")


@dataclass(frozen=True)
class CompiledTemplate:
    """A validated template, ready for `ResponseParser`.

    Attributes:
        spec: a deep copy of the template dict as given.
        fields: field name -> `FieldSpec`, in declaration order.
        implicit: name of the field without an open delimiter, or None.
        defaults: keys pre-set in every message.
        start_anchor: the compiled anchor `Delimiter`.
    """

    spec: dict
    fields: dict[str, FieldSpec]
    implicit: str | None
    defaults: dict
    start_anchor: Delimiter
    field_names: tuple[str, ...] = dc_field(default=())
    # What parsers derive from the template once and share (filled by `parsing.parser` on first use).
    derived: dict = dc_field(default_factory=dict, compare=False, repr=False)

    def truncate_prefix(self, prefix: str, timeout: ParseContext | float | None = None) -> tuple[str, str]:
        """Split ``prefix`` after the end of the last start-anchor match.

        Returns ``(dropped, kept)``; when the anchor does not occur, ``dropped``
        is empty and the whole prefix is kept (as in the reference, which logs it).
        Matches are taken left to right without overlap, like ``finditer``.
        """
        last_end = self.anchor_end(prefix, timeout)
        if last_end is None:
            return "", prefix
        return prefix[:last_end], prefix[last_end:]

    def anchor_literals(self) -> tuple[str, ...]:
        """The start anchor's literals when its matches are plain occurrences of them, no two of which can overlap
        (the last match then ends where the last occurrence of one ends: a text search, no regex); ``()`` when the
        anchor needs its regex. Derived once (``derived["anchor_literals"]``)."""
        plain = self.derived.get("anchor_literals")
        if plain is None:
            literals = self.start_anchor.literals
            plain = self.derived["anchor_literals"] = (
                tuple(literals) if literals is not None and not _literals_overlap(literals) else ())
        return plain

    def anchor_end(self, prefix: str, timeout: ParseContext | float | None = None) -> int | None:
        """Where the last start-anchor match in ``prefix`` ends (`truncate_prefix`'s cut), None where the anchor
        does not occur: a parser keeps only what follows, without copying the (often long) text before it.

        Raises:
            TypeError: ``prefix`` is not a string (the regex module's own message).
            PatternTimeoutError, BudgetExceededError: the anchor's regex ran past ``timeout``.
        """
        anchor = self.start_anchor
        if not isinstance(prefix, str):
            # The reference runs its anchor regex over any prefix: the regex module's own TypeError, to the letter
            # ("a bytes-like object is required, not 'int'"), not an AttributeError of a string method.
            for _ in anchor.regex.finditer(prefix):
                break
        plain = self.derived.get("anchor_literals")
        if plain is None:
            plain = self.anchor_literals()
        if plain:
            # Literals no two occurrences of which can overlap: every occurrence is a match, and the last match
            # ends where the last occurrence of one of them ends (plain text search, no regex to run).
            if prefix.endswith(plain):
                return len(prefix)  # none can end later (most prompts end with the anchor)
            return last_literal_end(prefix, plain)
        last_end = None
        for m in anchor.run("finditer", prefix, timeout=timeout):
            last_end = m.end()
        return last_end


def last_literal_end(text: str, literals: tuple[str, ...]) -> int | None:
    """Where the last occurrence of one of ``literals`` ends in ``text`` (None: none occurs). For literals no two
    occurrences of which can overlap (`CompiledTemplate.anchor_literals`), every occurrence is a match of the
    anchor they make, and this is where its last match ends."""
    last_end = None
    for literal in literals:
        found = text.rfind(literal)
        if found != -1 and (last_end is None or found + len(literal) > last_end):
            last_end = found + len(literal)
    return last_end


def _literals_overlap(literals) -> bool:
    """Whether occurrences of two of ``literals`` (or two of one) can overlap: one contains another, or a proper
    suffix of one is a proper prefix of one (``"aba"`` with itself)."""
    for a in literals:
        for b in literals:
            if a != b and a in b:
                return True
            if any(a.endswith(b[:k]) for k in range(1, min(len(a), len(b)))):
                return True
    return False


def _scope_error(path: str, message: str, *, type_error: bool = False, pattern_pos: int | None = None):
    cls = TemplateTypeError if type_error else TemplateError
    return cls(message, path, pattern_pos=pattern_pos)


def regex_fault(source: str, exc: regex.error) -> tuple[str, int | None]:
    """What is wrong with the pattern ``source`` that `regex` refused with ``exc``, and where: ``(text, pos)``.

    `regex` reports where its parser gave up, which for an unclosed construct is the pattern's end: the `[` of
    ``(?<=a+)[^\\s*<think>`` is at 7, `regex` says 19. Where the stdlib `re` refuses the pattern for the same
    reason (its message starts with `regex`'s), the earlier of the two positions is taken (`re` names where the
    construct opened); else a fault `regex` puts at the very end gets no position rather than a wrong one.
    ``text`` is `regex`'s message with that position (``"unterminated character set at position 7"``); ``pos``
    is a 0-based offset into ``source``, or None.
    """
    pos = exc.pos
    try:
        _stdlib_re.compile(source, _stdlib_re.DOTALL)
        other = None
    except _stdlib_re.error as std:
        other = std
    except (RecursionError, OverflowError, ValueError):  # stdlib-only limits: no second opinion
        other = None
    if other is not None and other.pos is not None and str(other.msg).startswith(str(exc.msg)):
        pos = min(pos, other.pos) if pos is not None else other.pos
    elif pos is not None and pos >= len(source):
        pos = None
    if pos == exc.pos:
        return str(exc), pos
    return (f"{exc.msg} at position {pos}" if pos is not None else str(exc.msg)), pos


def _join_path(*parts: str) -> str:
    return ".".join(p for p in parts if p)


# `\K` / `\G` as regex escapes (preceded by an even number of backslashes).
_ESCAPE_K = _stdlib_re.compile(r"(?<!\\)(?:\\\\)*\\K")
_ESCAPE_G = _stdlib_re.compile(r"(?<!\\)(?:\\\\)*\\G")
# Assertions that `regex`'s partial matching decides at the end of the text as if the text ended there, so an
# attempt they fail at the buffer edge is reported as neither a match nor a partial match although more text
# could make it one: a word boundary after a non-word character (``.\b``), a non-boundary after a word
# character (``a\Ba``), a start of word (``\m``), a negated end of text (``(?!$)``, ``(?!\Z)``).
_EDGE_BLIND = _stdlib_re.compile(r"(?<!\\)(?:\\\\)*\\[bBmM]|\(\?!.*(?:\$|\\[Zz])", _stdlib_re.DOTALL)
# A lazy repeat (``*?``, ``+?``, ``??``, ``{m,n}?``): with a lookbehind after it, `regex`'s partial matching reports
# an attempt that reaches the buffer edge only from its last character (``.+?(?<=a)`` seeing ``xx``: at 1, not 0).
_LAZY = _stdlib_re.compile(r"(?<!\\)(?:\\\\)*[*+?}]\?")


def _edge_blind(source: str) -> bool:
    """Whether `regex`'s partial matching may miss an attempt of ``source`` that more text could complete
    (`Delimiter.edge_blind`); errs towards yes."""
    return bool(_EDGE_BLIND.search(source) or ("(?<" in source and _LAZY.search(source)))
# An inline flag group that sets REVERSE: `(?r)`, `(?ri)`, `(?r:...)`.
_REVERSE_FLAG = _stdlib_re.compile(r"(?<!\\)((?:\\\\)*\(\?)([a-zA-Z0-9]*)r([a-zA-Z0-9-]*[:)])")
# The body of a fuzzy constraint `{...}` (`e`, `i<=2`, `1<=e<=3`, `2i+2d+1s<=4`, `e<=1:[a-z]`), read loosely:
# a quantifier `{2,3}` has no constraint letter, and mistaking odd text for a constraint only costs speed.
_FUZZY_BODY = _stdlib_re.compile(r"[\d\s<=+,eids]*[eids][\d\s<=+,eids]*(?::.*)?", _stdlib_re.DOTALL)


def _uses_fuzzy_matching(source: str) -> bool:
    """Whether a `regex` pattern has a fuzzy constraint (``(?:END){e<=1}``). Skips escapes (``\\p{Greek}``,
    ``\\N{...}``), character classes and comments; errs towards yes."""
    i, n = 0, len(source)
    while i < n:
        char = source[i]
        if char == "\\":
            i += 2
            if i < n and source[i] == "{" and source[i - 1].isalpha():  # \p{..}, \N{..}, \x{..}
                close = source.find("}", i)
                i = n if close < 0 else close + 1
            continue
        if char == "[":  # a character class: skip to its end (nested sets and [:posix:] classes included)
            depth, i = 1, i + 1
            if source.startswith("^", i):
                i += 1
            if source.startswith("]", i):
                i += 1
            while i < n and depth:
                if source[i] == "\\":
                    i += 1
                elif source.startswith("[:", i):
                    close = source.find(":]", i + 2)
                    i = i if close < 0 else close + 1
                elif source[i] == "[":
                    depth += 1
                elif source[i] == "]":
                    depth -= 1
                i += 1
            continue
        if source.startswith("(?#", i):
            close = source.find(")", i)
            i = n if close < 0 else close + 1
            continue
        if char == "{":
            close = source.find("}", i)
            if close > i and _FUZZY_BODY.fullmatch(source, i + 1, close):
                return True
        i += 1
    return False


def _forward_text(source: str) -> str:
    """A reverse pattern's text (``(?r)...``) without the REVERSE flag."""
    def drop_r(m):
        flags = m.group(2) + m.group(3)[:-1]
        if flags.replace("-", "") == "" and m.group(3).endswith(")"):
            return m.group(1)[:-2]  # the group was only `(?r)`
        return m.group(1) + flags.replace("r", "") + m.group(3)[-1]
    return _REVERSE_FLAG.sub(drop_r, source)


def _forward_version(source: str) -> Any:
    """A reverse pattern (``(?r)...``) compiled to search forwards, or None when that cannot be derived."""
    try:
        compiled = compile_pattern(_forward_text(source), regex.DOTALL)
    except regex.error:
        return None
    return None if compiled.flags & regex.REVERSE else compiled


# An unescaped named-group opening `(?P<name>`.
_GROUP_NAME = _stdlib_re.compile(r"(?<!\\)((?:\\\\)*)\(\?P<\w+>")


def _sre_tree(source: str):
    """The standard library's parse of a pattern (DOTALL), or None for syntax only the `regex` module knows."""
    import re._parser as sre_parse  # Python 3.11+

    try:
        return sre_parse.parse(source, _stdlib_re.DOTALL)
    except Exception:
        # Group names do not change what a pattern can match, and the standard library refuses a name used
        # twice (gpt-oss: `(?P<name>...)` in both alternatives): try again without them.
        try:
            return sre_parse.parse(_GROUP_NAME.sub(r"\1(?:", source), _stdlib_re.DOTALL)
        except Exception:
            return None


# A lookbehind body ``LITERAL(?:[^SET]|"(?:[^"\\]|\\.)*")*``: after the literal, only characters outside SET and
# whole JSON-style strings (the library's tool-call closes: "every string since the open is closed").
_BALANCED = _stdlib_re.compile(r'(?P<literal>(?:\\.|[^\\()\[\]|*+?{}.^$])+)\(\?:\[\^(?P<set>(?:\\.|[^\]\\])+)\]'
                       + _stdlib_re.escape(r'|"(?:[^"\\]|\\.)*")*'))


def balanced_quotes(behind: str) -> tuple | None:
    """For a lookbehind body of the balanced-quote form (`_BALANCED`) whose SET (plain characters) holds ``"`` and
    ``\\``: ``(literal, tail, outside, inside)``, ``tail`` the standard library's compiled
    ``(?:[^SET]|"(?:[^"\\]|\\.)*")*``, ``outside`` and ``inside`` the runs ``[^SET]*`` and ``[^"\\]*`` that
    `parsing.scanner._balanced_holds` reads it with. The
    lookbehind holds at p exactly when the literal ends at some k <= p and ``tail.fullmatch(text, k, p)`` (the
    ``regex`` module tries every such k; ``re`` reads the same characters the same way: the SET and the escapes are
    plain characters, ``.`` takes any with DOTALL). Its alternatives start with different characters, so a
    fullmatch runs in time linear in ``p - k``. None for any other body."""
    found = _BALANCED.fullmatch(behind)
    if found is None:
        return None
    try:
        literal = shapes_literal(found.group("literal"))
    except Exception:
        return None
    members, text, i = set(), found.group("set"), 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            escaped = text[i + 1]
            if escaped in "ntr":
                escaped = {"n": "\n", "t": "\t", "r": "\r"}[escaped]
            elif escaped.isalnum():
                return None  # a class escape (\s, \w) or another letter escape: not a plain character
            char, i = escaped, i + 2
        elif char in "-^[":
            return None  # a range, a nested set: not read here
        else:
            i += 1
        members.add(char)
    if not literal or '"' not in members or "\\" not in members:
        return None
    written = "".join("\\" + m if m in "\\]-^[" else m for m in sorted(members))
    return (literal, _stdlib_re.compile(f'(?:[^{written}]|"(?:[^"\\\\]|\\\\.)*")*', _stdlib_re.DOTALL),
            _stdlib_re.compile(f"[^{written}]*"), _stdlib_re.compile(r'[^"\\]*'))


def _window_safe(behind: str) -> bool:
    """Whether a lookbehind body that matches in a suffix of the text also matches in the whole text: nothing in
    it can tell the start of the suffix from the start of the stream (no ``^``/``\\A``, no ``\\b``/``\\B``, no
    lookbehind of its own). Lookaheads read forward, inside the suffix either way."""
    from re import _constants as c

    tree = _sre_tree(behind)
    if tree is None:
        return False

    def safe(items) -> bool:
        for op, av in items:
            if op is c.AT and av not in (c.AT_END, c.AT_END_STRING):
                return False
            if op in (c.ASSERT, c.ASSERT_NOT) and (av[0] == -1 or not safe(av[1])):
                return False
            if op is c.SUBPATTERN and not safe(av[-1]):
                return False
            if op is c.BRANCH and not all(safe(sub) for sub in av[1]):
                return False
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and not safe(av[2]):
                return False
            if op is getattr(c, "ATOMIC_GROUP", None) and not safe(av):
                return False
            if op is c.GROUPREF_EXISTS:
                return False
        return True

    return safe(tree)


def _pattern_shape(source: str) -> tuple[int, bool]:
    """(The shortest text the pattern can match; whether a complete match that ends before the end of the text
    stays a match at the same start whatever text follows). The second holds when nothing in the pattern can
    read the end of the text and succeed there: no negative lookaround, no ``$``/``\\Z``/``\\b``/``\\B``, no
    conditional. Unknown syntax: (0, False)."""
    from re import _constants as c

    tree = _sre_tree(source)
    if tree is None:
        return 0, False

    def stable(items) -> bool:
        for op, av in items:
            if op is c.ASSERT_NOT or op is c.GROUPREF_EXISTS:
                return False
            if op is c.AT and av not in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
                return False
            if op is c.ASSERT and not stable(av[1]):
                return False
            if op is c.SUBPATTERN and not stable(av[-1]):
                return False
            if op is c.BRANCH and not all(stable(sub) for sub in av[1]):
                return False
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and not stable(av[2]):
                return False
            if op is getattr(c, "ATOMIC_GROUP", None) and not stable(av):
                return False
        return True

    return tree.getwidth()[0], stable(tree)


def _pattern_reach(source: str) -> tuple[int | None, int | None, int | None]:
    """Upper bounds on (match width, lookahead reach, lookbehind reach) of a regex; None when unbounded or unknown.

    Uses the standard library's regex parser, which understands the common subset; for syntax only the `regex`
    module knows, all three are treated as unbounded (we then hold and keep text conservatively).
    """
    try:
        from re import _constants as sre_constants  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        import sre_constants  # type: ignore
    tree = _sre_tree(source)
    if tree is None:
        return None, None, None
    maxrepeat = sre_constants.MAXREPEAT
    hi = tree.getwidth()[1]
    width = None if hi >= maxrepeat else hi
    return width, _assert_reach(tree, 1, sre_constants), _assert_reach(tree, -1, sre_constants)


def _assert_reach(items, direction: int, c) -> int | None:
    """How far past the current position (``direction`` 1: ahead, -1: behind) assertions in ``items`` read."""
    reach = 0

    def bump(value):
        nonlocal reach
        if reach is not None:
            reach = None if value is None else max(reach, value)

    for op, av in items:
        if op is c.AT:
            if av in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
                bump(1)
            elif direction == 1 and av is c.AT_END:  # `$` also matches before a final newline
                bump(2)
            elif direction == 1 and av is c.AT_END_STRING:
                bump(1)
            elif direction == -1 and av in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
                bump(0)  # index 0 only: see `Delimiter.lookbehind`
        elif op in (c.ASSERT, c.ASSERT_NOT):
            assert_dir, sub = av
            inner = _assert_reach(sub, direction, c)
            if assert_dir == direction:
                hi = sub.getwidth()[1]
                bump(None if hi >= c.MAXREPEAT or inner is None else hi + inner)
            else:
                bump(inner)
        elif op is c.SUBPATTERN:
            bump(_assert_reach(av[-1], direction, c))
        elif op is c.BRANCH:
            for sub in av[1]:
                bump(_assert_reach(sub, direction, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            bump(_assert_reach(av[2], direction, c))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            bump(_assert_reach(av, direction, c))
        elif op is c.GROUPREF_EXISTS:
            for sub in av[1:]:
                if sub is not None:
                    bump(_assert_reach(sub, direction, c))
        if reach is None:
            return None
    return reach


def _compile_delimiter(spec: dict, path: str, field_name: str | None, kind: str,
                       literal_key: str, pattern_key: str) -> Delimiter | None:
    scope = f"Field '{field_name}'" if field_name is not None else "response_template"  # the reference's wording
    if literal_key in spec and pattern_key in spec:
        raise _scope_error(_join_path(path, pattern_key),
                           f"{scope}: cannot specify both '{literal_key}' and '{pattern_key}'")
    if literal_key in spec:
        raw = spec[literal_key]
        where = _join_path(path, literal_key)
        if isinstance(raw, str):
            literals = [raw]
        elif isinstance(raw, list):
            if not raw:
                raise _scope_error(where, f"{scope}: '{literal_key}' list must contain at least one literal")
            for i, item in enumerate(raw):
                if not isinstance(item, str):
                    raise _scope_error(f"{where}[{i}]", f"{scope}: '{literal_key}' list must contain only strings")
            literals = list(dict.fromkeys(raw))
        else:
            raise _scope_error(where, f"{scope}: '{literal_key}' must be a string or list of strings, "
                                      f"got {type(raw).__name__}")
        for i, lit in enumerate(literals):
            if lit == "":
                suffix = f"[{raw.index('')}]" if isinstance(raw, list) else ""
                raise _scope_error(where + suffix, f"{scope}: '{literal_key}' literals cannot be empty strings")
        if sum(len(s) for s in literals) > MAX_PATTERN_CHARS:
            raise _scope_error(where, f"{scope}: '{literal_key}' literals longer than {MAX_PATTERN_CHARS} characters "
                                      "in all are refused")
        ordered = sorted(literals, key=len, reverse=True)
        source = "|".join(regex.escape(s) for s in ordered)
        can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
        return Delimiter(field_name, kind, compile_pattern(source, regex.DOTALL), source, tuple(literals),
                         can_extend, max(len(s) for s in literals), 0, 0, tuple(ordered),
                         "".join(dict.fromkeys(s[0] for s in literals)), prefilter=make_prefilter(literals))
    if pattern_key in spec:
        source = spec[pattern_key]
        where = _join_path(path, pattern_key)
        if not isinstance(source, str):
            # The reference fails inside regex.compile with this TypeError text: a list/dict already where its
            # pattern cache hashes the value, anything else at the type check.
            raise _scope_error(where, f"unhashable type: '{type(source).__name__}'" if isinstance(source, (list, dict))
                               else "first argument must be a string or compiled pattern", type_error=True)
        if len(source) > MAX_PATTERN_CHARS:
            raise _scope_error(where, f"{scope}: {pattern_key} longer than {MAX_PATTERN_CHARS} characters is refused")
        try:
            compiled = compile_pattern(source, regex.DOTALL)
        except regex.error as exc:
            # The message is the reference's to the letter (it quotes `regex`, which can name the pattern's end);
            # `pattern_pos` says where the fault is, for the editor and lint.
            _, pos = regex_fault(source, exc)
            raise _scope_error(where, f"{scope}: invalid {pattern_key} regex: {exc}", pattern_pos=pos) from exc
        except RecursionError as exc:  # groups nested too deeply for the regex module's parser
            raise TemplateRecursionError(str(exc), where) from None
        try:
            return _pattern_delimiter(field_name, kind, source, compiled)
        except RecursionError:
            # Our readings of a pattern (reach, prefilter, shapes) recurse once per group; a pattern nested more
            # deeply than they can follow still runs, with no shortcut and a reach taken as unbounded.
            return Delimiter(field_name, kind, compiled, source, None, False, None, None, None,
                             attempt_regex=_k_attempt(source)[0], search_from_origin=True, unbounded=True,
                             reverse=bool(compiled.flags & regex.REVERSE), edge_blind=_edge_blind(source))
    return None


def _k_attempt(source: str) -> tuple[Any, str]:
    """For a pattern using ``\\K``: (the pattern without it, compiled, or None; its source), else (None, source)."""
    attempt = None
    attempt_source = source
    if _ESCAPE_K.search(source):
        attempt_source = _ESCAPE_K.sub(lambda m: m.group(0)[:-2], source)
        try:
            attempt = compile_pattern(attempt_source, regex.DOTALL)
        except regex.error:
            attempt, attempt_source = None, "(?"  # unknown reach: hold conservatively
    return attempt, attempt_source


def _pattern_delimiter(field_name: str | None, kind: str, source: str, compiled: Any) -> Delimiter:
    """The `Delimiter` of a compiled ``*_pattern``, with what reading the pattern tells (reach, prefilter,
    shapes, decided branches).

    Raises:
        RecursionError: the pattern is nested more deeply than the readings can follow.
    """
    attempt, attempt_source = _k_attempt(source)
    # \G only says where a match may start; for the reach of a match it is as if absent.
    anchored = bool(_ESCAPE_G.search(source))
    reach_source = _ESCAPE_G.sub(lambda m: m.group(0)[:-2], attempt_source) if anchored else attempt_source
    fuzzy = _uses_fuzzy_matching(source)
    reverse = bool(compiled.flags & regex.REVERSE)
    forward = _forward_version(attempt_source) if reverse and not anchored else None
    width, lookahead, lookbehind = (None, None, None) if fuzzy or reverse else _pattern_reach(reach_source)
    plain = attempt is None and not (anchored or fuzzy or reverse) and attempt_source == source
    prefilter = derive_prefilter(source) if plain else None
    min_width, stable = _pattern_shape(source) if prefilter is not None else (0, False)
    split, split_behind, split_branches, split_shapes = None, 0, None, None
    parts = split_leading_lookbehinds(source) if prefilter is not None and lookbehind is None else None
    if parts is not None:
        behinds, alternatives = parts
        sources = [lookbehind_variant(alternatives, holds) for holds in range(1 << len(behinds))]
        reaches = [_pattern_reach(variant)[2] for variant in sources]
        if None not in reaches:
            try:
                rests = ["|".join(alt for index, alt in alternatives if index == i) for i in range(len(behinds))]
                guards = tuple((compile_pattern(f"(?<={behind})", regex.DOTALL), compile_pattern(rest, regex.DOTALL),
                                _window_safe(behind), shape_of(rest, compile_pattern(rest, regex.DOTALL).flags),
                                balanced_quotes(behind) or escape_strings(behind)
                                or lookbehind_reader(behind))
                               for behind, rest in zip(behinds, rests))
                variants = tuple(compile_pattern(variant, regex.DOTALL) for variant in sources)
                split = (guards, variants)
                split_behind = max(reaches)
                split_branches = tuple(decided_branches(v, rx) for v, rx in zip(sources, variants))
                split_shapes = tuple(shape_of(v, rx.flags) for v, rx in zip(sources, variants))
                if None in split_shapes:
                    split_shapes = None
            except regex.error:
                split = None
    edge_blind, edge_regex = _edge_blind(source), None
    if edge_blind and not fuzzy:
        # Run on the buffer alone: a split delimiter's lookbehinds read before it, so they are dropped (held more).
        edge_source = _forward_text(attempt_source) if reverse else attempt_source
        edge_regex = compile_edge(edge_source, compiled.flags, lookbehinds=split is None)
    if split is not None:
        branches = () if any(b is not None for b in split_branches) else None
    else:
        branches = decided_branches(source, compiled) if prefilter is not None else None
    return Delimiter(field_name, kind, compiled, source, None, False, width, lookahead, lookbehind,
                     attempt_regex=attempt, search_from_origin=anchored or fuzzy or reverse,
                     unbounded=fuzzy or (reverse and forward is None), reverse=reverse, forward_regex=forward,
                     prefilter=prefilter, suffixes=derive_suffixes(source) if prefilter is not None else None,
                     min_width=min_width, stable=stable, split=split, split_lookbehind=split_behind,
                     branches=branches, split_branches=split_branches,
                     edge_blind=edge_blind, edge_regex=edge_regex,
                     shape=shape_of(source, compiled.flags) if prefilter is not None and split is None else None,
                     split_shapes=split_shapes if split is not None else None)


def _build_field(name: str, spec: Any) -> FieldSpec:
    path = f"fields.{name}"
    scope = f"Field '{name}'"  # messages are the reference's, to the letter
    if not isinstance(spec, dict):
        raise _scope_error(path, f"{scope} must be a dict")
    unknown = set(spec) - FIELD_KEYS
    if unknown:
        raise _scope_error(_join_path(path, sorted(unknown)[0]), f"{scope}: unknown keys {sorted(unknown)}")
    content = spec.get("content", "text")
    try:
        known = content in CONTENT_PARSERS
    except TypeError as exc:  # an unhashable name: the reference lets this TypeError through
        raise _scope_error(_join_path(path, "content"), str(exc), type_error=True) from None
    if not known:
        raise _scope_error(_join_path(path, "content"),
                           f"{scope}: unknown content parser '{content}'. Available: {sorted(CONTENT_PARSERS)}")
    open_delim = _compile_delimiter(spec, path, name, "open", "open", "open_pattern")
    close_delim = _compile_delimiter(spec, path, name, "close", "close", "close_pattern")
    join = spec.get("join")
    if join is not None and not isinstance(join, str):
        raise _scope_error(_join_path(path, "join"), f"{scope}: 'join' must be a string, got {type(join).__name__}")
    if join is not None and not spec.get("repeats", False):
        raise _scope_error(_join_path(path, "join"), f"{scope}: 'join' requires 'repeats': true")
    transform = spec.get("transform")
    transform_each = spec.get("transform_each", False)
    if not isinstance(transform_each, bool):
        raise _scope_error(_join_path(path, "transform_each"),
                           f"{scope}: transform_each must be a bool, got {type(transform_each).__name__}")
    if transform_each and transform is None:
        raise _scope_error(_join_path(path, "transform_each"),
                           f"{scope}: transform_each is set but no transform was provided")
    if transform is not None:
        check_transform_strings(transform, _join_path(path, "transform"), scope)
    else:
        named = {key: set(d.regex.groupindex) for d, key in ((open_delim, "open_pattern"), (close_delim, "close_pattern"))
                 if d is not None and d.regex.groupindex}
        if named:
            raise _scope_error(
                _join_path(path, next(iter(named))),
                f"{scope}: open_pattern/close_pattern declares named group(s) {sorted(set().union(*named.values()))}, "
                "but the field has no 'transform'. Named captures are only surfaced through a 'transform' template "
                "(where they appear alongside 'content'). Either add a 'transform' that uses the captures, or remove "
                "the named groups from the pattern.")
    return FieldSpec(
        name=name, open=open_delim, close=close_delim, content=content,
        content_args=spec.get("content_args", {}), repeats=spec.get("repeats", False), join=join,
        optional=spec.get("optional", True), transform=transform, transform_each=transform_each,
        transform_fn=compile_transform(transform) if transform is not None else None,
    )


def _validate_dict(spec: Any) -> CompiledTemplate:
    with template_code_budget():  # the template's shapes share one budget of generated code
        return _validate_spec(spec)


def _validate_spec(spec: Any) -> CompiledTemplate:
    if not isinstance(spec, dict):
        raise _scope_error("", f"response_template must be a dict, got {type(spec).__name__}")
    version = spec.get("version", 1)
    if version != 1:
        raise _scope_error("version", f"Unsupported response_template version: {version}")
    unknown = set(spec) - TEMPLATE_KEYS
    if unknown:
        raise _scope_error(sorted(unknown)[0], f"Unknown keys in response_template: {sorted(unknown)}")
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, dict):
        raise _scope_error("defaults", "response_template.defaults must be a dict")
    fields_raw = spec.get("fields", {})
    if not isinstance(fields_raw, dict) or not fields_raw:
        raise _scope_error("fields", "response_template.fields must be a non-empty dict")
    if len(fields_raw) > MAX_FIELDS:
        raise _scope_error("fields", f"response_template.fields: more than {MAX_FIELDS} fields are refused")
    _check_compile_sizes(spec)
    fields = {name: _build_field(name, raw) for name, raw in fields_raw.items()}
    implicit = [name for name, f in fields.items() if f.open is None]
    if len(implicit) > 1:
        raise _scope_error(f"fields.{implicit[1]}",
                           "At most one field may omit 'open'/'open_pattern' (that field becomes the "
                           f"implicit-open / leftover sink). Found: {', '.join(implicit)}")
    anchor = _compile_delimiter(spec, "", None, "start_anchor", "start_anchor", "start_anchor_pattern")
    if anchor is None:
        raise _scope_error("start_anchor", "response_template must define 'start_anchor' or 'start_anchor_pattern'.")
    return CompiledTemplate(spec=deepcopy(spec), fields=fields, implicit=implicit[0] if implicit else None,
                            defaults=deepcopy(defaults), start_anchor=anchor, field_names=tuple(fields))


def _pattern_sources(spec: dict):
    """(JSON path, source) of every regex a template compiles: the start anchor, open and close patterns, and
    ``tag_pattern`` in ``content_args`` and nested ``value_parser`` args."""
    if isinstance(spec.get("start_anchor_pattern"), str):
        yield "start_anchor_pattern", spec["start_anchor_pattern"]
    for name, field in spec["fields"].items():
        if not isinstance(field, dict):
            continue
        for key in ("open_pattern", "close_pattern"):
            if isinstance(field.get(key), str):
                yield f"fields.{name}.{key}", field[key]
        args, path = field.get("content_args"), f"fields.{name}.content_args"
        for _depth in range(64):  # value parsers nest; the JSON depth limit ends the chain long before
            if not isinstance(args, dict):
                break
            if isinstance(args.get("tag_pattern"), str):
                yield f"{path}.tag_pattern", args["tag_pattern"]
            nested = args.get("value_parser")
            args, path = (nested.get("args"), f"{path}.value_parser.args") if isinstance(nested, dict) else (None, "")


def template_compile_size(spec: dict) -> int:
    """The `compile_size` of every pattern of a validated template dict (delimiters, start anchor, ``tag_pattern``),
    summed: at most `MAX_TEMPLATE_SIZE`. Literal delimiters are not counted (they weigh their characters)."""
    return sum(compile_size(source) for _, source in _pattern_sources(spec))


def _check_compile_sizes(spec: dict) -> None:
    """Refuse patterns whose compiling alone would take seconds and gigabytes (`parsing.regex_cost`), before
    any is compiled."""
    total = 0
    for where, source in _pattern_sources(spec):
        why = too_large(source)
        if why is not None:
            raise _scope_error(where, f"{where.rsplit('.', 1)[-1]} refused: {why}")
        total += compile_size(source)
        if total > MAX_TEMPLATE_SIZE:
            raise _scope_error(where, f"{where.rsplit('.', 1)[-1]} refused: the template's patterns together expand "
                                      f"to more than {MAX_TEMPLATE_SIZE:,} items when compiled")


def load_template(template: Any) -> CompiledTemplate:
    """Validate and compile a response template.

    Args:
        template: a dict (the ``tokenizer.response_template`` format), JSON
            text, a path (``str`` or ``os.PathLike``) to a file holding JSON text (any
            name), or a `CompiledTemplate` (returned unchanged). A ``str`` is JSON text
            when it starts with ``{``, ``[`` or ``"`` (after whitespace) and a path
            when it names a file or looks like one (one line ending in ``.json`` or
            holding a path separator); for text from an editor or a request, where a
            string must never name a file, use `loads_template`.

    Returns:
        The `CompiledTemplate`.

    Raises:
        TemplateError: (a ``ValueError``) the template is invalid; ``.path``
            names the faulty key, ``.pattern_pos`` the offset in a bad regex,
            ``.line``/``.column`` the place in the JSON text when there was one.
        TemplateTypeError: where transformers raises ``TypeError``.
        FileNotFoundError: a path (or a string that looks like one) with no file there.
        OSError: a file that cannot be read; UnicodeDecodeError (a ValueError) one that is not UTF-8.
    """
    if isinstance(template, CompiledTemplate):
        return template
    if isinstance(template, os.PathLike):
        return _load_file(template)
    if isinstance(template, str):
        return _load_text_or_path(template)
    try:
        size = len(json.dumps(template, default=str))
    except (TypeError, ValueError):
        size = 0
    except RecursionError:
        raise TemplateError("the template is nested too deeply (a transform, most likely)") from None
    if size > MAX_TEMPLATE_JSON_CHARS:
        raise TemplateError(f"templates larger than {MAX_TEMPLATE_JSON_CHARS} characters of JSON are refused")
    try:
        return _validate_dict(template)
    except TemplateError:
        raise  # a TemplateRecursionError names its pattern
    except RecursionError:
        raise TemplateError("the template is nested too deeply (a transform, most likely)") from None


def _load_file(path: str | os.PathLike) -> CompiledTemplate:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_TEMPLATE_JSON_CHARS + 1)
    except FileNotFoundError as exc:
        raise FileNotFoundError(exc.errno, "no response template file at this path", os.fspath(path)) from None
    try:
        return loads_template(text)
    except TemplateError as exc:
        raise exc.from_file(os.fspath(path)) from None


def _looks_like_path(text: str) -> bool:
    one_line = text.strip()
    return bool(one_line) and "\n" not in one_line and (
        one_line.endswith(".json") or "/" in one_line or os.sep in one_line
        or (os.altsep is not None and os.altsep in one_line))


def _load_text_or_path(text: str) -> CompiledTemplate:
    """A ``str`` given to `load_template`: JSON text, or the path of a file holding it."""
    if text.lstrip()[:1] in ("{", "[", '"'):
        return loads_template(text)
    if "\n" not in text.strip() and os.path.isfile(text.strip()):
        return _load_file(text.strip())
    if _looks_like_path(text):
        return _load_file(text.strip())  # raises FileNotFoundError naming the path
    try:
        return loads_template(text)
    except TemplateError as exc:
        if exc.message.startswith("not valid JSON") and "\n" not in text.strip():
            raise TemplateError(f"{exc.message}; and no file named {text.strip()!r} exists", exc.path,
                                line=exc.line, column=exc.column) from None
        raise


def loads_template(text: str) -> CompiledTemplate:
    """Validate and compile a response template given as JSON text (never read as a path).

    For text from an editor or a request, where a string must not name a file on this machine.

    Raises:
        TemplateError: invalid JSON (with ``.line``/``.column``), or an invalid template (with ``.path`` and
            the ``.line``/``.column`` of that path in `text` where it can be found).
        TemplateTypeError: where transformers raises ``TypeError``.
    """
    if not isinstance(text, str):
        raise TemplateError(f"template text must be a string, not {type(text).__name__}")
    if len(text) > MAX_TEMPLATE_JSON_CHARS:
        raise TemplateError(f"template text longer than {MAX_TEMPLATE_JSON_CHARS} characters is refused")
    try:
        template = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos == 0 and text.startswith("\ufeff"):  # json's own words advise a codec the user never chose
            raise TemplateError("not valid JSON: the template starts with a byte-order mark (U+FEFF); remove it",
                                "", line=1, column=1) from exc
        raise TemplateError(f"not valid JSON: {exc.msg}", "", line=exc.lineno, column=exc.colno) from exc
    except RecursionError:
        raise TemplateError("the JSON is nested too deeply to be a response template") from None
    except ValueError as exc:  # an integer longer than Python converts: its message names sys internals, no place
        raise _long_number_error(text) from exc
    try:
        return _validate_dict(template)
    except TemplateError as exc:
        line, column = locate_json_path(text, exc.path)
        raise exc.located(line, column) from exc
    except RecursionError:
        raise TemplateError("the template is nested too deeply (a transform, most likely)") from None

_JSON_STRING = _stdlib_re.compile(r'"(?:[^"\\]|\\.)*"', _stdlib_re.S)


def _long_number_error(text: str) -> TemplateError:
    """The `TemplateError` for JSON ``text`` that ``json.loads`` refused with a plain ValueError: a number with
    more digits than Python converts to an int (``sys.get_int_max_str_digits()``, 4,300 by default), located at
    the first such number outside strings."""
    limit = sys.get_int_max_str_digits() or float("inf")
    blanked = _JSON_STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)  # same offsets
    for m in _stdlib_re.finditer(r"\d+", blanked):
        if len(m.group()) > limit:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            return TemplateError(f"not valid JSON: a number with {len(m.group()):,} digits, more than the "
                                 f"{limit:,} a template number may have", "", line=line, column=column)
    return TemplateError("not valid JSON: a number too long to read")


_PATH_TOKEN = _stdlib_re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _split_path(path: str) -> list:
    """``"fields.a.open[1]"`` -> ``["fields", "a", "open", 1]``. Field names containing dots are ambiguous; the
    locator then finds the nearest match it can."""
    out: list = []
    for name, index in _PATH_TOKEN.findall(path):
        out.append(int(index) if index else name)
    return out


def locate_json_path(text: str, path: str, char: int | None = None) -> tuple[int | None, int | None]:
    """1-based (line, column) of the value at ``path`` inside the JSON ``text``.

    For an object member the position is that of its key; for a list item, of
    the item. Returns ``(None, None)`` when the path cannot be found (e.g. the
    path names a key that is missing, such as a required key). Used by the
    playground to point the editor at a fault.

    With ``char`` (a 0-based offset into the string value at ``path``, such as a `TemplateError`'s
    ``pattern_pos``): the position of that character of the string in the text, an escape (``\\\\``, ``\\"``,
    ``\\n``, ``\\u00e9``, a surrogate pair ``\\ud83d\\ude00``) counting as the one character it stands for; the
    closing quote for ``char`` equal to the string's length. ``(None, None)`` when the value at ``path`` is not a
    string, is shorter, or cannot be found (no nearest ancestor then). Columns count characters (code points).
    """
    if char is not None:
        start = _json_offset(text, path, value=True) if path else None
        pos = None if start is None else _json_string_char(text, start, char)
    elif not path:
        return (1, 1) if text else (None, None)
    else:
        pos = _json_offset(text, path, value=False)
        if pos is None:
            # Fall back to the deepest existing ancestor, so the editor still points somewhere useful.
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            if parent and parent != path:
                return locate_json_path(text, parent)
    if pos is None:
        return None, None
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


# One escape of a JSON string; a high and a low surrogate escape together decode to one character.
_JSON_ESCAPE = _stdlib_re.compile(r'\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}'
                                  r'|u[0-9a-fA-F]{4}|["\\/bfnrt])')


def _json_string_char(text: str, start: int, char: int) -> int | None:
    """Offset in ``text`` of character ``char`` of the JSON string literal at ``start`` (its opening quote), or
    None when no string starts there or it is shorter than ``char``."""
    if char < 0 or start >= len(text) or text[start] != '"':
        return None
    i = start + 1
    for _ in range(char):
        if i >= len(text) or text[i] == '"':
            return None
        if text[i] == "\\":
            m = _JSON_ESCAPE.match(text, i)
            if m is None:
                return None
            i = m.end()
        else:
            i += 1
    return i if i < len(text) else None


def _json_offset(text: str, path: str, value: bool) -> int | None:
    """Offset in the JSON ``text`` of the member key (``value`` False) or the value (True) at ``path``, or of
    the list item there; None when the path is not found."""
    wanted = _split_path(path)
    decoder = json.JSONDecoder()
    ws = _stdlib_re.compile(r"[ \t\n\r]*")

    def skip(i):
        return ws.match(text, i).end()

    def value_end(i):
        try:
            _, end = decoder.raw_decode(text, i)
            return end
        except json.JSONDecodeError:
            return None

    def find(i, depth):
        i = skip(i)
        if depth == len(wanted):
            return i
        target = wanted[depth]
        if i < len(text) and text[i] == "{" and isinstance(target, str):
            i = skip(i + 1)
            while i < len(text) and text[i] != "}":
                key_start = i
                try:
                    key, i = decoder.raw_decode(text, i)
                except json.JSONDecodeError:
                    return None
                i = skip(i)
                if i >= len(text) or text[i] != ":":
                    return None
                i = skip(i + 1)
                if key == target:
                    if depth + 1 == len(wanted) and not value:
                        return key_start
                    return find(i, depth + 1)
                i = value_end(i)
                if i is None:
                    return None
                i = skip(i)
                if i < len(text) and text[i] == ",":
                    i = skip(i + 1)
            return None
        if i < len(text) and text[i] == "[" and isinstance(target, int):
            i = skip(i + 1)
            index = 0
            while i < len(text) and text[i] != "]":
                if index == target:
                    return find(i, depth + 1)
                i = value_end(i)
                if i is None:
                    return None
                i = skip(i)
                if i < len(text) and text[i] == ",":
                    i = skip(i + 1)
                index += 1
            return None
        return None

    return find(0, 0)


__all__ = ["CompiledTemplate", "Delimiter", "FieldSpec", "TemplateRecursionError", "TemplateTypeError",
           "load_template", "locate_json_path", "regex_fault", "PLACEHOLDER"]
