"""Time limits on user regexes: a budget per regex call and an optional overall deadline.

Every user pattern of a template (delimiters, the start anchor, a content parser's ``tag_pattern``, nested
``value_parser`` ones included) runs through `run_regex` with a `ParseContext`. The per-call budget stops a
single catastrophic-backtracking call (`PatternTimeoutError`); the deadline bounds the total work of a parse,
which many cheap-but-slow calls can otherwise stretch without limit (`BudgetExceededError`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from .errors import BudgetExceededError, PatternTimeoutError


@dataclass(frozen=True)
class ParseContext:
    """What a content parser and a regex call need to know about their limits and their place.

    Attributes:
        regex_timeout: seconds one regex call may take (None: unlimited).
        deadline: ``time.monotonic()`` value past which no more regex work starts (None: no deadline).
        budget: the overall budget in seconds the deadline came from (for messages; None without a deadline).
        field: the field whose value is being built (None outside a field, e.g. for the start anchor).
        path: where the content parser's ``args`` sit inside the field's ``content_args``, as a dotted prefix
            (``""`` at the top, ``"value_parser.args."`` for a nested value parser); names the pattern in errors.
    """

    regex_timeout: float | None = None
    deadline: float | None = None
    budget: float | None = None
    field: str | None = None
    path: str = ""

    def call_timeout(self, field: str | None, role: str, pattern: str) -> float | None:
        """The ``timeout=`` for the next regex call: the per-call budget, cut to what is left before the deadline.

        Raises:
            BudgetExceededError: the deadline has passed (naming ``field``, ``role`` and ``pattern``).
        """
        if self.deadline is None:
            return self.regex_timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceededError(self.budget, field=field, role=role, pattern=pattern)
        return left if self.regex_timeout is None else min(left, self.regex_timeout)

    def check(self) -> None:
        """Raise `BudgetExceededError` when the deadline has passed (between steps that run no regex)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetExceededError(self.budget)

    def for_field(self, field: str | None) -> "ParseContext":
        """This context for the content parser of ``field`` (at the top of its ``content_args``)."""
        return replace(self, field=field, path="")

    def nested(self, key: str) -> "ParseContext":
        """This context for a nested parser found under ``key`` of the current args (``"value_parser"``)."""
        return replace(self, path=f"{self.path}{key}.args.")


NO_LIMITS = ParseContext()


def as_context(limits: ParseContext | float | None) -> ParseContext:
    """A `ParseContext` from a context, a per-call budget in seconds, or None (unlimited)."""
    if isinstance(limits, ParseContext):
        return limits
    return NO_LIMITS if limits is None else ParseContext(regex_timeout=float(limits))


def run_regex(compiled: Any, method: str, text: str, *args: Any, limits: ParseContext | float | None,
              field: str | None, role: str, source: str, **kwargs: Any) -> Any:
    """Call ``compiled.<method>(text, *args, **kwargs)`` under ``limits``; ``finditer`` results come back as a list.

    Args:
        compiled: a compiled ``regex`` pattern.
        limits: a `ParseContext`, a per-call budget in seconds, or None.
        field, role, source: the field, which pattern (``"open"``, ``"close"``, ``"start_anchor"``,
            ``"tag_pattern"``, ...) and its source text, named in the errors.

    Raises:
        PatternTimeoutError: the call ran past the per-call budget.
        BudgetExceededError: the deadline passed before or during the call.
    """
    ctx = as_context(limits)
    timeout = ctx.call_timeout(field, role, source)
    try:
        result = getattr(compiled, method)(text, *args, timeout=timeout, **kwargs)
        return list(result) if method == "finditer" else result
    except TimeoutError:
        if ctx.deadline is not None and (ctx.regex_timeout is None or timeout < ctx.regex_timeout):
            raise BudgetExceededError(ctx.budget, field=field, role=role, pattern=source) from None
        raise PatternTimeoutError(field, role, source, timeout) from None
