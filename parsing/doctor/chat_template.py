"""Chat-template helpers shared by the doctor: the generation prompt a tokenizer renders, and where two
renderings part.

`lint` checks the start anchor against `generation_prompt`. Rendering a chat template given as text, without a
tokenizer, is `parsing.doctor.chat_render`; comparing renderings (common prefixes, markers) is
`parsing.doctor.textdiff`.
"""

from __future__ import annotations

from typing import Any

from .textdiff import common_prefix

__all__ = ["REASONING_KEY", "generation_prompt"]

#: The message key chat templates read reasoning from.
REASONING_KEY = "reasoning_content"


def generation_prompt(tokenizer: Any, messages: list[dict] | None = None, *, tools: list | None = None
                      ) -> tuple[str, int]:
    """Render a prompt with the tokenizer's chat template and locate its generation prompt.

    Args:
        tokenizer: anything with transformers' ``apply_chat_template(messages, tools=..., tokenize=False,
            add_generation_prompt=...)`` (a `PreTrainedTokenizerBase`); transformers itself is not imported.
        messages: the conversation; default one user message.
        tools: optional tool schemas passed to the chat template.

    Returns:
        ``(prompt, start)``: the prompt rendered with ``add_generation_prompt=True`` and the offset where the
        part that the generation prompt added begins (`textdiff.common_prefix` with the rendering without it).

    Raises:
        whatever the chat template raises (e.g. ``ValueError`` if the tokenizer has no chat template,
        ``jinja2`` errors for templates that reject the conversation).
    """
    messages = messages or [{"role": "user", "content": "Hello, doctor."}]
    kw = {"tools": tools} if tools else {}
    with_gp = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kw)
    without = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False, **kw)
    return with_gp, common_prefix(with_gp, without)
