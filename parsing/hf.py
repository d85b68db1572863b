"""Tokenizer integration (spec section 8): parse token ids and batches, save and load templates.

Works with any Hugging Face tokenizer (anything with ``decode`` and ``save_pretrained``). Token ids may be
Python lists, NumPy arrays or torch tensors, 1-D (one sequence) or 2-D (a batch). transformers is imported
only by the functions that need it, so ``import parsing.hf`` stays light.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable

from .parser import ResponseParser, parse_response
from .template import load_template


def _template_of(tokenizer: Any, template: Any) -> Any:
    if template is not None:
        return template
    found = getattr(tokenizer, "response_template", None)
    if found is None:
        raise AttributeError("This tokenizer has no `response_template`; pass a template explicitly.")
    return found


def _as_texts(tokenizer: Any, value: Any) -> tuple[list[str], bool]:
    """Decode ``value`` into texts. Returns (texts, batched)."""
    if isinstance(value, str):
        return [value], False
    if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str)):
        return list(value), True
    decoded = tokenizer.decode(value)  # 2-D ids decode to a list of strings
    return ([decoded], False) if isinstance(decoded, str) else (list(decoded), True)


def parse_with_tokenizer(tokenizer: Any, response: Any, template: Any = None, *, prefix: Any = None,
                         tools: list[dict | Callable] | None = None, **options: Any) -> dict | list[dict]:
    """Parse model output like ``tokenizer.parse_response``, with our engine.

    Args:
        tokenizer: a Hugging Face tokenizer (used to decode ids, special tokens kept).
        response: a string, token ids (1-D list/array/tensor), or a batch (list of strings, list of id lists,
            2-D array/tensor).
        template: the response template; defaults to ``tokenizer.response_template``.
        prefix: the prompt before generation: a string or ids, or for a batch either one prefix (broadcast)
            or one per item. Required; ``""`` or ``[]`` opts out.
        tools: tools offered to the model, for typing tool-call arguments.
        options: `ResponseParser` options (``recover``, ``regex_timeout``).

    Returns:
        One message dict for a single sequence; a list of them for a batch (even a one-item batch).

    Raises:
        AttributeError: no template given and the tokenizer has none.
        ValueError: ``prefix`` is None, or a list of prefixes whose length differs from the batch's; and the
            errors of `parse_response`.
    """
    template = load_template(_template_of(tokenizer, template))
    if prefix is None:
        raise ValueError('`prefix=` is required (the prompt that came before generation); pass "" to opt out.')
    texts, batched = _as_texts(tokenizer, response)
    if isinstance(prefix, (list, tuple)) and not prefix:
        prefixes, prefix_batched = [""], False
    else:
        prefixes, prefix_batched = _as_texts(tokenizer, prefix)
    if not prefix_batched:
        prefixes = prefixes * len(texts)
    elif len(prefixes) != len(texts):
        raise ValueError(f"Got {len(texts)} response(s) but {len(prefixes)} prefix(es); pass one prefix "
                         "(broadcast to every response) or one per response.")
    parsed = [parse_response(text, template, prefix=p, tools=tools, **options) for text, p in zip(texts, prefixes)]
    return parsed if batched else parsed[0]


def parser_for_tokenizer(tokenizer: Any, template: Any = None, *, prefix: Any = None,
                         tools: list[dict | Callable] | None = None, **options: Any) -> ResponseParser:
    """A streaming `ResponseParser` for one sequence, like ``tokenizer.get_response_parser``.

    ``prefix`` is a string or 1-D ids (decoded with special tokens kept). ``options`` go to `ResponseParser`
    (``spans``, ``recover``, ``regex_timeout``).

    Raises:
        AttributeError: no template given and the tokenizer has none.
        ValueError: ``prefix`` is None or a batch.
    """
    template = _template_of(tokenizer, template)
    if prefix is not None and not isinstance(prefix, str):
        prefix = tokenizer.decode(prefix)
        if not isinstance(prefix, str):
            raise ValueError("`prefix=` must be one sequence (str, 1-D ids) for a streaming parser.")
    return ResponseParser(template, prefix=prefix, tools=tools, **options)


def save_template_to_tokenizer(tokenizer: Any, template: Any, directory: str | os.PathLike) -> dict:
    """Save a copy of ``tokenizer`` with ``template`` as its ``response_template``, then verify by reloading.

    The template is validated first; the tokenizer passed in is not modified (a deep copy is saved).
    ``save_pretrained`` writes the template under the key ``response_template`` in ``tokenizer_config.json``.

    Returns:
        The template as read back by ``AutoTokenizer.from_pretrained(directory)``.

    Raises:
        TemplateError: the template is invalid.
        ValueError: the reloaded tokenizer's template differs from the one saved.
    """
    compiled = load_template(template)
    spec = compiled.spec
    saved = copy.deepcopy(tokenizer)
    saved.response_template = spec
    saved.save_pretrained(str(directory))
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(str(directory))
    back = getattr(reloaded, "response_template", None)
    if back != spec:
        raise ValueError(f"response_template did not round-trip through {directory}: got {back!r}")
    return back


def load_template_from_pretrained(directory: str | os.PathLike) -> dict | None:
    """Read ``response_template`` from a saved tokenizer's ``tokenizer_config.json`` (None when absent).

    Reads the JSON file directly, so it needs neither transformers nor the tokenizer's vocabulary.

    Raises:
        OSError: the folder has no readable ``tokenizer_config.json``.
        json.JSONDecodeError: the file is not JSON.
    """
    with open(os.path.join(directory, "tokenizer_config.json"), encoding="utf-8") as fh:
        return json.load(fh).get("response_template")
