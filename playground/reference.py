"""The side-by-side check: the installed transformers parser fed the same chunks as ours.

One entry point, :func:`reference_check` (a recorded `Run` and our `ParseView` in, a verdict dict out;
never raises).  The transformers 5.23 parser is the oracle.  It runs the template's regexes without any time
limit (delimiters, start anchor, xml-inline ``tag_pattern``), so it runs in a killable worker process
(`playground.workers.WorkerPool`) with a deadline: a catastrophic pattern costs at most the deadline of one
worker, which is then killed and replaced, never a core of the server.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from parsing.streams import merged_events

from .jsonsize import json_head
from .limits import SERVER_HINT
from .session import ParseView, Run, describe_error
from .workers import WorkerFailed, WorkerPool, WorkerTimeout

REFERENCE_BUDGET_S = 5.0  # default seconds the reference parser may take on one run

# What each worker imports when it starts, not in a visitor's budget: the reference parser, and the Doctor's and the
# draft's jobs (`playground.offload`, which imports parsing.doctor). A job's module is imported by the worker that
# unpickles it, so every job lives in one of these (gradio, 3 s of imports, never: trial 11's drafts were all cut).
POOL_PRELOAD = ("transformers.utils.chat_parsing", "parsing.doctor", "playground.offload")
_POOL: WorkerPool | None = None
_POOL_SIZE = 2
_POOL_LOCK = threading.Lock()


def configure(workers: int = 2) -> None:
    """Use ``workers`` worker processes for the check (takes effect for a pool not started yet)."""
    global _POOL_SIZE
    _POOL_SIZE = max(1, int(workers))


def pool() -> WorkerPool:
    """The shared worker pool (created on first use; its workers import the transformers parser and the Doctor)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool(_POOL_SIZE, preload=POOL_PRELOAD)
        return _POOL


def warm_up() -> None:
    """Start the worker processes now, so the first check does not wait for their imports."""
    pool().warm_up()


def reference_events(template_spec: dict, prefix: str, text: str, ends: list[int], tools: list | None) -> dict:
    """Run the installed transformers 5.23 streaming parser over ``text`` cut at ``ends`` (runs in a worker).

    Returns ``{"message": dict | None, "events": merged events, "error": "Type: message" | None}``.
    """
    from transformers.utils.chat_parsing import ResponseParser
    from transformers.utils.chat_parsing.response_templates import load_response_template

    events: list[dict] = []
    try:
        parser = ResponseParser(load_response_template(template_spec), prefix=prefix, tools=tools or None)
        events += parser.initial_events
        start = 0
        for end in ends:
            events += parser.feed(text[start:end])
            start = end
        message, final = parser.finalize()
        events += final
    except Exception as e:  # noqa: BLE001 - the reference's error is a result to show
        return {"message": None, "events": [], "error": describe_error(e)}
    return {"message": message, "events": merged_events(events), "error": None}


def reference_check(run: Run, view: ParseView, template_text: str | None = None, *,
                    budget: float = REFERENCE_BUDGET_S, cancel: threading.Event | None = None,
                    public: bool = False) -> dict:
    """Compare our parse of ``run`` with the installed transformers parser fed the same chunks.

    Returns ``{"agree": bool, "ref_message": dict | None, "ref_error": str | None, "ours_error": str | None,
    "differences": [str, ...], "skipped": str | None}``; never raises. When both parsers report an error,
    ``agree`` is True (they agree) and both errors are in the result: agreeing on an error is no success, and the
    page shows it neutrally.  The reference runs in a worker
    process for at most ``budget`` seconds (its worker is killed past it, or when ``cancel`` is set); then, or
    when our own parse hit a pattern timeout or the request's time budget, the check is skipped (``skipped``
    says why, ``agree`` is False, no differences).  Events are compared in `parsing.streams.merged_events`
    form (adjacent chunks of a region joined).  ``public``: the reader is a visitor of a public server, who cannot
    set its flags: a skip note then says how to run the check without the limit instead of naming the flag.
    """
    flag = (lambda name: f" ({name})") if not public else (lambda name: "")
    hint = "" if not public else f". To compare them, {SERVER_HINT}"
    text = template_text if template_text is not None else run.template_text
    result = {"agree": False, "ref_message": None, "ref_error": None, "ours_error": None, "differences": [],
              "skipped": None}
    if any(e.get("timeout") for e in view.errors):
        result["skipped"] = ("reference check skipped: a pattern of this template ran past our parser's "
                             "time limit, so the transformers parser was not run")
        return result
    if any(e.get("values") for e in view.errors):
        result["skipped"] = ("reference check skipped: our parse stopped at this server's limit on the values a "
                             f"template's transforms may build{flag('--max-transform-values')} or on the characters "
                             f"its joins may build{flag('--max-message-chars')}; the transformers parser would build "
                             f"them all{hint}")
        return result
    if view.message_size is not None:
        result["skipped"] = ("reference check skipped: our parsed message is over this server's size limit for a "
                             f"shown message{flag('--max-message-chars')}, so there is nothing to compare{hint}")
        return result
    if any(e.get("budget") for e in view.errors):
        result["skipped"] = ("reference check skipped: our parse was stopped by this server's time limit per "
                             "request, and the transformers parser is slower")
        return result
    ref_events: list[dict] = []
    try:
        spec = json.loads(text)
        chunks = run.chunks
        out = pool().call(reference_events, spec, run.prefix, chunks.text, list(chunks.ends),
                          list(run.tools) if run.tools else None, timeout=budget, cancel=cancel)
        result["ref_message"], ref_events, result["ref_error"] = out["message"], out["events"], out["error"]
    except WorkerTimeout as e:
        if e.reason == "cancelled":
            result["skipped"] = "reference check cancelled"
        elif e.reason == "busy":
            result["skipped"] = (f"reference check skipped: every worker stayed busy for {e.budget:g} s "
                                 "(the server is under load)")
        else:
            result["skipped"] = (f"reference check skipped: the transformers parser exceeded this server's time "
                                 f"limit for it ({e.budget:g} s{'' if public else ', --reference-budget'}) on this "
                                 f"template{hint}")
        return result
    except WorkerFailed as e:
        result["ref_error"] = f"{e.type_name}: {e.message}" if e.type_name != "WorkerDied" else None
        if e.type_name == "WorkerDied":
            result["skipped"] = "reference check skipped: the transformers parser's worker ran out of memory"
            return result
    except Exception as e:  # noqa: BLE001 - the reference's error is a result to show, never a traceback
        result["ref_error"] = describe_error(e)
    diffs = result["differences"]
    ours_err = [e["message"] for e in view.errors]
    result["ours_error"] = "; ".join(ours_err) or None
    if result["ref_error"] or ours_err:
        if not (result["ref_error"] and ours_err):
            diffs.append(f"reference error: {result['ref_error'] or 'none'}; ours: {'; '.join(ours_err) or 'none'}")
    else:
        if view.message != result["ref_message"]:
            diffs.append("message differs:\n  ours: " + _short(view.message) + "\n  reference: "
                         + _short(result["ref_message"]))
        ours_n, ref_n = merged_events(view.events), ref_events
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
    s, whole = json_head(obj, limit)  # never the whole JSON: a transform can make it gigabytes
    return s if whole else s + "…"
