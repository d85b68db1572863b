"""The one adapter between the playground and the parsing engine.

The playground talks to :func:`load_template`, :func:`make_parser` and
:func:`reference_parser` only: our engine (`parsing`, docs/engine-api.md) with
``spans=True, recover=True`` for everything drawn, and the installed transformers
parser as the oracle of the side-by-side check.
"""

from __future__ import annotations

import time
from typing import Any

import parsing

ENGINE = "parsing"
PatternTimeoutError = parsing.PatternTimeoutError  # our engine's regex time limit was hit


class TemplateProblem(ValueError):
    """A template that cannot be used, with where the fault is.

    Attributes: ``message`` (str), ``path`` (str JSON path, "" for the top level or
    unknown), ``line`` / ``column`` (1-based ints or None) in the JSON text.
    """

    def __init__(self, message: str, path: str = "", line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column


def load_template(text_or_spec: Any):
    """Parse and validate a template given as JSON text or a dict; return the compiled template.

    Raises :class:`TemplateProblem` for any fault (JSON syntax, shape, bad regex, ...), with the
    JSON path and the line in the text where the engine can locate them.
    """
    try:
        return parsing.load_template(text_or_spec)
    except parsing.TemplateError as e:
        line = e.line
        if line is None and isinstance(text_or_spec, str) and e.path:
            try:
                line, _ = parsing.locate_json_path(text_or_spec, e.path)
            except Exception:  # noqa: BLE001 - location is a nicety
                line = None
        return _raise(e.message, e.path, line, e.column)
    except Exception as e:  # noqa: BLE001 - anything else is still a template fault to show
        return _raise(f"{type(e).__name__}: {e}")


def _raise(message, path="", line=None, column=None):
    raise TemplateProblem(message, path or "", line, column) from None


def make_parser(compiled, prefix: str, tools: list | None = None):
    """A streaming ``parsing.ResponseParser`` with spans and recovery for ``compiled``.

    It has ``initial_events``, ``feed(text) -> events``, ``finalize() -> (message, events)``,
    ``stream_text``, ``prefix_length``, ``dropped_prefix``, ``delimiters``, ``held()`` and
    ``segments()``.  Raises ValueError/KeyError like the reference (e.g. for a prefix that fails).
    """
    return parsing.ResponseParser(compiled, prefix, tools=tools or None, spans=True, recover=True)


REFERENCE_BUDGET_S = 3.0  # total regex time the reference parser may spend on one run


class ReferenceTimeout(TimeoutError):
    """The transformers reference parser ran past its total time budget (``budget`` seconds)."""

    def __init__(self, budget: float):
        super().__init__(f"the transformers parser exceeded the time budget ({budget:g}s)")
        self.budget = budget


class _Deadline:
    """A shared wall-clock budget for all the regex calls of one reference parse."""

    def __init__(self, budget: float):
        self.budget = budget
        self.end = time.monotonic() + budget

    def remaining(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise ReferenceTimeout(self.budget)
        return left


class _BudgetedPattern:
    """Wraps a compiled ``regex`` pattern: every search/match passes ``timeout=`` with what is left
    of the shared :class:`_Deadline` and turns a regex timeout into :class:`ReferenceTimeout`."""

    def __init__(self, pattern, deadline: _Deadline):
        self._pattern, self._deadline = pattern, deadline

    def __getattr__(self, name):  # groupindex, pattern, flags, ...
        return getattr(self._pattern, name)

    def _call(self, method: str, *args, **kwargs):
        kwargs["timeout"] = self._deadline.remaining()
        try:
            return getattr(self._pattern, method)(*args, **kwargs)
        except TimeoutError:
            raise ReferenceTimeout(self._deadline.budget) from None

    def search(self, *args, **kwargs):
        """``regex`` search under the budget."""
        return self._call("search", *args, **kwargs)

    def match(self, *args, **kwargs):
        """``regex`` match under the budget."""
        return self._call("match", *args, **kwargs)

    def fullmatch(self, *args, **kwargs):
        """``regex`` fullmatch under the budget."""
        return self._call("fullmatch", *args, **kwargs)

    def finditer(self, *args, **kwargs):
        """``regex`` finditer under the budget (the iteration is checked too)."""
        it = self._call("finditer", *args, **kwargs)
        while True:
            try:
                m = next(it)
            except StopIteration:
                return
            except TimeoutError:
                raise ReferenceTimeout(self._deadline.budget) from None
            self._deadline.remaining()
            yield m


def reference_parser(template_spec: dict, prefix: str, tools: list | None, budget: float = REFERENCE_BUDGET_S):
    """The installed transformers 5.23 streaming parser (the oracle for the side-by-side check).

    Every compiled pattern of the loaded template is wrapped so that all regex work of this parser
    (construction, feeds, finalize) shares one wall-clock ``budget`` in seconds; past it the parser
    raises :class:`ReferenceTimeout` instead of backtracking for minutes.
    """
    from transformers.utils.chat_parsing import ResponseParser
    from transformers.utils.chat_parsing.response_templates import load_response_template

    loaded = load_response_template(template_spec)
    deadline = _Deadline(budget)
    for fld in loaded.fields.values():
        for attr in ("open_re", "close_re"):
            if getattr(fld, attr, None) is not None:
                setattr(fld, attr, _BudgetedPattern(getattr(fld, attr), deadline))
    if loaded.start_anchor_re is not None:
        loaded.start_anchor_re = _BudgetedPattern(loaded.start_anchor_re, deadline)
    return ResponseParser(loaded, prefix=prefix, tools=tools or None)
