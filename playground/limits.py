"""What one request and one session of the playground may cost: time, input sizes, memory.

`Limits` holds the settings (command-line flags of ``app.py``; a public Space gets `Limits.public`, a private
machine `Limits.private`), `RequestBudget` the clock of one request, and the messages shown when a limit
stops something, which always say how to run the same thing without limits.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from dataclasses import dataclass, replace

import parsing

SERVER_HINT = "start the playground on your own machine (`python app.py`: no per-request limit there)"
# for what parses (a paste, a replay, a re-parse): the library call does the same
LOCAL_HINT = (f"To run it without limits, {SERVER_HINT} or call `parsing.parse_response(text, template, prefix=...)` "
              f"in Python.")


def on_space() -> bool:
    """True when running as a Hugging Face Space (the ``SPACE_ID`` variable is set)."""
    return bool(os.environ.get("SPACE_ID"))


@dataclass(frozen=True)
class Limits:
    """Limits of a deployment (None: unlimited).

    Attributes:
        public: anyone can reach the server: hide file-system facts, apply the model allow-list.
        request_budget: seconds of parse, replay and doctor work one request may spend (replay pacing and
            model generation do not count).
        reference_budget: seconds the side-by-side transformers check may run (in a killable worker process).
        regex_timeout: seconds one user-regex call may take (the engine's per-call budget).
        max_paste_chars, max_prefix_chars, max_template_chars, max_tools_chars: input sizes in characters.
        max_history_chars: characters a chat conversation may hold before it must be cleared.
        session_ttl: seconds a session's state is kept after its last request.
        sessions_memory_mb: memory all sessions' runs may hold together; the least recently used are dropped
            beyond it.
        workers: worker processes for the transformers check.
        max_sessions: sessions Gradio keeps state for (the oldest are evicted beyond it).
        max_loaded_models: models kept loaded at once (least recently used evicted).
        max_request_bytes: largest HTTP request body (`playground.http_limits`); None: no cap.
        max_queue: jobs waiting in Gradio's queue at most (more are refused at once: "Queue is full"); None: no cap.
        max_new_tokens: the most tokens one chat turn may generate (the Max new tokens slider's maximum).
        max_jobs_per_client: jobs one client (network address) may have waiting or running in the queue at once
            (`playground.fairness`); None: no cap.
        sessions_per_address: sessions (page loads, API clients) one client may start per ``sessions_window``
            seconds (`playground.fairness`), so that one visitor cannot push every other session out of the
            ``max_sessions`` Gradio keeps; None: no cap.
        sessions_window: seconds a started session counts against its client.
        max_streams_per_client: event streams (server-sent events: open pages' heartbeats, running jobs' results,
            upload progress) one client may hold open at once (`playground.stream_limits`); None: no cap.
        trust_forwarded_for: take a client's address from ``X-Forwarded-For`` (behind a proxy that appends it: a
            Hugging Face Space), its right-most public entry (`playground.fairness.forwarded_client`).
        max_message_chars: the largest parsed message the page shows, in characters of its JSON (measured with
            `playground.jsonsize.json_size`, which stops at the limit); a larger one is replaced by a note. A
            template's transform can repeat a value thousands of times, so a small text can make a message whose
            JSON is gigabytes. Also the parser's ``max_join_chars``: the joins of a field past it fail with a region
            error, before the joined text is built. None: no cap.
        head_timeout: seconds a connection may take to send a complete request head (`playground.connections`);
            None: no limit.
        max_connections_per_address: HTTP connections one network address may hold at once
            (`playground.connections`; off behind a proxy, ``trust_forwarded_for``); None: no cap.
        max_suite_chars: the largest Doctor suite text (JSONL) a handler takes, however it was sent: an upload is
            capped at 2 MB by Gradio, and the same size in characters holds for the text an API call sends.
        max_connections: HTTP connections all addresses may hold at once (`playground.connections`; kept at most
            half the process's open-file limit); at it, the held connection that has waited longest for a request
            head is closed to let a new one in (a new one is closed at once only when every held connection has a
            request under way). None: no cap.
        max_transform_values: how many values a template's transforms may build in one parse (the parser's
            ``max_values``: containers and items of every built transform); past it, those regions fail with a
            region error naming the limit. Bounds the memory one parse can build. None: no cap.
        max_upload_files: files one upload request (``/gradio_api/upload``) may hold (`playground.uploads`; the
            page sends one, the Doctor's suite); None: no cap.
        uploads_per_address, upload_mb_per_address: files and MB of upload bodies one visitor (network address) may
            send within ``upload_window`` seconds (`playground.uploads`); None: no cap.
        upload_window: seconds an upload counts against its visitor.
        upload_cache_mb: MB the uploads kept on disk may take together; past it the oldest are deleted
            (`playground.uploads`). None: no cap.
        body_timeout: seconds from a request's head to the end of its body (`playground.http_limits.BodyGuard`);
            past it the request is answered ``408`` and its connection closed. None: no limit.
        max_pending_body_mb, max_pending_body_mb_per_address: MB of request bodies not yet complete that all
            clients, and one client (network address, or its ``X-Forwarded-For`` address with
            ``trust_forwarded_for``), may have sent; a body whose arrival passes either is refused with ``503``
            (`playground.http_limits.BodyGuard`; bodies under 64 KB never are). None: no cap.
    """

    public: bool = False
    request_budget: float | None = None
    reference_budget: float = 30.0
    regex_timeout: float = parsing.parser.DEFAULT_REGEX_TIMEOUT
    max_paste_chars: int | None = None
    max_prefix_chars: int | None = None
    max_template_chars: int | None = None
    max_tools_chars: int | None = None
    max_history_chars: int | None = None
    session_ttl: float = 6 * 3600
    sessions_memory_mb: float | None = 2048
    workers: int = 2
    max_sessions: int = 10_000
    max_loaded_models: int | None = 4
    max_request_bytes: int | None = None
    max_queue: int | None = None
    max_new_tokens: int = 32768
    max_jobs_per_client: int | None = None
    sessions_per_address: int | None = None
    sessions_window: float = 600.0
    trust_forwarded_for: bool = False
    max_streams_per_client: int | None = None
    max_message_chars: int | None = None
    max_transform_values: int | None = None
    head_timeout: float | None = None
    max_connections_per_address: int | None = None
    max_connections: int | None = None
    max_suite_chars: int | None = None
    max_upload_files: int | None = None
    uploads_per_address: int | None = None
    upload_mb_per_address: float | None = None
    upload_window: float = 600.0
    upload_cache_mb: float | None = None
    body_timeout: float | None = None
    max_pending_body_mb: float | None = None
    max_pending_body_mb_per_address: float | None = None

    @classmethod
    def private(cls, **changes) -> "Limits":
        """A private machine: no per-request budget or size limits (the engine's own limits still hold)."""
        return replace(cls(), **changes)

    @classmethod
    def public_space(cls, **changes) -> "Limits":
        """A public deployment: a few seconds per request, 256 K-character pastes, sessions kept 30 minutes."""
        return replace(cls(public=True, request_budget=5.0, reference_budget=5.0, max_paste_chars=262_144,
                           max_prefix_chars=65_536, max_template_chars=65_536, max_tools_chars=65_536,
                           max_history_chars=262_144, session_ttl=1800, sessions_memory_mb=512, max_sessions=1000,
                           max_loaded_models=2, max_request_bytes=8 << 20,
                           max_queue=64, max_new_tokens=4096, max_jobs_per_client=4, sessions_per_address=60,
                           max_streams_per_client=32,
                           max_message_chars=2_000_000, max_transform_values=1_000_000, head_timeout=20.0,
                           max_connections_per_address=256, max_connections=4096,
                           max_suite_chars=2 * 1024 * 1024, max_upload_files=1, uploads_per_address=20,
                           upload_mb_per_address=20, upload_cache_mb=256, body_timeout=60.0, max_pending_body_mb=256,
                           max_pending_body_mb_per_address=32), **changes)

    def check_size(self, what: str, text: str | int | None, limit_name: str, hint: str = LOCAL_HINT) -> None:
        """Raise ValueError (a message for the page, ending with ``hint``: how to do it without the limit) when
        ``text`` (or a length already measured) is longer than the limit ``limit_name``."""
        limit = getattr(self, limit_name)
        n = text if isinstance(text, int) else len(text or "")
        if limit is not None and n > limit:
            raise ValueError(f"{what} is {n:,} characters; this server takes at most {limit:,}. {hint}")

    def budget(self, cancel: threading.Event | None = None) -> "RequestBudget":
        """A clock for one request under ``request_budget``."""
        return RequestBudget(self.request_budget, cancel, self.max_message_chars, self.max_transform_values)


class RequestCancelled(RuntimeError):
    """The client left; the work of its request stopped."""


class RequestBudget:
    """The time left to one request's parse, replay and doctor work.

    Only the work is counted: callers wrap it in `working` (replay pauses and model generation are outside).
    ``cancel`` is set when the client leaves; `check` then raises `RequestCancelled`. ``max_message_chars``: the
    largest message (characters of JSON) the request's parses may show (`Limits.max_message_chars`);
    ``max_transform_values``: the values their transforms may build, per parse (`Limits.max_transform_values`).
    """

    def __init__(self, seconds: float | None, cancel: threading.Event | None = None,
                 max_message_chars: int | None = None, max_transform_values: int | None = None):
        self.seconds = seconds
        self.cancel = cancel
        self.max_message_chars = max_message_chars
        self.max_transform_values = max_transform_values
        self.spent = 0.0
        self.cut: str | None = None  # what a limit stopped, for the status line

    def remaining(self) -> float | None:
        """Seconds left (None: unlimited; 0 when spent)."""
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - self.spent)

    @property
    def exhausted(self) -> bool:
        """True when the budget is spent."""
        return self.seconds is not None and self.spent >= self.seconds

    def check(self) -> None:
        """Raise `RequestCancelled` when the client left."""
        if self.cancel is not None and self.cancel.is_set():
            raise RequestCancelled("the client left")

    def working(self) -> "_Working":
        """Context manager that counts the time spent inside it."""
        return _Working(self)


class _Working:
    def __init__(self, budget: RequestBudget):
        self.budget = budget

    def __enter__(self):
        self.start = time.monotonic()
        return self.budget

    def __exit__(self, *exc):
        self.budget.spent += time.monotonic() - self.start
        return False


def cut_message(budget: float | None, reached: int, total: int) -> str:
    """The status line for a parse stopped by the request budget: what was cut and how to run it unlimited.

    ``reached``: characters of the output parsed; ``total``: characters of the output.
    """
    limit = f"{budget:g} s, " if budget is not None else ""
    if reached >= total:  # every character was read; the limit struck while the parse was being finished
        where = (f"all {total:,} characters of the output were read, but the parse was not finished, so the "
                 f"message is incomplete")
    else:
        where = (f"the output was parsed up to character {reached:,} of {total:,}; "
                 f"the rest is shown unparsed")
    return (f"Stopped after {limit}this server's time limit per request: {where} and the transformers check was "
            f"skipped. {LOCAL_HINT}")


# ---------------------------------------------------------------- command line

_FLAGS = {  # flag -> (Limits field, type, unit (the metavar --help shows), help)
    "--request-budget": ("request_budget", float, "SECONDS",
                         "seconds of parse/replay/doctor work per request (0: none)"),
    "--reference-budget": ("reference_budget", float, "SECONDS",
                           "seconds the side-by-side transformers check may run"),
    "--regex-timeout": ("regex_timeout", float, "SECONDS", "seconds one template regex call may run (0: no limit)"),
    "--max-paste-chars": ("max_paste_chars", int, "CHARS", "largest paste, in characters (0: no limit)"),
    "--max-prefix-chars": ("max_prefix_chars", int, "CHARS", "largest prompt prefix (0: no limit)"),
    "--max-template-chars": ("max_template_chars", int, "CHARS",
                             "largest template JSON (0: the engine's 1,000,000)"),
    "--max-tools-chars": ("max_tools_chars", int, "CHARS", "largest tools JSON (0: no limit)"),
    "--max-history-chars": ("max_history_chars", int, "CHARS", "largest chat conversation (0: no limit)"),
    "--session-ttl": ("session_ttl", float, "SECONDS",
                      "seconds a session's state is kept after its last request"),
    "--sessions-memory-mb": ("sessions_memory_mb", int, "MB", "memory all sessions' runs may hold (0: no limit)"),
    "--workers": ("workers", int, "N", "worker processes for the transformers check"),
    "--max-sessions": ("max_sessions", int, "N", "sessions whose state is kept at most"),
    "--max-loaded-models": ("max_loaded_models", int, "N", "models loaded at once (0: no limit)"),
    "--max-request-mb": ("max_request_bytes", float, "MB", "largest HTTP request body in MB (0: no limit)"),
    "--max-queue": ("max_queue", int, "JOBS", "jobs waiting in the queue at most; more are refused (0: no limit)"),
    "--max-new-tokens": ("max_new_tokens", int, "TOKENS", "the most tokens one chat turn may generate"),
    "--max-jobs-per-client": ("max_jobs_per_client", int, "JOBS",
                              "jobs one visitor (network address) may have waiting or running at once (0: no limit)"),
    "--sessions-per-address": ("sessions_per_address", int, "N",
                               "sessions (page loads, API clients) one visitor (network address) may start per "
                               "--sessions-window; Gradio keeps --max-sessions in all (0: no cap)"),
    "--sessions-window": ("sessions_window", float, "SECONDS", "seconds a started session counts against its visitor"),
    "--max-streams-per-client": ("max_streams_per_client", int, "N",
                                 "event streams (open pages, running jobs, uploads) one visitor may hold open at "
                                 "once (0: no limit)"),
    "--max-message-chars": ("max_message_chars", int, "CHARS",
                            "largest parsed message shown, in characters of JSON (0: no limit)"),
    "--max-transform-values": ("max_transform_values", int, "VALUES",
                               "values a template's transforms may build in one parse (0: no limit)"),
    "--max-suite-chars": ("max_suite_chars", int, "CHARS",
                          "largest Doctor suite text, in characters (uploads: 2 MB) (0: no limit)"),
    "--head-timeout": ("head_timeout", float, "SECONDS",
                       "seconds a connection may take to send a complete request head (0: no limit)"),
    "--max-connections-per-address": ("max_connections_per_address", int, "N",
                                      "HTTP connections one network address may hold at once; off with "
                                      "--trust-forwarded-for (0: no cap)"),
    "--max-connections": ("max_connections", int, "N",
                          "HTTP connections all addresses may hold at once, at most half the open-file limit "
                          "(0: no cap)"),
    "--max-upload-files": ("max_upload_files", int, "FILES", "files one upload request may hold (0: no cap)"),
    "--uploads-per-address": ("uploads_per_address", int, "FILES",
                              "files one visitor (network address) may upload per --upload-window (0: no cap)"),
    "--upload-mb-per-address": ("upload_mb_per_address", float, "MB",
                                "MB one visitor may upload per --upload-window (0: no cap)"),
    "--upload-window": ("upload_window", float, "SECONDS", "seconds an upload counts against its visitor"),
    "--upload-cache-mb": ("upload_cache_mb", float, "MB",
                          "MB of uploads kept on disk at once; the oldest are deleted past it (0: no cap)"),
    "--body-timeout": ("body_timeout", float, "SECONDS",
                       "seconds from a request's head to the end of its body (0: no limit)"),
    "--max-pending-body-mb": ("max_pending_body_mb", float, "MB",
                              "MB of unfinished request bodies all visitors may have sent (0: no cap)"),
    "--max-pending-body-mb-per-address": ("max_pending_body_mb_per_address", float, "MB",
                                          "MB of unfinished request bodies one visitor (network address) may have "
                                          "sent (0: no cap)"),
}


_ZERO_IS_NONE = {"request_budget", "regex_timeout", "max_paste_chars", "max_prefix_chars", "max_template_chars",
                 "max_tools_chars", "max_history_chars", "sessions_memory_mb", "max_loaded_models",
                 "max_request_bytes", "max_queue", "max_jobs_per_client", "sessions_per_address",
                 "max_streams_per_client", "max_message_chars", "max_transform_values", "head_timeout", "max_connections_per_address",
                 "max_connections", "max_suite_chars", "max_upload_files", "uploads_per_address",
                 "upload_mb_per_address", "upload_cache_mb", "body_timeout", "max_pending_body_mb",
                 "max_pending_body_mb_per_address"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the deployment flags (limits and model policy) to ``app.py``'s parser."""
    group = parser.add_argument_group("running publicly (defaults: public on a Space, private elsewhere)")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--public", dest="public", action="store_true", default=None,
                      help="anyone can reach this server: time and size limits, model allow-list, no paths shown")
    mode.add_argument("--private", dest="public", action="store_false",
                      help="a private machine: no per-request limits, any model")
    for flag, (_name, kind, unit, text) in _FLAGS.items():
        group.add_argument(flag, type=kind, default=None, help=text, metavar=unit)
    group.add_argument("--allowed-models", nargs="+", default=None, metavar="MODEL",
                       help="hub ids, folders or NAME=FOLDER the model box may load (public default: the default "
                            "model and a short curated list)")
    group.add_argument("--allow-any-model", action="store_true",
                       help="also allow any hub id (never a local folder) on a public server")
    group.add_argument("--trust-forwarded-for", action="store_true",
                       help="take each visitor's address from the X-Forwarded-For header (behind a proxy that sets "
                            "it; on a Hugging Face Space by default), for --max-jobs-per-client")
    group.add_argument("--no-size-check", action="store_true",
                       help="load models without comparing their size with free memory first")


def from_arguments(args: argparse.Namespace, default_model: str) -> tuple[Limits, "object"]:
    """The `Limits` and the `playground.policy.ModelPolicy` the flags ask for (``default_model`` is allowed)."""
    from . import policy

    public = on_space() if args.public is None else args.public
    base = Limits.public_space() if public else Limits.private()
    changes = {}
    for flag, (name, _kind, _unit, _text) in _FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is None:
            continue
        if value <= 0 and name in _ZERO_IS_NONE:
            value = None
        elif value <= 0:
            raise SystemExit(f"{flag} must be positive")
        elif name == "max_request_bytes":
            value = int(value * 2 ** 20)
        changes[name] = value
    changes["trust_forwarded_for"] = bool(getattr(args, "trust_forwarded_for", False)) or on_space()
    limits = replace(base, **changes)
    if public or args.allowed_models is not None:
        allowed = tuple(args.allowed_models or ()) or (default_model, *policy.CURATED_MODELS)
        if default_model not in allowed:
            allowed = (default_model, *allowed)
        rules = policy.ModelPolicy(allowed=allowed, allow_any_hub=args.allow_any_model, hide_paths=public,
                                   check_sizes=not args.no_size_check)
    else:
        rules = policy.ModelPolicy(check_sizes=not args.no_size_check)
    return limits, rules

