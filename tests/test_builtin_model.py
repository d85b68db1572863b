"""The shipped built-in model: offline loading, size limits, chat template, response template,
and a short seeded generation that parses."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples import builtin_model  # noqa: E402
from examples.builtin_model.template import CONTROL_TOKENS, MARKER_TOKENS, RESPONSE_TEMPLATE, SPECIAL_TOKENS  # noqa: E402

pytestmark = pytest.mark.slow  # loads the shipped model and generates

# Whether the shipped model copies argument values from the prompt (city names, times). The
# evaluation (examples/builtin_model/results/eval.json, "tool_call_exact") says how often it
# does; this switch follows the shipped weights.
COPIES_ARGUMENTS = True

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the current local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def _parsers():
    """The reference parser, plus our engine once it exports parse_response."""
    from transformers.utils.chat_parsing import parse_response

    found = [pytest.param(parse_response, id="transformers")]
    try:
        ours = getattr(importlib.import_module("parsing"), "parse_response", None)
    except Exception:  # engine not importable yet
        ours = None
    if callable(ours):
        found.append(pytest.param(ours, id="parsing"))
    return found


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR, local_files_only=True)


@pytest.fixture(scope="module")
def model():
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(2)
    return AutoModelForCausalLM.from_pretrained(builtin_model.MODEL_DIR, local_files_only=True).eval()


def test_files_present_and_within_size_limits():
    folder = Path(builtin_model.MODEL_DIR)
    assert folder.is_absolute()
    assert builtin_model.available()
    assert (folder / "model.safetensors").stat().st_size <= 25 * 1024 * 1024
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", "pt") as f:
        n_params = sum(_prod(f.get_slice(k).get_shape()) for k in f.keys())
    assert 1_000_000 < n_params <= 6_500_000
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] in ("llama", "qwen2")


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def test_model_loads_offline_as_causal_lm(model, tokenizer):
    assert type(model).__name__ in ("LlamaForCausalLM", "Qwen2ForCausalLM")
    assert model.config.vocab_size == len(tokenizer)
    assert model.generation_config.eos_token_id == tokenizer.convert_tokens_to_ids("<|im_end|>")
    loaded, loaded_tokenizer = builtin_model.load(threads=2)
    assert loaded.config.to_dict() == model.config.to_dict() and not loaded.training
    assert loaded_tokenizer.get_vocab() == tokenizer.get_vocab()


def test_special_tokens_are_single_tokens(tokenizer):
    for tok in SPECIAL_TOKENS:
        ids = tokenizer.encode(tok, add_special_tokens=False)
        assert len(ids) == 1, tok
        assert tokenizer.decode(ids, skip_special_tokens=False) == tok
    assert tokenizer.eos_token == "<|im_end|>"
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))


def test_markers_are_not_special_so_skip_special_tokens_keeps_them(tokenizer):
    """Servers that decode with skip_special_tokens=True (transformers serve, vLLM's default)
    must still see the reasoning and tool markers, and must lose the end-of-turn token."""
    assert sorted(tokenizer.all_special_tokens) == sorted(CONTROL_TOKENS)
    assert not set(MARKER_TOKENS) & set(tokenizer.all_special_tokens)
    turn = ('<think>\nCall it.\n</think>\n\n<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n'
            '</tool_call><|im_end|>')
    history = '<|im_start|>user\n<tool_response>\n{"time": "10:30"}\n</tool_response><|im_end|>\n'
    ids = tokenizer.encode(turn, add_special_tokens=False)
    for marker in ("<think>", "</think>", "<tool_call>", "</tool_call>"):
        assert tokenizer.convert_tokens_to_ids(marker) in ids
    assert tokenizer.decode(ids, skip_special_tokens=False) == turn
    assert tokenizer.decode(ids, skip_special_tokens=True) == turn[:-len("<|im_end|>")]
    kept = tokenizer.decode(tokenizer.encode(history, add_special_tokens=False), skip_special_tokens=True)
    assert kept == 'user\n<tool_response>\n{"time": "10:30"}\n</tool_response>\n'


def test_chat_template_system_tools_calls_results(tokenizer):
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "get_time", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": '{"temperature": 18}'},
        {"role": "tool", "content": '{"time": "10:30"}'},
    ]
    text = tokenizer.apply_chat_template(messages, tools=[WEATHER, TIME], add_generation_prompt=True,
                                         tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are terse.\n\n# Tools\n")
    assert "<tools>\n" + json.dumps(WEATHER["function"]) + "\n" + json.dumps(TIME["function"]) + "\n</tools>" in text
    assert "<|im_start|>user\nWeather and time in Paris?<|im_end|>\n" in text
    # parallel calls follow each other with no whitespace in between (implicit-field pitfall)
    assert ('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
            '<tool_call>\n{"name": "get_time", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n') in text
    # consecutive tool results share one user turn
    assert ('<|im_start|>user\n<tool_response>\n{"temperature": 18}\n</tool_response>\n'
            '<tool_response>\n{"time": "10:30"}\n</tool_response><|im_end|>\n') in text
    assert text.endswith("<|im_start|>assistant\n<think>\n")


def test_chat_template_thinking_switch_and_plain(tokenizer):
    messages = [{"role": "user", "content": "Hi"}]
    on = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    off = tokenizer.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False, tokenize=False)
    assert on == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    assert off == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    with_system = tokenizer.apply_chat_template([{"role": "system", "content": "Be kind."}] + messages,
                                                add_generation_prompt=False, tokenize=False)
    assert with_system == "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    # reasoning of the turn after the last user message is rendered, earlier reasoning is dropped
    history = messages + [{"role": "assistant", "reasoning_content": "Greet.", "content": "Hello!"}]
    assert tokenizer.apply_chat_template(history, tokenize=False).endswith(
        "<|im_start|>assistant\n<think>\nGreet.\n</think>\n\nHello!<|im_end|>\n")
    later = history + [{"role": "user", "content": "Bye"}]
    assert "Greet." not in tokenizer.apply_chat_template(later, tokenize=False)


def test_response_template_saved_and_loads(tokenizer):
    config = json.loads((Path(builtin_model.MODEL_DIR) / "tokenizer_config.json").read_text())
    assert config["response_template"] == RESPONSE_TEMPLATE
    assert "chat_template" in config
    assert tokenizer.response_template == RESPONSE_TEMPLATE
    from transformers.utils.chat_parsing.response_templates import load_response_template

    load_response_template(tokenizer.response_template)


@pytest.mark.parametrize("parse_response", _parsers())
@pytest.mark.parametrize("thinking", [True, False])
@pytest.mark.parametrize("target", [
    {"role": "assistant", "reasoning_content": "Need two calls.", "content": "Checking both.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"type": "function", "function": {"name": "get_time", "arguments": {"city": "Oslo"}}}]},
    {"role": "assistant", "reasoning_content": "Easy.", "content": "It is 18°C in Paris."},
    {"role": "assistant", "reasoning_content": "Call it.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome", "unit": "celsius"}}}]},
], ids=["content+2calls", "content", "1call"])
def test_chat_template_round_trips_through_response_template(tokenizer, parse_response, thinking, target):
    """Render an assistant turn with the chat template and parse it back: same message."""
    messages = [{"role": "user", "content": "Weather in Paris and time in Oslo?"}]
    prompt = tokenizer.apply_chat_template(messages, tools=[WEATHER, TIME], add_generation_prompt=True,
                                           enable_thinking=thinking, tokenize=False)
    expected = dict(target)
    if not thinking:
        expected.pop("reasoning_content")
    full = tokenizer.apply_chat_template(messages + [expected], tools=[WEATHER, TIME], tokenize=False)
    head = "<|im_start|>assistant\n" + ("<think>\n" if thinking else "")
    turn = full[full.rindex("<|im_start|>assistant\n"):]
    assert turn.startswith(head)
    generation = turn[len(head):].rstrip("\n")
    message = parse_response(generation, tokenizer.response_template, prefix=prompt, tools=[WEATHER, TIME])
    assert message == expected


def _generate(model, tokenizer, messages, tools, thinking, do_sample, seed, max_new_tokens=64,
              skip_special_tokens=False):
    import torch

    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                           enable_thinking=thinking, tokenize=False)
    ids = torch.tensor([tokenizer.encode(prompt, add_special_tokens=False)])
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=do_sample,
                             temperature=0.7 if do_sample else None, top_k=0 if do_sample else None,
                             top_p=None, max_new_tokens=max_new_tokens)
    return prompt, tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=skip_special_tokens)


@pytest.mark.parametrize("parse_response", _parsers())
def test_greedy_generation_calls_the_tool(model, tokenizer, parse_response):
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    prompt, text = _generate(model, tokenizer, messages, [WEATHER, TIME], False, False, 0)
    assert text.endswith("<|im_end|>"), text
    message = parse_response(text, tokenizer.response_template, prefix=prompt, tools=[WEATHER, TIME])
    assert "reasoning_content" not in message and "content" not in message, text
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"], text
    # what a server decoding with skip_special_tokens=True streams: same message, no end-of-turn
    _, served = _generate(model, tokenizer, messages, [WEATHER, TIME], False, False, 0, skip_special_tokens=True)
    assert served == text[:-len("<|im_end|>")], served
    assert parse_response(served, tokenizer.response_template, prefix=prompt, tools=[WEATHER, TIME]) == message
    if COPIES_ARGUMENTS:
        assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}, text
    else:
        jsonschema.validate(message["tool_calls"][0]["function"]["arguments"],
                            dict(WEATHER["function"]["parameters"], additionalProperties=False))


@pytest.mark.parametrize("parse_response", _parsers())
def test_sampled_generation_with_thinking_parses(model, tokenizer, parse_response):
    messages = [{"role": "user", "content": "What time is it in Tokyo?"}]
    prompt, text = _generate(model, tokenizer, messages, [WEATHER, TIME], True, True, 7, max_new_tokens=96)
    message = parse_response(text, tokenizer.response_template, prefix=prompt, tools=[WEATHER, TIME])
    assert message["reasoning_content"], text
    assert message.get("tool_calls") or message.get("content"), text


def _parsed(tokenizer, prompt, text, tools):
    from transformers.utils.chat_parsing import parse_response

    return parse_response(text, tokenizer.response_template, prefix=prompt, tools=tools)


def test_demo_conversation_round_trip(model, tokenizer):
    """The playground's demo (examples.builtin_model.DEMO_*), greedy: the example message gets a
    get_weather call for the city asked about, the example result gets an answer stating its
    city and temperature, and with thinking on (the page's default) its condition too."""
    tools = builtin_model.DEMO_TOOLS
    result = json.loads(builtin_model.DEMO_TOOL_RESULT)
    for thinking in (True, False):
        messages = [{"role": "user", "content": builtin_model.DEMO_PROMPTS[0]}]
        prompt, text = _generate(model, tokenizer, messages, tools, thinking, False, 0, max_new_tokens=96)
        message = _parsed(tokenizer, prompt, text, tools)
        assert [c["function"] for c in message.get("tool_calls") or []] == [
            {"name": "get_weather", "arguments": {"city": result["city"]}}], text
        assert bool(message.get("reasoning_content")) == thinking, text
        messages += [message_without_reasoning(message), {"role": "tool", "content": builtin_model.DEMO_TOOL_RESULT}]
        prompt, text = _generate(model, tokenizer, messages, tools, thinking, False, 0, max_new_tokens=96)
        answer = _parsed(tokenizer, prompt, text, tools)
        assert "tool_calls" not in answer, text
        stated = [result["city"], str(result["temperature"])] + ([result["condition"]] if thinking else [])
        for value in stated:
            assert value in answer["content"], text


def message_without_reasoning(message):
    return {k: v for k, v in message.items() if k != "reasoning_content"}


@pytest.mark.parametrize("question", [builtin_model.DEMO_PROMPTS[1], "Capital of France?"])
def test_plain_question_is_answered_without_a_tool_call(model, tokenizer, question):
    """The demo's plain question and the issue's example (which got a get_weather call before),
    weather, time and search offered, greedy. (The issue's octopus example still fails with
    thinking on: README.md, known limits.)"""
    tools = builtin_model.DEMO_TOOLS + [{"type": "function", "function": {
        "name": "web_search", "description": "Search the web and return the top results.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    for thinking in (True, False):
        prompt, text = _generate(model, tokenizer, [{"role": "user", "content": question}], tools, thinking, False, 0,
                                 max_new_tokens=96)
        message = _parsed(tokenizer, prompt, text, tools)
        assert "tool_calls" not in message and message.get("content"), text


def test_greedy_answer_after_tool_result(model, tokenizer):
    from transformers.utils.chat_parsing import parse_response

    messages = [
        {"role": "user", "content": "What time is it in Berlin?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_time", "arguments": {"city": "Berlin"}}}]},
        {"role": "tool", "content": '{"city": "Berlin", "time": "14:05"}'},
    ]
    prompt, text = _generate(model, tokenizer, messages, [TIME], False, False, 0)
    message = parse_response(text, tokenizer.response_template, prefix=prompt, tools=[TIME])
    assert "tool_calls" not in message and "reasoning_content" not in message, text
    assert message["content"], text
    if COPIES_ARGUMENTS:
        assert "14:05" in message["content"] and "Berlin" in message["content"], text
