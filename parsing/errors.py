"""Exception types of `parsing`.

Template faults are `TemplateError`, a `ValueError` subclass, so code written
against transformers' `chat_parsing` (which raises plain `ValueError`) keeps
working; ours additionally says *where* the fault is, for an editor to point at.
"""

from __future__ import annotations

import json


class TemplateError(ValueError):
    """A response template that cannot be loaded.

    ``str(error)`` is `message`: for every fault transformers 5.23 also rejects it is the reference's text to the
    letter (code that matches on its messages keeps working); the location is carried separately.

    Attributes:
        message: human-readable reason (the reference's wording where it has one), without our location.
        path: JSON path of the fault, dotted, with `[i]` for list items, e.g.
            ``"fields.tool_calls.open_pattern"`` or ``"fields.content.close[1]"``;
            ``""`` means the template as a whole.
        pattern_pos: for a regex that does not compile, the 0-based character offset of the fault in the
            pattern (`parsing.template.regex_fault`: where an unclosed construct opened, where `regex` gives up
            at the pattern's end and names that in `message`); None when not known.
        line, column: 1-based position in the JSON text the template came from,
            when it came from text and the position is known; else None.
        source: the file the JSON text was read from (`load_template` given a path); else None.
    """

    def __init__(self, message: str, path: str = "", *, pattern_pos: int | None = None,
                 line: int | None = None, column: int | None = None, source: str | None = None):
        self.message = message
        self.source = source
        self.path = path
        self.pattern_pos = pattern_pos
        self.line = line
        self.column = column
        super().__init__(message)

    def describe(self) -> str:
        """One line for people: ``"<file>: <path>: <message> [line L, column C]"`` (each part where known)."""
        text = f"{self.path}: {self.message}" if self.path else self.message
        if self.line is not None:
            text += f" [line {self.line}, column {self.column}]"
        return f"{self.source}: {text}" if self.source else text

    def located(self, line: int | None, column: int | None) -> "TemplateError":
        """Return a copy of this error carrying a line/column in the source JSON text."""
        return type(self)(self.message, self.path, pattern_pos=self.pattern_pos, line=line, column=column,
                          source=self.source)

    def from_file(self, source: str) -> "TemplateError":
        """Return a copy of this error naming the file its JSON text was read from."""
        return type(self)(self.message, self.path, pattern_pos=self.pattern_pos, line=self.line,
                          column=self.column, source=source)


class PatternTimeoutError(TimeoutError):
    """A user regex ran past its time budget (a catastrophic-backtracking pattern).

    Attributes:
        field: the field whose delimiter (or content parser) used the pattern,
            or None for the start anchor.
        role: which pattern: ``"open"``, ``"close"``, ``"start_anchor"`` or
            ``"tag_pattern"``.
        pattern: the regex source.
        budget: the budget in seconds.
    """

    def __init__(self, field: str | None, role: str, pattern: str, budget: float):
        self.field = field
        self.role = role
        self.pattern = pattern
        self.budget = budget
        owner = f"field '{field}'" if field is not None else "the template"
        super().__init__(
            f"The {role} pattern of {owner} took longer than {budget:g} s on this input "
            f"(catastrophic backtracking?): {pattern!r}"
        )


class BudgetExceededError(TimeoutError):
    """A parse ran past its overall time budget (``time_budget`` of `ResponseParser` / `parse_response`).

    The work stopped where it was; nothing after ``position`` was parsed.

    Attributes:
        budget: the budget in seconds (None when unknown).
        field, role, pattern: the field, which pattern (``"open"``, ``"close"``, ``"start_anchor"``,
            ``"tag_pattern"``, ``"value_parser.args.tag_pattern"``, ...) and its source when the budget ran out
            inside a regex call; None when it ran out between steps.
        stage: ``"prefix"``, ``"feed"`` or ``"finalize"`` (set by the parser; None outside one).
        position: how many characters of the parsed stream (``stream_text`` offsets: the prefix after its start
            anchor, then the generation) had been consumed when the work stopped; None outside a parser.
    """

    def __init__(self, budget: float | None, *, field: str | None = None, role: str | None = None,
                 pattern: str | None = None):
        self.budget = budget
        self.field = field
        self.role = role
        self.pattern = pattern
        self.stage: str | None = None
        self.position: int | None = None
        super().__init__(self._render())

    def _render(self) -> str:
        budget = f" of {self.budget:g} s" if self.budget is not None else ""
        text = f"The parse ran past its time budget{budget}"
        if self.role is not None:
            owner = f"field '{self.field}'" if self.field is not None else "the template"
            text += f" while running the {self.role} pattern of {owner} ({self.pattern!r})"
        if self.position is not None:
            text += f"; the stream was parsed up to character {self.position} and the rest was cut"
        return text + "."

    def located(self, stage: str, position: int) -> "BudgetExceededError":
        """Record where the parse stopped (``stage``, ``position``) and refresh the message; returns self."""
        self.stage, self.position = stage, position
        self.args = (self._render(),)
        return self


class ValuesBudgetError(ValueError):
    """A parse's transforms would build more values than its ``max_values`` (`ResponseParser` / `parse_response`).

    A transform copies the value each placeholder names, so a template can make a few characters of output into
    millions of values. Raised when a region's value is built (with ``recover``: that region's ``region_error``;
    every later transform of the parse fails the same way, the rest of the message still parses).

    The same error stops a field's ``join`` past ``max_join_chars`` (``kind`` ``"join"``): a join repeats its string
    between every two matches, so a small output can make a huge message.

    Attributes:
        limit: the parse's ``max_values`` (or ``max_join_chars``); field: the field whose transform (or join) went
        past it; kind: ``"values"`` or ``"join"``.
    """

    def __init__(self, limit: int, field: str | None, kind: str = "values"):
        self.limit = limit
        self.field = field
        self.kind = kind
        if kind == "join":
            super().__init__(f"Field '{field}': joining its matches would build more than {limit:,} characters of "
                             f"joined text in this parse (max_join_chars): 'join' repeats its string between every "
                             f"two matches.")
            return
        super().__init__(f"Field '{field}': the template's transforms would build more than {limit:,} values in this "
                         f"parse (max_values): a transform copies the value each placeholder names, every time it "
                         f"is built.")


JSON_TOO_DEEP = "nested too deeply to read (arrays or objects inside each other about a thousand levels deep)"
"""What a JSON reader's RecursionError means, in the user's terms (json recurses once per nesting level)."""


def json_error_text(exc: json.JSONDecodeError, line: int | None = None) -> str:
    """A `json.JSONDecodeError` in words with its place: ``"Unterminated string starting at line 3, column 26"``,
    ``"Expecting value at line 1, column 1"``. ``line``: the line number to report when the text decoded was one
    line of a larger file (JSONL); default the error's own line."""
    where = f"line {exc.lineno if line is None else line}, column {exc.colno}"
    msg = exc.msg.rstrip(": ")
    # json's own messages that already end in "at" ("Unterminated string starting at", "Invalid control character at")
    return f"{msg} {where}" if msg.endswith(" at") else f"{msg} at {where}"

