"""The edge pattern of a delimiter regex: where more text could still make (or change) a match.

While streaming, the scanner asks `regex`'s partial matching whether a match attempt reaches the end of the buffer.
For most patterns that answer is exact. It is not for assertions that `regex` decides at the end of the text as if
the stream ended there: ``(?!\\Z)``, ``(?!$)``, ``\\b``, ``\\B``, ``\\m``, ``\\M`` can be false at the buffer edge and
true once more text arrives, and an attempt that fails there is not reported as partial
(``(?:\\w+b|x>:)(?!\\Z)==`` seeing ``qx>:`` reports nothing at ``x``, although ``qx>:==z`` matches there). Nor for a
lazy repeat followed by a lookbehind (``.+?(?<=a)`` seeing ``xx`` is reported partial at 1 only, not at 0): a
quirk of `regex`'s partial matching.

`edge_source` rewrites such a pattern into one whose partial matching `regex` answers exactly, by construction,
and that agrees with the original wherever the text already decides:

* ``\\b``, ``\\B``, ``\\m``, ``\\M`` become ``(?:\\b|\\Z)``: their own value inside the text, true at the edge.
* a lookahead ``L`` with body ``X`` becomes ``(?:L|(?=X'\\Z.))``: its own value, or, where an attempt of its body
  reaches the edge (``X'`` is ``X`` rewritten), a partial match, which more text could change. A lookbehind becomes
  ``(?:L|\\Z)`` (dropped altogether where its text is not in the buffer: a split delimiter's).
* in a pattern with a lookbehind, lazy repeats become greedy (the same paths, tried in another order; outside atomic
  groups and possessive repeats, where the order decides what they commit to): this avoids the quirk above.
  Conditionals become plain groups (every branch allowed). Atomic groups and possessive repeats stay: what they
  commit to differs between the cut text and more text only where an assertion or a path reached the edge, and that
  path is reported partial.
* ``$`` becomes ``(?:$|(?=.?\\Z.))``: its own value, or a partial match within a character of the edge (before a
  final newline it holds; more text may end that). ``\\Z`` stays: true at the edge, it lets an attempt go on to it.
* the whole is followed by ``\\Z`` and one more character: a path that ends before the edge fails, one that reaches
  it (or reads up to it) is partial, none is complete, so a partial search returns the leftmost position from which
  an attempt reaches the edge.

So the leftmost partial match of the edge pattern is at or before every position where appending text could make or
change a match of the original: holding from there only ever adds holds, never loses a match (what it adds, the
next feeds or the end of the stream decide), and away from the buffer edge it adds none.
"""

from __future__ import annotations

from typing import Any

import regex

from .regex_cost import compile_pattern

# After the rewritten pattern: the buffer edge, then a character (never there, so never a complete match).
_AT_EDGE = r"\Z[\s\S]"


class _Unsupported(Exception):
    """Syntax the rewriter does not read (the scanner then holds conservatively)."""


def edge_source(source: str, v1: bool = False, lookbehinds: bool = True, verbose: bool = False) -> str | None:
    """The edge pattern of ``source`` (see the module docstring), or None for syntax this reader does not follow:
    back references and group calls (the rewrite copies groups, so their numbers change), a verbose-mode group
    inside a pattern that is not verbose (or the reverse), malformed or too deeply nested text. Fuzzy constraints
    are not read (``{e<=1}`` is copied as text: a fuzzy delimiter is held whole anyway).

    Args:
        source: a pattern for the `regex` module (DOTALL), without ``\\K``.
        v1: the pattern uses `regex`'s VERSION1 syntax (nested character sets).
        verbose: the whole pattern is in verbose mode (whitespace and ``#`` comments outside sets are dropped).
        lookbehinds: False: every lookbehind is taken as true (for a split delimiter, whose lookbehinds read text
            before the buffer the pattern runs on).
    """
    reader = _Reader(source, v1, lookbehinds, verbose)
    try:
        body = reader.sequence()
        if reader.i != len(source):
            return None  # an unbalanced ")"
    except (_Unsupported, IndexError, RecursionError):
        return None
    return f"(?:{body}){_AT_EDGE}"


def compile_edge(source: str, flags: int, lookbehinds: bool = True) -> Any:
    """`edge_source` compiled (DOTALL), or None when it cannot be derived or does not compile."""
    text = edge_source(source, bool(flags & regex.VERSION1), lookbehinds, bool(flags & regex.VERBOSE))
    if text is None:
        return None
    try:
        return compile_pattern(text, regex.DOTALL)
    except (regex.error, RecursionError, OverflowError):
        return None


class _Reader:
    """A recursive reader of pattern text that copies it, rewriting as `edge_source` says."""

    def __init__(self, source: str, v1: bool, lookbehinds: bool, verbose: bool) -> None:
        self.s = source
        self.i = 0
        self.v1 = v1
        self.lookbehinds = lookbehinds
        self.verbose = verbose
        # Lazy repeats become greedy: only needed (and done) in a pattern with a lookbehind (`regex`'s quirk).
        self.greedy = "(?<" in source

    def skip(self) -> None:
        """In verbose mode: past whitespace and ``#`` comments."""
        s = self.s
        while self.verbose and self.i < len(s) and (s[self.i].isspace() or s[self.i] == "#"):
            if s[self.i] == "#":
                newline = s.find("\n", self.i)
                self.i = len(s) if newline < 0 else newline
            self.i += 1

    def sequence(self) -> str:
        """Alternatives up to the ``)`` closing the current group (not consumed) or the end."""
        s, out = self.s, []
        self.skip()
        while self.i < len(s) and s[self.i] != ")":
            if s[self.i] == "|":
                out.append("|")
                self.i += 1
                continue
            start, greedy = self.i, self.greedy
            item = self.item()
            self.skip()
            quantifier = self.quantifier()
            if quantifier.endswith("+") and len(quantifier) > 1 and greedy:
                # Possessive: what it commits to must not change: the item again, its lazy repeats as they were.
                self.i, self.greedy = start, False
                item = self.item()
                self.skip()
                quantifier = self.quantifier()
                self.greedy = greedy
            out.append(item)
            out.append(quantifier)
            self.skip()
        return "".join(out)

    def quantifier(self) -> str:
        """A repeat after an item, or ''; a lazy one made greedy (`greedy`: outside atomic groups and possessive
        repeats, in a pattern with a lookbehind)."""
        s, i = self.s, self.i
        if i >= len(s):
            return ""
        if s[i] in "*+?":
            text, i = s[i], i + 1
        elif s[i] == "{":
            close = s.find("}", i)
            body = s[i + 1:close] if close > 0 else ""
            if close < 0 or not _is_count(body):
                return ""  # a literal "{" (fuzzy constraints: the caller does not ask)
            text, i = s[i:close + 1], close + 1
        else:
            return ""
        self.i = i
        self.skip()
        if self.i < len(s) and s[self.i] in "?+":
            if s[self.i] == "+" or not self.greedy:
                text += s[self.i]
            self.i += 1
        return text

    def item(self) -> str:
        s, i = self.s, self.i
        char = s[i]
        if char == "\\":
            return self.escape()
        if char == "[":
            self.i = _class_end(s, i, self.v1)
            return s[i:self.i]
        if char == "(":
            return self.group()
        self.i += 1
        if char == "$":
            # Before a final newline ``$`` holds, with more text it may not: partial within a character of the edge.
            return f"(?:$|(?=[\\s\\S]?{_AT_EDGE}))"
        return char

    def escape(self) -> str:
        s, i = self.s, self.i
        code = s[i + 1]
        self.i = i + 2
        if code in "bBmM":
            return f"(?:\\{code}|\\Z)"
        if code in "123456789" or code == "g":
            raise _Unsupported("back reference")  # the rewrite copies groups: their numbers change
        if code in "pPNxuU" and self.i < len(s) and s[self.i] in "{<":
            close = s.find("}" if s[self.i] == "{" else ">", self.i)
            if close < 0:
                raise _Unsupported("escape")
            self.i = close + 1
        return s[i:self.i]

    def group(self) -> str:
        s, i = self.s, self.i
        if not s.startswith("(?", i):
            self.i = i + 1
            return "(?:" + self.body()  # (captures are not needed: no group is referred to)
        head = s[i + 2]
        if head == "#":
            close = s.find(")", i)
            if close < 0:
                raise _Unsupported("comment")
            self.i = close + 1
            return ""
        if head in "=!" or head == "<" and s[i + 3] in "=!":
            behind = head == "<"
            self.i = i + (4 if behind else 3)
            inner = self.sequence()
            self.close()
            own = s[i:self.i]
            if behind:
                return f"(?:{own}|\\Z)" if self.lookbehinds else ""
            return f"(?:{own}|(?=(?:{inner}){_AT_EDGE}))"
        if head == ">":  # atomic: what it commits to must not change, its lazy repeats stay
            greedy, self.greedy = self.greedy, False
            self.i = i + 3
            text = "(?>" + self.body()
            self.greedy = greedy
            return text
        if head == "(":  # a conditional: every branch allowed
            self.i = i + 3
            if s[self.i] == "?":
                self.i = i + 2
                self.group()  # a lookaround condition: read, then dropped
            else:
                close = s.find(")", self.i)
                if close < 0:
                    raise _Unsupported("condition")
                self.i = close + 1
            return "(?:" + self.sequence() + "|" + self.close()
        if head in "P<'" and not s.startswith(("(?P=", "(?P>"), i):
            end = s.find(">" if head != "'" else "'", i + 3)
            if end < 0:
                raise _Unsupported("group name")
            self.i = end + 1
            return "(?:" + self.body()
        if head in "P&R+-0123456789" and not s[i + 2:].startswith(tuple("-" + f for f in "aiLmsuxwfbV")):
            raise _Unsupported("reference")  # (?P=n), (?P>n), (?&n), (?R), (?1): group numbers change
        if head in ":|":
            self.i = i + 3
            return s[i:self.i] + self.body()
        # Inline flags (``(?i)``, ``(?s-i:...)``), or a call/back reference (``(?P=n)``, ``(?1)``, ``(?R)``, ``(?&n)``).
        j = i + 2
        while j < len(s) and s[j] not in ":)":
            j += 1
        if j >= len(s):
            raise _Unsupported("group")
        flags = s[i + 2:j]
        if flags[:1] not in ("P", "&", "R", "+", "-") and not flags[:1].isdigit() and "x" in flags and (
                s[j] == ":" or not self.verbose):
            raise _Unsupported("verbose")  # a verbose group in a pattern that is not (or the reverse)
        self.i = j + 1
        if s[j] == ")":
            return s[i:self.i]
        return s[i:self.i] + self.body()

    def body(self) -> str:
        return self.sequence() + self.close()

    def close(self) -> str:
        if self.i >= len(self.s) or self.s[self.i] != ")":
            raise _Unsupported("unclosed group")
        self.i += 1
        return ")"


def _is_count(body: str) -> bool:
    """Whether ``{body}`` is a repeat count (``{3}``, ``{2,}``, ``{,4}``, ``{1,5}``) rather than literal text."""
    lo, comma, hi = body.partition(",")
    return bool((lo.isdigit() or (comma and not lo)) and (not hi or hi.isdigit()) and (lo or hi))


def _class_end(s: str, i: int, v1: bool) -> int:
    """Index just past the character class that starts at ``s[i] == "["``."""
    depth, i = 1, i + 1
    if s.startswith("^", i):
        i += 1
    if s.startswith("]", i):
        i += 1
    while depth:
        if s[i] == "\\":
            i += 1
        elif s.startswith("[:", i) and s.find(":]", i + 2) > 0:
            i = s.find(":]", i + 2) + 1
        elif s[i] == "[" and v1:
            depth += 1
        elif s[i] == "]":
            depth -= 1
        i += 1
    return i
