"""Render a conversation with a chat template exactly as ``tokenizer.apply_chat_template`` does, without a tokenizer.

The drafter (`parsing.doctor.draft`) and the template library's tests render chat templates that are
given as text (a ``chat_template.jinja`` file, the ``chat_template`` key of a tokenizer config). They
must see what a real tokenizer would produce, so this module goes through transformers' own
machinery: ``transformers.utils.chat_template_utils.render_jinja_template``, the sandboxed
(``ImmutableSandboxedEnvironment``) Jinja renderer that ``apply_chat_template`` calls, with the same
preparation ``apply_chat_template`` does first: message keys whose value is None are dropped, and the
tokenizer's special tokens (``bos_token``, ``eos_token``, ...) are passed as template variables that
explicit keyword arguments override.

A rendering runs under a deadline (`RenderTimeout`): a chat template is code from a model repository
and may loop for a very long time; the deadline is checked on every line the compiled template
executes. transformers is imported on first use.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Mapping

__all__ = ["RenderError", "RenderTimeout", "render_chat", "special_tokens_map"]

# The keys of a tokenizer's ``special_tokens_map`` that chat templates read.
_SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class RenderError(ValueError):
    """The chat template could not render a conversation. ``str(exc)`` says why, in one line."""


class RenderTimeout(RenderError):
    """A rendering ran past its deadline (the chat template loops for too long)."""


def special_tokens_map(tokens: Mapping[str, Any] | None) -> dict[str, str]:
    """The template variables a tokenizer passes for its special tokens.

    ``tokens`` is a tokenizer's ``special_tokens_map`` (``{"bos_token": "<s>", ...}``), or the
    ``tokenizer_config.json`` dict, whose token entries may be AddedToken dicts
    (``{"content": "<s>", ...}``); other keys are ignored. Returns ``{name: text}``.
    """
    out: dict[str, str] = {}
    for key in _SPECIAL_TOKEN_KEYS:
        value = (tokens or {}).get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            out[key] = value
    return out


def _deadline_tracer(deadline: float):
    """A ``sys.settrace`` function that raises RenderTimeout once ``time.monotonic()`` passes ``deadline``.

    Only frames of compiled Jinja templates (file name ``<template>``) are traced line by line; other
    calls are checked once on entry, which keeps the overhead small.
    """

    def local(frame, event, arg):
        if time.monotonic() > deadline:
            raise RenderTimeout("the chat template took too long to render (stopped at the time budget)")
        return local

    def tracer(frame, event, arg):
        if time.monotonic() > deadline:
            raise RenderTimeout("the chat template took too long to render (stopped at the time budget)")
        return local if frame.f_code.co_filename == "<template>" else None

    return tracer


def render_chat(chat_template: str, messages: list[dict], *, tools: list | None = None,
                add_generation_prompt: bool = False, special_tokens: Mapping[str, Any] | None = None,
                deadline: float | None = None, **template_kwargs: Any) -> str:
    """Render ``messages`` with ``chat_template`` as ``apply_chat_template(..., tokenize=False)`` does.

    Args:
        chat_template: the Jinja source.
        messages: the conversation (role/content dicts; ``tool_calls``, ``reasoning_content`` ...).
        tools: JSON schemas in the ``apply_chat_template`` format, or None.
        add_generation_prompt: append the assistant turn's header.
        special_tokens: a special-tokens map (see `special_tokens_map`), passed as template variables.
        deadline: a ``time.monotonic()`` value; rendering past it raises `RenderTimeout`.
        **template_kwargs: extra template variables (``enable_thinking=False``, ...); they override
            special tokens of the same name, as in ``apply_chat_template``.

    Returns the rendered text (str).

    Raises:
        RenderError: the template raised (``raise_exception``, a Jinja syntax or undefined error, a
            sandbox violation ...); the message names the exception and its text.
        RenderTimeout: the deadline passed.
    """
    from transformers.utils.chat_template_utils import render_jinja_template

    conversation = [{k: v for k, v in m.items() if v is not None} for m in messages]
    kwargs = {**special_tokens_map(special_tokens), **template_kwargs}
    previous = sys.gettrace()
    if deadline is not None:
        if time.monotonic() > deadline:
            raise RenderTimeout("the time budget ran out before the chat template could be rendered")
        sys.settrace(_deadline_tracer(deadline))
    try:
        rendered, _ = render_jinja_template(conversations=[conversation], tools=tools, chat_template=chat_template,
                                            add_generation_prompt=add_generation_prompt, **kwargs)
    except RenderError:
        raise
    except RecursionError:
        raise RenderError("the chat template recursed too deeply") from None
    except Exception as exc:  # any error raised inside the template: Jinja, sandbox, raise_exception, TypeError
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise RenderError(f"{type(exc).__name__}: {text}" if text else type(exc).__name__) from exc
    finally:
        if deadline is not None:
            sys.settrace(previous)
    return rendered[0]
