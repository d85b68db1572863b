"""Build a tiny random-weight ChatML chat model on disk (fallback default and test fixture).

The model knows nothing; it exists so the whole load -> chat template ->
generate -> stream -> parse path runs offline on CPU in seconds.  Its tokenizer
has ChatML specials plus ``<think>``/``</think>``/``<tool_call>``/``</tool_call>``,
a chat template accepting ``tools`` and ``enable_thinking``, and (optionally)
a ``response_template``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from examples import default_template

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{% elif m.role == 'assistant' %}<|im_start|>assistant\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}\n</tool_call>{% endfor %}"
    "<|im_end|>\n"
    "{% elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)

RESPONSE_TEMPLATE = default_template()  # the project's default, from the template library

_CORPUS = [
    "Hello! How can I help you today? The weather in Paris is sunny.",
    "Let me think about this step by step. First, we add the numbers.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    "The answer is 42. Thanks for asking, have a nice day.",
]


def build_tiny_model(directory: str | os.PathLike, with_response_template: bool = True, seed: int = 0,
                     stop_on_eos: bool = True) -> Path:
    """Write a tiny random LlamaForCausalLM + BPE tokenizer to ``directory`` (created) and return its path.

    ``stop_on_eos=False`` leaves the eos id out of the generation config, so ``generate`` only stops at
    ``max_new_tokens`` or a stopping criterion (for testing Stop).

    Takes about a second on CPU; about 1 MB on disk.  Needs no network.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.add_special_tokens({"additional_special_tokens": SPECIALS[3:]})
    fast.chat_template = CHAT_TEMPLATE
    if with_response_template:
        fast.response_template = RESPONSE_TEMPLATE
    fast.save_pretrained(directory)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=40960,
                      eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                      pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
                      bos_token_id=None, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = cfg.eos_token_id if stop_on_eos else None
    model.generation_config.pad_token_id = cfg.pad_token_id
    model.save_pretrained(directory)
    (directory / "README.md").write_text("Tiny random model built by playground.tinymodel (knows nothing).\n")
    return directory


def default_tiny_model_dir() -> Path:
    """Where the app keeps its fallback tiny model (built on first use)."""
    base = Path(os.environ.get("PLAYGROUND_CACHE", Path.home() / ".cache" / "response-template-playground"))
    path = base / "tiny-chatml"
    if not (path / "config.json").exists():
        build_tiny_model(path)
    return path


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(build_tiny_model(sys.argv[1] if len(sys.argv) > 1 else "tiny-model"))
    print(json.dumps(RESPONSE_TEMPLATE)[:80])
