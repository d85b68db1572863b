"""Example strings for a delimiter regex: what a model would write where the pattern fires.

The probe suite (`parsing.doctor.probe`) builds model outputs from a template's own delimiters.
A literal delimiter is its own example; for a pattern this module walks the standard library's
parse tree of the regex and writes one string per top-level alternative, with chosen values for
named groups (a tool name for ``(?P<name>...)``) and the text it wrote for every other group.

Lookarounds, anchors and word boundaries are conditions, not text: they write nothing. An
alternative that writes nothing (a zero-width close such as ``(?=\\[TOOL_CALLS\\])``) is reported as
zero-width, with the text its lookahead waits for as its trigger.

Only the common regex subset is understood (the one `re` parses); for syntax only the ``regex``
module knows, `pattern_samples` raises `SampleError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c  # type: ignore
    import sre_parse as _p  # type: ignore

import re as _re

from parsing.decided import top_level_branches

__all__ = ["Sample", "SampleError", "pattern_samples"]

# Characters tried, in order, for a character class or `.`: readable ones first.
_CANDIDATES = "a0x_ -.:/\n" + "bcdefghijklmnopqrstuvwyz" + "ABCXYZ" + "123456789" + "\t{}[]()<>\"'=,;|!?#$%&*+@^`~\\"


_SPACE = "\x00"  # a `\s*` / `\s+` written as a placeholder until its neighbours are known


def _resolve_space(text: str) -> str:
    r"""`\s*` between two tags (``<tool_call>\s*<function=``) is a newline in real formats; elsewhere
    (``<|tool_call_begin|>\s*functions.f:0``) models write nothing there."""
    out = []
    for i, ch in enumerate(text):
        if ch != _SPACE:
            out.append(ch)
            continue
        before = text[:i].rstrip(_SPACE)
        after = text[i + 1:].lstrip(_SPACE)
        if before.endswith(">") and after.startswith("<") and not (out and out[-1] == "\n"):
            out.append("\n")
    return "".join(out)


class SampleError(ValueError):
    """The pattern uses syntax this module cannot write an example for."""


@dataclass(frozen=True)
class Sample:
    """One example for one top-level alternative of a pattern.

    Attributes:
        text: the string written (``""`` for a zero-width alternative).
        groups: named group -> the text written for it (the given value, or what was generated).
        trigger: for a zero-width alternative, the text its first lookahead waits for (``"[TOOL_CALLS]"``
            for ``(?=\\[TOOL_CALLS\\])``); ``""`` otherwise.
        separator: the alternative writes text and then needs a lookahead to hold (``;\\s*(?=\\{)``): it sits
            between two items (two calls) rather than after the last one.
    """

    text: str
    groups: dict = field(default_factory=dict)
    trigger: str = ""
    separator: bool = False

    @property
    def zero_width(self) -> bool:
        """True when the alternative matches without consuming text."""
        return self.text == ""


def _dedupe_group_names(source: str) -> tuple[str, dict]:
    """`re` refuses a group name used twice (``regex`` allows it in alternatives): rename repeats ``name__2``..."""
    seen: dict[str, int] = {}
    aliases: dict[str, str] = {}

    def rename(m):
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] == 1:
            return m.group(0)
        alias = f"{name}__{seen[name]}"
        aliases[alias] = name
        return f"(?P<{alias}>"

    return _re.sub(r"\(\?P<(\w+)>", rename, source), aliases


class _Writer:
    def __init__(self, values: dict, names: dict, aliases: dict):
        self.values = values  # group name -> text to write
        self.names = names  # group number -> name
        self.aliases = aliases
        self.groups: dict[int, str] = {}

    def name_of(self, number) -> str | None:
        name = self.names.get(number)
        return self.aliases.get(name, name) if name else None

    def seq(self, items) -> str:
        return "".join(self.node(op, av) for op, av in items)

    def node(self, op, av) -> str:
        if op is _c.LITERAL:
            return chr(av)
        if op is _c.NOT_LITERAL:
            return next(ch for ch in _CANDIDATES if ord(ch) != av)
        if op is _c.ANY:
            return "x"
        if op is _c.IN:
            return self.char_in(av)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            if low == 0 and high == 1:  # an optional part: models usually write it (`(?:functions\.)?`)
                return self.seq(sub)
            if low <= 1 <= high and _is_space(sub):  # resolved in `_resolve_space` once the neighbours are known
                return _SPACE
            return "".join(self.seq(sub) for _ in range(low))
        if op is _c.SUBPATTERN:
            number, _add, _del, sub = av
            name = self.name_of(number)
            if name is not None and name in self.values:
                text = str(self.values[name])
            else:
                text = self.seq(sub)
            if number is not None:
                self.groups[number] = text
            return text
        if op is getattr(_c, "ATOMIC_GROUP", None):
            return self.seq(av)
        if op is _c.BRANCH:
            return self.seq(av[1][0])
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            return ""
        if op is _c.GROUPREF:
            return self.groups.get(av, "")
        if op is _c.CATEGORY:
            return self.char_in([(op, av)])
        raise SampleError(f"cannot write an example for regex element {op}")

    def char_in(self, items) -> str:
        negate = bool(items) and items[0][0] is _c.NEGATE
        body = items[1:] if negate else items
        for ch in _CANDIDATES:
            if _in_class(ch, body) != negate:
                return ch
        raise SampleError("no example character for a character class")


def _in_class(ch: str, items) -> bool:
    code = ord(ch)
    for op, av in items:
        if op is _c.LITERAL and code == av:
            return True
        if op is _c.RANGE and av[0] <= code <= av[1]:
            return True
        if op is _c.CATEGORY:
            name = str(av).upper()
            hit = {"DIGIT": ch.isdigit(), "SPACE": ch.isspace(), "WORD": ch.isalnum() or ch == "_",
                   "LINEBREAK": ch == "\n"}
            for key, value in hit.items():
                if key in name:
                    return (not value) if "NOT" in name else value
    return False


def _is_space(items) -> bool:
    items = list(items)
    if len(items) != 1:
        return False
    op, av = items[0]
    if op is _c.IN:
        return _in_class("\n", av) and not _in_class("a", av)
    return op is _c.CATEGORY and _in_class("\n", [(op, av)]) and not _in_class("a", [(op, av)])


def _top_level_alternatives(source: str) -> list:
    """``source`` split at the ``|`` that are outside groups and character classes (the whole pattern as one
    alternative where `parsing.decided.top_level_branches` cannot follow it: verbose mode, nested sets)."""
    return top_level_branches(source) or [source]


def _trim_space(items: list) -> list:
    """Drop optional whitespace (``\\s*``) at the very start and end of an alternative: it lets a delimiter
    swallow the blanks around it, but is not part of what the model writes for it."""
    def optional_space(item) -> bool:
        op, av = item
        return op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) and av[0] == 0 \
            and _is_space(av[2])

    def zero_width(item) -> bool:
        return item[0] in (_c.AT, _c.ASSERT, _c.ASSERT_NOT)

    head = 0
    while head < len(items) and zero_width(items[head]):
        head += 1
    while head < len(items) and optional_space(items[head]):
        items = items[:head] + items[head + 1:]
    tail = len(items) - 1
    while tail >= 0 and zero_width(items[tail]):
        tail -= 1
    while tail >= 0 and optional_space(items[tail]):
        items = items[:tail] + items[tail + 1:]
        tail -= 1
    return items


def _first_lookahead(items) -> str:
    """The text the first positive lookahead in ``items`` waits for (``""`` if none)."""
    for op, av in items:
        if op is _c.ASSERT and av[0] == 1:
            return _Writer({}, {}, {}).seq(av[1])
        if op is _c.SUBPATTERN:
            inner = _first_lookahead(av[-1])
            if inner:
                return inner
    return ""


def pattern_samples(source: str, values: dict | None = None) -> list[Sample]:
    """One `Sample` per top-level alternative of the regex ``source``, in the order written.

    Args:
        source: a delimiter pattern (``open_pattern``, ``close_pattern``, an ``xml-inline`` ``tag_pattern``).
        values: text to write for named groups (e.g. ``{"name": "get_weather"}``); other groups get
            generated text (repetitions their minimum count, classes a readable member).

    Returns:
        a non-empty list of samples.

    Raises:
        SampleError: the pattern does not parse with the standard library's parser, or uses an element
            this module cannot write.
    """
    values = dict(values or {})
    out = []
    # Split at top-level `|` ourselves: the standard parser factors a prefix common to all alternatives out of
    # the branch (`<a>|<b>` becomes `<` + branch), which would hide the alternatives.
    for part in _top_level_alternatives(source):
        cleaned, aliases = _dedupe_group_names(part)
        try:
            tree = _p.parse(cleaned, _re.DOTALL)
        except Exception as exc:  # the standard parser's errors vary by version
            raise SampleError(f"cannot read pattern {source!r}: {exc}") from None
        state = tree.state if hasattr(tree, "state") else tree.pattern
        names = {number: name for name, number in state.groupdict.items()}
        alt = _trim_space(list(tree))
        writer = _Writer(values, names, aliases)
        text = _resolve_space(writer.seq(alt))
        groups = {}
        for number, value in writer.groups.items():
            name = writer.name_of(number)
            if name is not None and name not in groups:
                groups[name] = _resolve_space(value)
        separator = bool(text) and bool(alt) and alt[-1][0] is _c.ASSERT and alt[-1][1][0] == 1
        out.append(Sample(text=text, groups=groups, trigger="" if text else _first_lookahead(alt), separator=separator))
    return out
