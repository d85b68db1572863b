"""Duplicate JSON keys in the template editor: json.loads and transformers keep the last value without a word, so
the editor's status names every duplicated key and its JSON path (trial 11: a pasted second "content" field
silently replaced the first)."""

import json

from transformers.utils import chat_parsing as reference

from parsing.doctor.schema import duplicate_keys
from playground.render import template_status_html

TWICE = r"""{
  "start_anchor": "<|im_start|>assistant\n",
  "defaults": {"role": "assistant"},
  "fields": {
    "content": {"close": "<|im_end|>"},
    "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": true,
                   "transform": {"type": "function", "function": "{content}", "function": "{content}"}},
    "content": {"close": "<|end|>"}
  }
}"""


def test_duplicate_keys_names_each_key_and_its_path_in_document_order():
    assert duplicate_keys(TWICE) == [("fields.content", "content"),
                                     ("fields.tool_calls.transform.function", "function")]
    assert duplicate_keys('{"a": [{"k": 1, "k": 2, "k": 3}], "b": 1}') == [("a[0].k", "k")]  # once per key
    assert duplicate_keys('{"a": 1, "b": {"a": 2}}') == []  # the same key in different objects is fine
    assert duplicate_keys("{not json") == [] and duplicate_keys("[]") == []


def test_the_last_value_really_wins_in_the_reference():
    # what the info says: the first "content" field is dropped, as transformers reads the JSON
    out = reference.parse_response("Hi<|end|>", json.loads(TWICE), prefix="")
    assert out["content"] == "Hi"
    out = reference.parse_response("Hi<|im_end|>", json.loads(TWICE), prefix="")
    assert out["content"] == "Hi<|im_end|>"


def test_editor_status_shows_an_info_per_duplicated_key():
    html = template_status_html(None, TWICE)
    assert "template valid" in html
    assert html.count('class="tpl-warn tpl-dup"') == 2
    assert 'data-path="fields.content"' in html and 'the key "content" is written more than once' in html
    assert 'data-path="fields.tool_calls.transform.function"' in html
    assert "tpl-dup" not in template_status_html(None, '{"fields": {"content": {}}}')
