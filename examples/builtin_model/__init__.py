"""The built-in default chat model: a tiny Llama trained by ``train.py`` in this folder.

``MODEL_DIR`` is the absolute path of the model folder (loadable offline with
``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained``);
``available()`` says whether the trained files are present. ``DEMO_TOOLS``, ``DEMO_PROMPTS``
and ``DEMO_TOOL_RESULT`` are a conversation the model handles well (the playground's defaults):
a tool request, a plain question, and a result to send back after the call.
"""

from __future__ import annotations

from pathlib import Path

from . import data as _data

MODEL_DIR: str = str(Path(__file__).resolve().parent / "model")

# The tools the demo offers, exactly as the model was trained on them (data.TOOLS).
DEMO_TOOLS: list[dict] = [_data.TOOLS["get_weather"], _data.TOOLS["get_time"]]
# A tool request, a plain question no tool fits, and a two-call request. The shipped model
# (greedy) calls get_weather for Paris and get_time for Tokyo and Lima, and answers the plain
# question in the form training used ("Capital of France?" gets no call but a made-up answer).
DEMO_PROMPTS: list[str] = ["What's the weather in Paris?", "What is the capital of France?",
                           "What time is it in Tokyo and in Lima?"]
# What get_weather could return for the first prompt; the shipped model's answer (greedy, thinking
# on or off) states all its values ("Paris: sunny, 12°C."), as it does for the other condition
# words and temperatures tried (sunny, windy, cloudy, rainy; 12 and 21).
DEMO_TOOL_RESULT: str = '{"city": "Paris", "temperature": 12, "unit": "celsius", "condition": "sunny"}'

_REQUIRED = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
             "tokenizer_config.json")


def available() -> bool:
    """True when every file of the shipped model folder exists and is non-empty."""
    folder = Path(MODEL_DIR)
    return all((folder / name).is_file() and (folder / name).stat().st_size > 0 for name in _REQUIRED)


def load(threads: int | None = None):
    """Load ``(model, tokenizer)`` from ``MODEL_DIR`` on CPU, offline, in eval mode.

    ``threads`` optionally sets ``torch.set_num_threads``. Raises FileNotFoundError when the
    model folder is incomplete.
    """
    if not available():
        raise FileNotFoundError(f"built-in model not found in {MODEL_DIR}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, local_files_only=True)
    model.eval()
    return model, tokenizer
