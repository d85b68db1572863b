"""Exception types of the engine.

Template faults are `TemplateError`, a `ValueError` subclass, so code written
against transformers' `chat_parsing` (which raises plain `ValueError`) keeps
working; ours additionally says *where* the fault is, for an editor to point at.
"""

from __future__ import annotations


class TemplateError(ValueError):
    """A response template that cannot be loaded.

    Attributes:
        message: human-readable reason, without the location.
        path: JSON path of the fault, dotted, with `[i]` for list items, e.g.
            ``"fields.tool_calls.open_pattern"`` or ``"fields.content.close[1]"``;
            ``""`` means the template as a whole.
        pattern_pos: for a regex that does not compile, the 0-based character
            offset in the pattern where the regex engine gave up; else None.
        line, column: 1-based position in the JSON text the template came from,
            when it came from text and the position is known; else None.
    """

    def __init__(self, message: str, path: str = "", *, pattern_pos: int | None = None,
                 line: int | None = None, column: int | None = None):
        self.message = message
        self.path = path
        self.pattern_pos = pattern_pos
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "response_template"
        text = f"{where}: {self.message}"
        if self.pattern_pos is not None:
            text += f" (at position {self.pattern_pos} of the pattern)"
        if self.line is not None:
            text += f" [line {self.line}, column {self.column}]"
        return text

    def located(self, line: int | None, column: int | None) -> "TemplateError":
        """Return a copy of this error carrying a line/column in the source JSON text."""
        return type(self)(self.message, self.path, pattern_pos=self.pattern_pos, line=line, column=column)


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
