"""docs/template-language.md: its first template parses its example output to the message it shows, with our
parser and with transformers' (the page is the reference a new user writes a template from)."""

from __future__ import annotations

import json
import os
import re

import differential as d

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                   "template-language.md")


def _blocks(kind: str) -> list[str]:
    text = open(DOC, encoding="utf-8").read()
    return re.findall(r"```" + kind + r"\n(.*?)```", text, flags=re.S)


def test_the_first_example_parses_as_the_page_says():
    template, message = (json.loads(b) for b in _blocks("json")[:2])
    output = _blocks("text")[0].rstrip("\n")
    for impl in (d.ours, d.ref):
        assert impl.parse_response(output, template, prefix="") == message


def test_every_template_key_the_loader_knows_is_documented():
    from parsing.template import FIELD_KEYS, TEMPLATE_KEYS

    text = open(DOC, encoding="utf-8").read()
    for key in sorted(TEMPLATE_KEYS | FIELD_KEYS):
        assert f"`{key}`" in text, key
