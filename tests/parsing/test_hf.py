"""Tokenizer integration against transformers' own tokenizer methods, on a tokenizer built here."""

import json

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
from transformers import PreTrainedTokenizerFast

from examples import default_template
from parsing import TemplateError
from parsing.hf import (load_template_from_pretrained, parse_with_tokenizer, parser_for_tokenizer,
                        save_template_to_tokenizer)

TEMPLATE = default_template()
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


def test_an_export_carries_no_loading_options_of_this_machine(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(tmp_path / "src")
    offline = AutoTokenizer.from_pretrained(tmp_path / "src", local_files_only=True)  # as the playground loads
    offline.save_pretrained(tmp_path / "plain")  # what transformers itself writes back
    written = json.loads((tmp_path / "plain" / "tokenizer_config.json").read_text())
    assert written.get("local_files_only") is True  # the class of key the export must leave out exists
    save_template_to_tokenizer(offline, TEMPLATE, tmp_path / "tok")
    config = json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text())
    assert not set(config) & {"is_local", "local_files_only"}, sorted(config)
    assert config["response_template"] == TEMPLATE and config["eos_token"] == "<|im_end|>"
    assert {k: v for k, v in written.items() if k not in ("is_local", "local_files_only", "response_template")} == \
        {k: v for k, v in config.items() if k != "response_template"}  # everything else as transformers wrote it


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc
    raise AssertionError("nothing raised")


def test_transformers_keyword_names_and_our_alias(tokenizer):
    """`schema=` (parse_response) and `response_template=` (get_response_parser), as the tokenizer methods
    name them; `template=` stays an alias."""
    edited = json.loads(json.dumps(TEMPLATE))
    edited["fields"]["reasoning_content"] = {"open": "<think>", "close": "</think>", "transform": {"t": "{content}"}}
    expected = tokenizer.parse_response(OUTPUTS[1], schema=edited, prefix=PROMPT)
    assert expected["reasoning_content"] == {"t": "plan"}
    assert parse_with_tokenizer(tokenizer, OUTPUTS[1], schema=edited, prefix=PROMPT) == expected
    assert parse_with_tokenizer(tokenizer, OUTPUTS[1], edited, prefix=PROMPT) == expected
    assert parse_with_tokenizer(tokenizer, OUTPUTS[1], template=edited, prefix=PROMPT) == expected
    for kw in ({"response_template": edited}, {"template": edited}):
        ours = parser_for_tokenizer(tokenizer, prefix=PROMPT, **kw)
        ref = tokenizer.get_response_parser(response_template=edited, prefix=PROMPT)
        ours.feed(OUTPUTS[1])
        ref.feed(OUTPUTS[1])
        assert ours.finalize()[0] == ref.finalize()[0] == expected


def test_unknown_or_doubled_keywords_are_a_clear_type_error(tokenizer):
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['response_template'\]"):
        parse_with_tokenizer(tokenizer, OUTPUTS[1], response_template=TEMPLATE, prefix=PROMPT)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['schema'\]"):
        parser_for_tokenizer(tokenizer, schema=TEMPLATE, prefix=PROMPT)
    with pytest.raises(TypeError, match="twice"):
        parse_with_tokenizer(tokenizer, OUTPUTS[1], TEMPLATE, template=TEMPLATE, prefix=PROMPT)
    with pytest.raises(TypeError, match="twice"):
        parser_for_tokenizer(tokenizer, TEMPLATE, template=TEMPLATE, prefix=PROMPT)
    assert parse_with_tokenizer(tokenizer, OUTPUTS[1], prefix=PROMPT, recover=True, time_budget=5.0)["content"]


def test_tokenizer_level_errors_have_the_tokenizer_methods_texts(tokenizer):
    bare = PreTrainedTokenizerFast(tokenizer_object=tokenizer.backend_tokenizer)
    pairs = [
        (lambda: bare.parse_response(OUTPUTS[1], prefix=""), lambda: parse_with_tokenizer(bare, OUTPUTS[1], prefix="")),
        (lambda: bare.get_response_parser(prefix=""), lambda: parser_for_tokenizer(bare, prefix="")),
        (lambda: tokenizer.parse_response(OUTPUTS[1]), lambda: parse_with_tokenizer(tokenizer, OUTPUTS[1])),
        (lambda: tokenizer.parse_response(OUTPUTS, prefix=[PROMPT]),
         lambda: parse_with_tokenizer(tokenizer, OUTPUTS, prefix=[PROMPT])),
        (lambda: tokenizer.get_response_parser(prefix=[ids(tokenizer, PROMPT)] * 2),
         lambda: parser_for_tokenizer(tokenizer, prefix=[ids(tokenizer, PROMPT)] * 2)),
        (lambda: tokenizer.parse_response(OUTPUTS[1], schema={"fields": {}}, prefix=""),
         lambda: parse_with_tokenizer(tokenizer, OUTPUTS[1], schema={"fields": {}}, prefix="")),
    ]
    for theirs, ours in pairs:
        expected, got = _raised(theirs), _raised(ours)
        assert isinstance(got, type(expected)) and str(got) == str(expected), (expected, got)


def test_a_template_that_does_not_round_trip_is_a_round_trip_error(tokenizer, tmp_path):
    from parsing.hf import RoundTripError

    lossy = json.loads(json.dumps(TEMPLATE))
    lossy["defaults"]["tags"] = ("a", "b")  # a tuple comes back from JSON as a list
    with pytest.raises(RoundTripError) as info:
        save_template_to_tokenizer(tokenizer, lossy, tmp_path / "tok")
    assert info.value.saved == lossy and info.value.reloaded["defaults"]["tags"] == ["a", "b"]
    assert isinstance(info.value, ValueError)
    assert load_template_from_pretrained(tmp_path / "tok")["defaults"]["tags"] == ["a", "b"]  # written all the same
