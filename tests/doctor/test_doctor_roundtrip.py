"""Round trip against a chat template, with a tokenizer built locally (no hub)."""

import copy

import pytest

from parsing.doctor.lint import lint
from parsing.doctor.roundtrip import Sample, roundtrip, sample_cases, split_generation

from doctor_templates import CLEAN

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]

# Qwen3-shaped: the last assistant turn always has a think block; the generation prompt opens it.
QWEN_LIKE = (
    "{% for m in messages %}"
    "{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{% elif m.role == 'assistant' %}<|im_start|>assistant\n<think>\n{{ m.reasoning_content or '' }}\n</think>\n\n"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}{% if not loop.first or m.content %}\n{% endif %}<tool_call>\n"
    "{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}\n</tool_call>{% endfor %}"
    "<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
# Renders no reasoning and no think block: the generation prompt is bare.
NO_REASONING = QWEN_LIKE.replace("<think>\n{{ m.reasoning_content or '' }}\n</think>\n\n", "").replace(
    "<|im_start|>assistant\n<think>\n{% endif %}", "<|im_start|>assistant\n{% endif %}")
# Opens <think> in the generation prompt but not in rendered turns (a mismatch to report).
MISMATCH = NO_REASONING.replace("<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}")


def _build(directory, chat_template):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["The weather in Paris is sunny.", '{"name": "get_time"}'] * 10, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": SPECIALS[3:]})
    fast.chat_template = chat_template
    fast.save_pretrained(directory)
    return str(directory)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    from transformers import AutoTokenizer

    base = tmp_path_factory.mktemp("tok")
    paths = {name: _build(base / name, tpl) for name, tpl in
             [("qwen", QWEN_LIKE), ("no_reasoning", NO_REASONING), ("mismatch", MISMATCH)]}
    return {"paths": paths, **{name: AutoTokenizer.from_pretrained(p) for name, p in paths.items()}}


def test_all_samples_pass_for_a_matching_template(tokenizers):
    report = roundtrip(CLEAN, tokenizers["qwen"])
    assert [c.name for c in report.cases] == ["content", "reasoning+content", "tool call", "parallel tool calls",
                                              "truncated"]
    assert report.passed, report.format()
    parallel = report.cases[3]
    assert parallel.parsed["tool_calls"][1]["function"] == {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}
    # The generation starts after the generation prompt and stops at the eos token.
    assert parallel.prefix.endswith("<|im_start|>assistant\n<think>\n")
    assert parallel.generation.endswith("</tool_call><|im_end|>")
    truncated = report.cases[4]
    assert "</think>" not in truncated.generation
    full = sample_cases()[4].message["reasoning_content"]
    written = truncated.expected["reasoning_content"]
    assert set(truncated.expected) == {"role", "reasoning_content"}
    assert full.startswith(written) and 0 < len(written) < len(full) - 10
    assert truncated.parsed == truncated.expected


def test_loading_the_tokenizer_by_path(tokenizers):
    report = roundtrip(CLEAN, tokenizers["paths"]["qwen"], samples=sample_cases()[:1])
    assert report.passed and len(report.cases) == 1


def test_wrong_field_name_and_missing_repeats_fail_with_diffs(tokenizers):
    spec = copy.deepcopy(CLEAN)
    spec["fields"]["thinking"] = spec["fields"].pop("reasoning_content")
    spec["fields"]["tool_calls"].pop("repeats")
    report = roundtrip(spec, tokenizers["qwen"])
    by_name = {c.name: c for c in report.cases}
    assert not report.passed and by_name["content"].passed
    diff = {(d.path, d.kind) for d in by_name["reasoning+content"].diff}
    assert diff == {("reasoning_content", "missing"), ("thinking", "extra")}
    assert [(d.path, d.kind) for d in by_name["tool call"].diff] == [("tool_calls", "changed")]
    text = report.format()
    assert "FAIL  reasoning+content" in text and "reasoning_content: missing" in text


def test_parse_errors_are_failures_not_exceptions(tokenizers):
    spec = copy.deepcopy(CLEAN)
    spec["fields"]["tool_calls"]["content"] = "int"
    report = roundtrip(spec, tokenizers["qwen"])
    call = report.cases[2]
    assert not call.passed and call.parsed is None and call.error.startswith("ValueError")


def test_chat_template_that_drops_reasoning_is_noted(tokenizers):
    report = roundtrip(CLEAN, tokenizers["no_reasoning"])
    reasoning = report.cases[1]
    assert not reasoning.passed
    assert any("did not render reasoning_content" in n for n in reasoning.notes)
    assert report.cases[0].passed and report.cases[2].passed


def test_generation_prompt_mismatch_is_noted_and_split_at_a_token_boundary(tokenizers):
    report = roundtrip(CLEAN, tokenizers["mismatch"], samples=[sample_cases()[0], sample_cases()[2]])
    content, call = report.cases
    assert any("does not start with the generation prompt" in n for n in content.notes)
    # `<think>` (prompt) and `<tool_call>` (turn) share "<t": the split must not cut a token in two.
    assert call.generation.startswith("<tool_call>") and call.prefix.endswith("<|im_start|>assistant\n")
    assert call.passed, report.format()


def test_chat_template_errors_fail_the_sample():
    class Broken:
        eos_token = None

        def apply_chat_template(self, *a, **k):
            raise TypeError("boom")

    report = roundtrip(CLEAN, Broken(), samples=[Sample("x", {"role": "assistant", "content": "hi"})])
    assert not report.passed and report.cases[0].error == "chat template: TypeError: boom"


def test_split_generation_stops_at_the_first_stop_string(tokenizers):
    conv = [{"role": "user", "content": "hi"}]
    prefix, gen, notes = split_generation(tokenizers["qwen"], conv, {"role": "assistant", "content": "A"},
                                          stop=["</think>"])
    assert gen == "\n</think>" and notes == [] and prefix.endswith("<think>\n")


def test_lint_anchor_check_with_real_tokenizers(tokenizers):
    assert [w for w in lint(CLEAN, tokenizer=tokenizers["qwen"]).warnings
            if w.code == "anchor-not-in-generation-prompt"] == []
    spec = copy.deepcopy(CLEAN)
    spec["start_anchor"] = "<start_of_turn>model\n"
    [w] = [w for w in lint(spec, tokenizer=tokenizers["qwen"]).warnings
           if w.code == "anchor-not-in-generation-prompt"]
    assert "<|im_start|>assistant" in w.fix
