"""The Doctor's heavy work (lint, run checks, test suites, probes, drafts) in the killable worker processes.

Their cost grows with the template and the run (every delimiter pair, one parse per chunking, one per case and
chunking), so on a public server they run in `playground.reference.pool()` workers under the request's time
budget: past it the worker is killed and the page says what to run locally instead. The functions named
``*_job`` run inside a worker and return report objects (plain dataclasses); `bounded` runs one.
"""

from __future__ import annotations

from typing import Any, Callable

from . import guard, reference
from .limits import SERVER_HINT
from .workers import WorkerFailed, WorkerTimeout

UNLIMITED_S = 3600.0  # a private machine's "no budget": still a deadline, so nothing runs forever


class Cut(RuntimeError):
    """The work ran past the request's time budget (or the client left); ``str(err)`` says what to do."""


def lint_job(template_text: str, generation_prompt_text: Any) -> Any:
    """`parsing.doctor.lint.lint` of editor text (never a path), with a generation prompt rendered beforehand."""
    import parsing
    from parsing.doctor.lint import lint

    return lint(parsing.loads_template(template_text), generation_prompt_text=generation_prompt_text)


def checks_job(template_text: str, prefix: str, text: str, ends: list[int], tools: list | None,
               chunkings_count: int) -> Any:
    """`parsing.doctor.run_checks` of a run given as its text and chunk boundaries."""
    import parsing
    from parsing.doctor import run_checks

    chunks, start = [], 0
    for end in ends:
        chunks.append(text[start:end])
        start = end
    return run_checks(parsing.loads_template(template_text), prefix, chunks, tools=tools,
                      chunkings_count=chunkings_count)


def suite_job(template_text: str, suite_text: str, chunkings_per_case: int) -> Any:
    """`parsing.doctor.suites.run_suite` of editor text and suite text."""
    import parsing
    from parsing.doctor import suites

    return suites.run_suite(parsing.loads_template(template_text), suites.loads_suite(suite_text or ""),
                            chunkings_per_case=chunkings_per_case)


def draft_job(chat_template: str, special_tokens: Any, time_budget: float) -> Any:
    """`parsing.doctor.draft.draft_template` of a chat template's text, as a plain dict (`DraftResult.to_dict`)."""
    from parsing.doctor.draft import draft_template

    return draft_template(chat_template, special_tokens=special_tokens, time_budget=time_budget).to_dict()


def probe_job(template_text: str, prefixes: dict | None, reference: bool = False) -> Any:
    """`parsing.doctor.probe.probe` of editor text with the given prompt prefixes (``reference``: every probe also
    parsed by transformers' own parser, in one shot and streamed)."""
    from parsing.doctor.probe import probe

    return probe(template_text, prefixes=prefixes, reference=reference)


def cut_text(what: str, local: str, budget: float | None = None, reason: str = "") -> str:
    """Why a Doctor/draft job was stopped (``budget`` seconds and the worker's ``reason``: "busy", "cancelled",
    else its time ran out; no budget: its worker ran out of memory) and how to run the same without limits: the
    ``local`` command, or the playground on one's own machine. (Not the library's parse call: these jobs are not
    a parse.)"""
    if budget is None:
        why = f"{what} ran out of memory in its worker."
    else:
        cause = {"busy": "every worker stayed busy", "cancelled": "the page was closed"}.get(
            reason, "it ran past this server's time limit per request")
        why = f"{what} stopped after {budget:g} s: {cause}."
    return f"{why} To run it without limits, use `{local}` or {SERVER_HINT}."


def bounded(job: Callable, *args: Any, what: str, local: str) -> Any:
    """Run ``job(*args)`` in a worker under the request's time budget.

    Args:
        what: what the job does, for the message (``"The run checks"``).
        local: the command that does the same without limits (``"python -m parsing check ..."``).

    Raises:
        Cut: the budget ran out (the worker was killed), the workers stayed busy, or the client left.
        ValueError: the job raised (its message, e.g. a template or suite error).
    """
    limits = guard.limits()
    budget = limits.request_budget or UNLIMITED_S
    try:
        return reference.pool().call(job, *args, timeout=budget, cancel=guard.cancel_event())
    except WorkerTimeout as e:
        raise Cut(cut_text(what, local, budget, e.reason)) from None
    except WorkerFailed as e:
        if e.type_name == "WorkerDied":
            raise Cut(cut_text(what, local)) from None
        raise ValueError(f"{e.type_name}: {e.message}" if e.type_name not in ("ValueError", "TemplateError")
                         else e.message) from None
