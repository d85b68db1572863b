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


#: `ResponseParser` options the tokenizer helpers pass through (transformers' methods take none of them).
PARSE_OPTIONS = ("recover", "regex_timeout", "time_budget", "max_values", "max_join_chars")
PARSER_OPTIONS = ("spans",) + PARSE_OPTIONS
#: ``tokenizer_config.json`` keys that describe how *this machine* loaded the tokenizer, not the tokenizer:
#: transformers records ``from_pretrained`` loading options (``is_local``, ``local_files_only`` when it runs
#: offline, a cache folder, a token) and writes them back on ``save_pretrained``. An exported folder is what its
#: author uploads, so `save_template_to_tokenizer` leaves them out.
LOADING_KEYS = ("is_local", "local_files_only", "cache_dir", "token", "use_auth_token", "proxies",
                "force_download", "resume_download", "_commit_hash")


def _pick_template(caller: str, given: Any, alias: Any, given_name: str) -> Any:
    """The template passed under transformers' name (`given_name`) or our older alias ``template=``."""
    if given is not None and alias is not None:
        raise TypeError(f"{caller}() got the template twice: pass {given_name}= (transformers' name) or template=, "
                        "not both")
    return given if given is not None else alias


def _check_options(caller: str, options: dict, allowed: tuple[str, ...], template_name: str) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"{caller}() got unexpected keyword argument(s) {unknown}; it takes {template_name}= "
                        f"(or template=), prefix=, tools= and the parser options {list(allowed)}")


def _as_texts(tokenizer: Any, value: Any) -> tuple[list[str], bool]:
    """Decode ``value`` into texts. Returns (texts, batched)."""
    if isinstance(value, str):
        return [value], False
    if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str)):
        return list(value), True
    decoded = tokenizer.decode(value)  # 2-D ids decode to a list of strings
    return ([decoded], False) if isinstance(decoded, str) else (list(decoded), True)


def parse_with_tokenizer(tokenizer: Any, response: Any, schema: Any = None, *, prefix: Any = None,
                         tools: list[dict | Callable] | None = None, template: Any = None,
                         **options: Any) -> dict | list[dict]:
    """Parse model output like ``tokenizer.parse_response(response, schema, prefix=, tools=)``, with `parsing`.

    Args:
        tokenizer: a Hugging Face tokenizer (used to decode ids, special tokens kept).
        response: a string, token ids (1-D list/array/tensor), or a batch (list of strings, list of id lists,
            2-D array/tensor).
        schema: the response template (transformers' name for it); defaults to ``tokenizer.response_template``.
            ``template=`` is accepted as an alias.
        prefix: the prompt before generation: a string or ids, or for a batch either one prefix (broadcast)
            or one per item. Required; ``""`` or ``[]`` opts out.
        tools: tools offered to the model, for typing tool-call arguments.
        options: `ResponseParser` options: ``recover``, ``regex_timeout``, ``time_budget``, ``max_values``,
            ``max_join_chars``.

    Returns:
        One message dict for a single sequence; a list of them for a batch (even a one-item batch).

    Raises:
        TypeError: an unknown keyword, or the template given both as ``schema=`` and ``template=``.
        AttributeError: no template given and the tokenizer has none.
        ValueError: ``prefix`` is None, or a list of prefixes whose length differs from the batch's; and the
            errors of `parse_response`. Texts are transformers' own.
    """
    _check_options("parse_with_tokenizer", options, PARSE_OPTIONS, "schema")
    schema = _pick_template("parse_with_tokenizer", schema, template, "schema")
    if schema is None:
        schema = getattr(tokenizer, "response_template", None)
        if schema is None:
            raise AttributeError("This tokenizer does not have a `response_template` for parsing chat responses!")
    if prefix is None:
        raise ValueError(
            "`parse_response` requires `prefix=` (the prompt that came before generation), because chat "
            "templates often pre-write part of the assistant message (e.g. an opening `<think>` tag) that the "
            "parser must see to parse correctly. If you're sure you don't need the prefix, you can pass an "
            "empty string or list."
        )
    compiled = load_template(schema)
    texts, batched = _as_texts(tokenizer, response)
    if isinstance(prefix, (list, tuple)) and not prefix:
        prefixes, prefix_batched = [""], False
    else:
        prefixes, prefix_batched = _as_texts(tokenizer, prefix)
    if not prefix_batched:
        prefixes = prefixes * len(texts)
    elif len(prefixes) != len(texts):
        raise ValueError(f"Got {len(texts)} response(s) but {len(prefixes)} prefix(es); `prefix` must be "
                         "a single sequence (broadcast to every response), or one prefix per response.")
    parsed = [parse_response(text, compiled, prefix=p, tools=tools, **options) for text, p in zip(texts, prefixes)]
    return parsed if batched else parsed[0]


def parser_for_tokenizer(tokenizer: Any, response_template: Any = None, *, prefix: Any = None,
                         tools: list[dict | Callable] | None = None, template: Any = None,
                         **options: Any) -> ResponseParser:
    """A streaming `ResponseParser` for one sequence, like ``tokenizer.get_response_parser(response_template,
    prefix=, tools=)``.

    ``response_template`` (transformers' name; ``template=`` is an alias) defaults to the tokenizer's.
    ``prefix`` is a string or 1-D ids (decoded with special tokens kept). ``options`` go to `ResponseParser`:
    ``spans``, ``recover``, ``regex_timeout``, ``time_budget``, ``max_values``.

    Raises:
        TypeError: an unknown keyword, or the template given both as ``response_template=`` and ``template=``.
        AttributeError: no template given and the tokenizer has none.
        ValueError: ``prefix`` is None or a batch (transformers' texts).
    """
    _check_options("parser_for_tokenizer", options, PARSER_OPTIONS, "response_template")
    chosen = _pick_template("parser_for_tokenizer", response_template, template, "response_template")
    if chosen is None:
        chosen = getattr(tokenizer, "response_template", None)
        if chosen is None:
            raise AttributeError(
                "This tokenizer does not have a `response_template` set; cannot create a response event stream.")
    if prefix is not None and not isinstance(prefix, str):
        prefix = tokenizer.decode(prefix)
        if not isinstance(prefix, str):
            raise ValueError(
                "`prefix=` must be a single sequence (str, list[int], or 1D tensor) for `get_response_parser`.")
    return ResponseParser(chosen, prefix=prefix, tools=tools, **options)


class RoundTripError(ValueError):
    """The template read back from a saved tokenizer differs from the one saved.

    Attributes: ``saved`` (the template written), ``reloaded`` (what ``AutoTokenizer.from_pretrained`` gave back,
    None when it had none), ``directory``.
    """

    def __init__(self, saved: dict, reloaded: Any, directory: str | os.PathLike):
        super().__init__(f"response_template did not round-trip through {directory}: got {reloaded!r}")
        self.saved, self.reloaded, self.directory = saved, reloaded, directory


def save_template_to_tokenizer(tokenizer: Any, template: Any, directory: str | os.PathLike) -> dict:
    """Save a copy of ``tokenizer`` with ``template`` as its ``response_template``, then verify by reloading.

    The template is validated first; the tokenizer passed in is not modified (a deep copy is saved).
    ``save_pretrained`` writes the template under the key ``response_template`` in ``tokenizer_config.json``;
    the loading options transformers records there (`LOADING_KEYS`: ``is_local``, ``local_files_only``, ...) are
    left out, so the folder holds what an author uploads and nothing of this machine.

    Returns:
        The template as read back by ``AutoTokenizer.from_pretrained(directory)``.

    Raises:
        TemplateError: the template is invalid.
        RoundTripError: (a ValueError) the reloaded tokenizer's template differs from the one saved; the folder
            is written all the same.
    """
    compiled = load_template(template)
    spec = compiled.spec
    saved = copy.deepcopy(tokenizer)
    saved.response_template = spec
    saved.save_pretrained(str(directory))
    _drop_loading_keys(directory)
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(str(directory))
    back = getattr(reloaded, "response_template", None)
    if back != spec:
        raise RoundTripError(spec, back, directory)
    return back


def _drop_loading_keys(directory: str | os.PathLike) -> None:
    """Remove `LOADING_KEYS` from the saved ``tokenizer_config.json`` (rewritten only when one is there)."""
    path = os.path.join(directory, "tokenizer_config.json")
    with open(path, encoding="utf-8") as fh:
        config = json.load(fh)
    if any(k in config for k in LOADING_KEYS):
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({k: v for k, v in config.items() if k not in LOADING_KEYS}, fh, indent=2, ensure_ascii=False)
            fh.write("\n")


def load_template_from_pretrained(directory: str | os.PathLike) -> dict | None:
    """Read ``response_template`` from a saved tokenizer's ``tokenizer_config.json`` (None when absent or null).

    Reads the JSON file directly, so it needs neither transformers nor the tokenizer's vocabulary. The one reader
    of a tokenizer folder's template (the CLI's ``TEMPLATE`` argument uses it too).

    Raises:
        OSError: the folder has no readable ``tokenizer_config.json``.
        UnicodeDecodeError: the file is not UTF-8.
        json.JSONDecodeError: the file is not JSON.
        ValueError: the file is JSON but not an object (a tokenizer config is one).
    """
    with open(os.path.join(directory, "tokenizer_config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    if not isinstance(config, dict):
        raise ValueError(f"tokenizer_config.json must be a JSON object, got {type(config).__name__}")
    return config.get("response_template")
