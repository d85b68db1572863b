"""Tokenizer integration against transformers' own tokenizer methods, on a tokenizer built here."""

import json

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
from transformers import PreTrainedTokenizerFast

from parsing import TemplateError
from parsing.hf import (load_template_from_pretrained, parse_with_tokenizer, parser_for_tokenizer,
                        save_template_to_tokenizer)

TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>"},
    },
}
SPECIAL = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"days": {"type": "integer"}, "city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def tokenizer():
    corpus = ["user assistant system hello weather Paris days city name arguments get_weather think plan",
              '{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}', "Sunny and warm."] * 20
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>"] + SPECIAL,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>")
    fast.add_special_tokens({"additional_special_tokens": SPECIAL})
    fast.response_template = TEMPLATE
    return fast


PROMPT = "<|im_start|>user\nweather in Paris<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUTPUTS = [
    'plan\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>',
    "plan\n</think>\n\nSunny and warm.<|im_end|>",
]


def ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_single_sequences_match_the_tokenizer_method(tokenizer):
    for out in OUTPUTS:
        expected = tokenizer.parse_response(out, prefix=PROMPT, tools=TOOLS)
        assert parse_with_tokenizer(tokenizer, out, prefix=PROMPT, tools=TOOLS) == expected
        out_ids, prompt_ids = ids(tokenizer, out), ids(tokenizer, PROMPT)
        for conv in (list, np.array, torch.tensor):
            got = parse_with_tokenizer(tokenizer, conv(out_ids), prefix=conv(prompt_ids), tools=TOOLS)
            assert got == tokenizer.parse_response(conv(out_ids), prefix=conv(prompt_ids), tools=TOOLS)
    first = parse_with_tokenizer(tokenizer, OUTPUTS[0], prefix=PROMPT, tools=TOOLS)
    assert first["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 3}


def test_batches_with_broadcast_and_per_item_prefixes(tokenizer):
    expected = tokenizer.parse_response(OUTPUTS, prefix=PROMPT)
    assert parse_with_tokenizer(tokenizer, OUTPUTS, prefix=PROMPT) == expected
    assert parse_with_tokenizer(tokenizer, OUTPUTS, prefix=[PROMPT, ""]) == \
        tokenizer.parse_response(OUTPUTS, prefix=[PROMPT, ""])
    one = parse_with_tokenizer(tokenizer, [OUTPUTS[1]], prefix=PROMPT)
    assert isinstance(one, list) and len(one) == 1
    # 2-D ids: pad both rows to the same length with a token that decodes to nothing harmful (im_end).
    rows = [ids(tokenizer, o) for o in OUTPUTS]
    pad = tokenizer.convert_tokens_to_ids("<|im_end|>")
    width = max(map(len, rows))
    matrix = [r + [pad] * (width - len(r)) for r in rows]
    for conv in (np.array, torch.tensor):
        assert parse_with_tokenizer(tokenizer, conv(matrix), prefix=ids(tokenizer, PROMPT)) == \
            tokenizer.parse_response(conv(matrix), prefix=ids(tokenizer, PROMPT))
    with pytest.raises(ValueError):
        parse_with_tokenizer(tokenizer, OUTPUTS, prefix=[PROMPT])
    with pytest.raises(ValueError):
        parse_with_tokenizer(tokenizer, OUTPUTS[0])
    assert parse_with_tokenizer(tokenizer, OUTPUTS[1], prefix=[]) == tokenizer.parse_response(OUTPUTS[1], prefix=[])


def test_streaming_parser_from_ids(tokenizer):
    parser = parser_for_tokenizer(tokenizer, prefix=ids(tokenizer, PROMPT), tools=TOOLS, spans=True)
    reference = tokenizer.get_response_parser(prefix=ids(tokenizer, PROMPT), tools=TOOLS)
    assert [e["type"] for e in parser.initial_events] == [e["type"] for e in reference.initial_events]
    for token in ids(tokenizer, OUTPUTS[0]):
        piece = tokenizer.decode([token])
        parser.feed(piece)
        reference.feed(piece)
    assert parser.finalize()[0] == reference.finalize()[0]
    bare = PreTrainedTokenizerFast(tokenizer_object=tokenizer.backend_tokenizer)
    with pytest.raises(AttributeError):
        parser_for_tokenizer(bare, prefix="")


def test_save_and_reload_round_trip(tokenizer, tmp_path):
    edited = json.loads(json.dumps(TEMPLATE))
    edited["fields"]["content"]["close"] = ["<|im_end|>", "<|endoftext|>"]
    back = save_template_to_tokenizer(tokenizer, edited, tmp_path / "tok")
    assert back == edited
    assert load_template_from_pretrained(tmp_path / "tok") == edited
    config = json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text())
    assert config["response_template"] == edited
    assert tokenizer.response_template == TEMPLATE  # the original tokenizer is untouched
    with pytest.raises(TemplateError):
        save_template_to_tokenizer(tokenizer, {"fields": {}}, tmp_path / "bad")
