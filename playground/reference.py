"""The side-by-side check: the installed transformers parser fed the same chunks as ours.

One entry point, :func:`reference_check` (a recorded `Run` and our `ParseView` in, a verdict dict out;
never raises).  The transformers 5.23 parser is the oracle; :func:`reference_parser` builds it with every
regex call under one wall-clock budget, so a catastrophic pattern cannot tie up a worker.
"""

from __future__ import annotations

import json
import time
from typing import Any

from parsing.streams import merged_events

from .session import ParseView, Run, describe_error

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


def reference_check(run: Run, view: ParseView, template_text: str | None = None) -> dict:
    """Compare our parse of ``run`` with the installed transformers parser fed the same chunks.

    Returns ``{"agree": bool, "ref_message": dict | None, "ref_error": str | None,
    "differences": [str, ...], "skipped": str | None}``; never raises.  The reference runs under
    a total time budget (``REFERENCE_BUDGET_S``): past it, or when our own parse hit a
    pattern timeout, the check is skipped (``skipped`` says why, ``agree`` is False, no differences).
    Events are compared in `parsing.streams.merged_events` form (adjacent chunks of a region joined).
    """
    text = template_text if template_text is not None else run.template_text
    result = {"agree": False, "ref_message": None, "ref_error": None, "differences": [], "skipped": None}
    if any(e.get("timeout") for e in view.errors):
        result["skipped"] = ("reference check skipped: a pattern of this template ran past our parser's "
                             "time limit, so the transformers parser was not run")
        return result
    ref_events: list[dict] = []
    try:
        spec = json.loads(text)
        ref = reference_parser(spec, run.prefix, list(run.tools) if run.tools else None)
        ref_events += ref.initial_events
        for chunk in run.chunks:
            ref_events += ref.feed(chunk)
        message, final = ref.finalize()
        ref_events += final
        result["ref_message"] = message
    except ReferenceTimeout as e:
        result["skipped"] = (f"reference check skipped: the transformers parser exceeded the time budget "
                             f"({e.budget:g}s) on this template")
        return result
    except Exception as e:  # noqa: BLE001 - the reference's error is a result to show, never a traceback
        result["ref_error"] = describe_error(e)
    diffs = result["differences"]
    ours_err = [e["message"] for e in view.errors]
    if result["ref_error"] or ours_err:
        if not (result["ref_error"] and ours_err):
            diffs.append(f"reference error: {result['ref_error'] or 'none'}; ours: {'; '.join(ours_err) or 'none'}")
    else:
        if view.message != result["ref_message"]:
            diffs.append("message differs:\n  ours: " + _short(view.message) + "\n  reference: "
                         + _short(result["ref_message"]))
        ours_n, ref_n = merged_events(view.events), merged_events(ref_events)
        if ours_n != ref_n:
            for i, (a, b) in enumerate(zip(ours_n, ref_n)):
                if a != b:
                    diffs.append(f"event {i} differs:\n  ours: {_short(a)}\n  reference: {_short(b)}")
                    break
            else:
                diffs.append(f"event count differs: ours {len(ours_n)}, reference {len(ref_n)}")
    result["agree"] = not diffs
    return result


def _short(obj: Any, limit: int = 400) -> str:
    s = json.dumps(obj, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[:limit] + "…"
