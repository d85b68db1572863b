"""Templates shared by the doctor tests (plain dicts; each test copies before changing one)."""

import copy

# A ChatML template with literal delimiters that lint has nothing to say about (the tests below change one
# delimiter at a time, so they need tags, not the project default's patterns). The one pattern: the call closes
# only where the quotes since <tool_call> are balanced, so a "</tool_call>" inside an argument string does not
# cut the call (lint's close-in-json).
BALANCED_CALL_CLOSE = r'(?<=<tool_call>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*)</tool_call>'
CLEAN = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"},
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": BALANCED_CALL_CLOSE,
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}

# The template from the transformers guide: content does not repeat (the classic overwrite).
GUIDE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>", "content": "text"},
    },
}

CHATML_PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def clean(**field_changes):
    """A deep copy of CLEAN with `fields[name]` replaced (None deletes the field)."""
    spec = copy.deepcopy(CLEAN)
    for name, value in field_changes.items():
        if value is None:
            spec["fields"].pop(name, None)
        else:
            spec["fields"][name] = value
    return spec
