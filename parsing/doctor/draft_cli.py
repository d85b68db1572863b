"""``python -m parsing draft``: draft a response template from a chat template (see `parsing.doctor.draft`).

Usage::

    python -m parsing draft CHAT_TEMPLATE.jinja [--special-tokens TOKENIZER_FOLDER] [--report]
    python -m parsing draft --tokenizer TOKENIZER_FOLDER [--report]

Prints the drafted response template as JSON on stdout and exits 0; with ``--report`` the whole draft
(template, per-field confidence, evidence, sample checks, notes). Exits 2 with the reason on stderr when
the chat template cannot be read or analysed, or drafting runs past its memory limit (``--max-memory-mb``) or its
time budget (``--time-budget``; chat templates come from strangers: drafting runs in a child process, killed a
grace period past the budget, since one render step can be a single C call no budget check interrupts).

A tokenizer folder is read as files, never executed: its chat template comes from ``chat_template.jinja``
or the ``chat_template`` key of ``tokenizer_config.json`` (a list of named templates: the ``default``
one), its special tokens from ``tokenizer_config.json`` (``bos_token``, ``eos_token``,
``added_tokens_decoder``) and ``special_tokens_map.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_UNUSABLE = 0, 2

__all__ = ["add_subcommand", "read_chat_template", "read_special_tokens", "run"]


class _Unusable(Exception):
    """An input the command cannot use; the message is printed as is."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _Unusable(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Unusable(f"{path} is not JSON: {exc}") from None


def read_chat_template(folder: Path) -> str:
    """The chat template of a saved tokenizer folder (``chat_template.jinja``, else ``tokenizer_config.json``).

    Raises ``_Unusable`` (a ValueError-like message for the user) when the folder has none."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _Unusable(f"cannot read {jinja}: {exc}") from None
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        raise _Unusable(f"{folder} has neither chat_template.jinja nor tokenizer_config.json")
    template = _read_json(config).get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if not isinstance(template, str) or not template.strip():
        raise _Unusable(f"{config} has no chat_template")
    return template


def read_special_tokens(folder: Path) -> dict:
    """The special tokens of a saved tokenizer folder, as a map `draft_template` accepts (files only)."""
    out: dict[str, Any] = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        path = folder / name
        if path.is_file():
            data = _read_json(path)
            if isinstance(data, dict):
                for key, value in data.items():
                    if key.endswith("_token") or key in ("additional_special_tokens", "added_tokens_decoder",
                                                        "extra_special_tokens"):
                        out.setdefault(key, value)
    if not out and not folder.is_dir():
        raise _Unusable(f"{folder} is not a tokenizer folder")
    return out


# jinja2's UndefinedError text for a name the template reads but nobody passed.
_UNDEFINED_TOKEN = re.compile(r"'(\w*_token)' is undefined")


def _token_hint(error: str, special: dict | None) -> str:
    """A hint for an error from a special token (``bos_token``, ``eos_token``) the chat template reads but that
    was not given: the tokens come from a saved tokenizer folder. ``""`` when it does not apply."""
    m = _UNDEFINED_TOKEN.search(error)
    if m is None or special:
        return ""
    return (f"\nThe chat template reads the special token {m.group(1)}: pass --special-tokens TOKENIZER_FOLDER "
            f"(the model's saved tokenizer) with the template, or --tokenizer TOKENIZER_FOLDER instead of it.")


def run(args: argparse.Namespace) -> int:
    """Run the ``draft`` subcommand; returns the exit status."""
    from .draft import DraftError

    try:
        if args.tokenizer:
            folder = Path(args.tokenizer)
            if not folder.is_dir():
                raise _Unusable(f"{folder} is not a folder")
            chat_template = read_chat_template(folder)
            special = read_special_tokens(folder)
        else:
            if not args.chat_template:
                raise _Unusable("give a chat template file, or --tokenizer FOLDER")
            path = Path(args.chat_template)
            try:
                chat_template = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise _Unusable(f"cannot read chat template {path}: {getattr(exc, 'strerror', None) or exc}") from None
            special = read_special_tokens(Path(args.special_tokens)) if args.special_tokens else None
        out = _draft_bounded(chat_template, special, args.time_budget, args.max_memory_mb, args.report)
    except _Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except DraftError as exc:
        print(f"error: the chat template cannot be analysed: {exc}{_token_hint(str(exc), special)}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return EXIT_OK


# Seconds past the time budget a drafting child gets before it is killed: the budget is checked between rendering
# steps, and one step (a C-level string repeat, a huge join) can run long past it.
KILL_GRACE_S = 10.0


def _draft_bounded(chat_template: str, special: dict | None, time_budget: float, memory_mb: float,
                   report: bool) -> Any:
    """The draft (``to_dict()`` with ``report``, else its template), drafted in a forked child process that may
    grow by at most ``memory_mb`` MB (0: no limit) and is killed ``KILL_GRACE_S`` past ``time_budget``: chat
    templates come from strangers, and ``{{ 'a' * 10**10 }}`` is one C call no budget check can stop.

    Raises:
        DraftError: the chat template cannot be analysed, or drafting ran past the memory limit or the time
            budget (the message says which, and the option that raises it).
    """
    import multiprocessing

    from .draft import DraftError

    if "fork" not in multiprocessing.get_all_start_methods():  # no fork (Windows): in process, budget only
        return _draft_here(chat_template, special, time_budget, None, report)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_draft_child, args=(send, chat_template, special, time_budget, memory_mb, report),
                        daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(time_budget + KILL_GRACE_S):
            raise DraftError(f"Stopped at the time budget: drafting did not return within {time_budget:g} s "
                             f"(+{KILL_GRACE_S:g} s). The chat template renders too slowly to be analysed; "
                             f"try a larger --time-budget.")
        try:
            kind, value = receive.recv()
        except (EOFError, OSError):
            raise DraftError(f"The drafting process ended without an answer (exit status {child.exitcode}); it "
                             f"may have run out of memory (--max-memory-mb {memory_mb:g}).") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if kind == "ok":
        return value
    raise DraftError(value)


def _draft_child(send: Any, chat_template: str, special: dict | None, time_budget: float, memory_mb: float,
                 report: bool) -> None:
    """Body of the drafting child: `_draft_here` under a memory limit, its answer (or error text) sent back."""
    from .draft import DraftError

    try:
        result: tuple = ("ok", _draft_here(chat_template, special, time_budget, memory_mb, report))
    except MemoryError:
        result = ("error", _over_memory(memory_mb))
    except DraftError as exc:
        result = ("error", str(exc))
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent as a message
        result = ("error", f"{type(exc).__name__}: {exc}")
    try:
        send.send(result)
    except MemoryError:
        send.send(("error", _over_memory(memory_mb)))
    send.close()


def _over_memory(memory_mb: float | None) -> str:
    return (f"Rendering the chat template needed more than {memory_mb:g} MB of memory (a huge string or list); "
            f"if the template is sound, raise --max-memory-mb.")


def _draft_here(chat_template: str, special: dict | None, time_budget: float, memory_mb: float | None,
                report: bool) -> Any:
    """Draft in this process, limited to ``memory_mb`` MB more than it holds now (None or 0: no limit)."""
    from .draft import DraftError, draft_template

    if memory_mb:
        _limit_memory_growth(memory_mb)
    try:
        draft = draft_template(chat_template, special_tokens=special, time_budget=time_budget)
        return draft.to_dict() if report else draft.template
    except DraftError as exc:
        if memory_mb and "MemoryError" in str(exc):
            raise DraftError(f"{exc}. {_over_memory(memory_mb)}") from None
        raise
    except MemoryError:
        raise DraftError(_over_memory(memory_mb)) from None


def _limit_memory_growth(memory_mb: float) -> None:
    """Cap this process's address space at what it maps now plus ``memory_mb`` MB (Linux; elsewhere nothing).
    Relative, because a forked child maps all of its parent (a test runner may map gigabytes)."""
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as fh:
            mapped = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
        limit = mapped + int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ImportError, OSError, ValueError, StopIteration):
        pass


def add_subcommand(sub: Any) -> None:
    """Register ``draft`` on an argparse subparsers object."""
    p = sub.add_parser("draft", help="draft a response template from a chat template (exit 0 JSON on stdout, 2 when "
                                     "it cannot be analysed)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("chat_template", nargs="?", help="a chat template file (.jinja)")
    p.add_argument("--special-tokens", metavar="TOKENIZER_FOLDER",
                   help="read bos/eos and the added tokens from a saved tokenizer folder")
    p.add_argument("--tokenizer", metavar="FOLDER", help="read the chat template and special tokens from a saved "
                                                          "tokenizer folder (instead of CHAT_TEMPLATE)")
    p.add_argument("--report", action="store_true", help="print the whole draft: template, confidence, evidence, "
                                                         "sample checks, notes")
    p.add_argument("--time-budget", type=float, default=20.0, metavar="SECONDS",
                   help="seconds for rendering and checking (default 20; the drafting process is killed "
                        f"{KILL_GRACE_S:g} s past it)")
    p.add_argument("--max-memory-mb", type=float, default=2048.0, metavar="MB",
                   help="memory the drafting process may take (default 2048; 0: no limit)")
    p.set_defaults(run=run)
