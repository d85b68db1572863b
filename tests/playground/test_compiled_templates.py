"""Compiled templates are kept by their text (`playground.session.compiled_template`): the page compiled the same
editor text several times per edit and at every Send, seconds each for a large template, outside any budget."""

from __future__ import annotations

import json

import pytest

import parsing
from examples import default_template
from playground.session import COMPILED_TEMPLATES, LiveParse, compiled_template

RAW = ("<think>\nweigh it</think>\n\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>"
       "<|im_end|>")


def _parse(live: LiveParse, chunks: list[str]) -> dict | None:
    for chunk in chunks:
        live.feed(chunk)
    live.finalize()
    return live.message


def test_one_text_is_compiled_once_and_its_parsers_share_it_without_sharing_state():
    compiled_template.cache_clear()
    text = json.dumps(default_template())
    first, second = LiveParse(text, ""), LiveParse(text, "")
    assert first.compiled is second.compiled
    # fed in turns, two parsers of the shared template give what a parser of a template of its own gives
    chunks = [RAW[i:i + 3] for i in range(0, len(RAW), 3)]
    for a, b in zip(chunks, chunks):
        first.feed(a)
        second.feed(b)
    first.finalize()
    second.finalize()
    alone = _parse(LiveParse(json.dumps(default_template(), indent=1), ""), chunks)  # other text: its own compile
    assert first.message == second.message == alone and alone["tool_calls"][0]["function"]["name"] == "f"


def test_the_kept_templates_are_bounded_and_errors_are_not_kept():
    compiled_template.cache_clear()
    text = json.dumps(default_template())
    kept = compiled_template(text)
    for i in range(COMPILED_TEMPLATES):
        compiled_template(json.dumps({**default_template(), "defaults": {"role": "assistant", "n": i}}))
    assert compiled_template.cache_info().currsize == COMPILED_TEMPLATES
    assert compiled_template(text) is not kept  # the one used longest ago was dropped
    for _ in range(2):
        with pytest.raises(parsing.TemplateError):
            compiled_template('{"fields": ')
    assert compiled_template.cache_info().currsize == COMPILED_TEMPLATES
