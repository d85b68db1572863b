"""Chat template and response template of the built-in model.

The chat template is ChatML with Hermes/Qwen-style tools: the tools list goes into the
system turn inside ``<tools>``, assistant tool calls are ``<tool_call>\\n{json}\\n</tool_call>``
blocks, tool results are ``<tool_response>`` blocks inside a user turn, and the thinking switch
(``enable_thinking``, default on) makes the generation prompt end in ``<think>\\n`` (on) or in
an empty ``<think>\\n\\n</think>\\n\\n`` block (off).

Consistency with the response template: an assistant turn is rendered as
``[<think>\\n...\\n</think>\\n\\n][content]<tool_call>...</tool_call><tool_call>...</tool_call><|im_end|>``
with nothing between consecutive tool calls and nothing between the last call and
``<|im_end|>``. Whitespace there would reopen the implicit ``content`` field, and that later
empty region would overwrite real content written before the calls.
"""

from examples import default_template

CHAT_TEMPLATE = (
    "{%- set ns = namespace(last_user=-1, sys=none) %}"
    "{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}"
    "{%- if messages and messages[0].role == 'system' %}{%- set ns.sys = messages[0].content %}{%- endif %}"
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' + (ns.sys if ns.sys else 'You are a helpful assistant.') + "
    "'\\n\\n# Tools\\n\\nYou may call these functions:\\n<tools>\\n' }}"
    "{%- for t in tools %}{{- (t.function if t.function is defined else t) | tojson }}{{- '\\n' }}{%- endfor %}"
    "{{- '</tools>\\nCall them as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\\n' }}"
    "{%- elif ns.sys %}"
    "{{- '<|im_start|>system\\n' + ns.sys + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'user' %}"
    "{{- '<|im_start|>user\\n' + m.content + '<|im_end|>\\n' }}"
    "{%- elif m.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if m.reasoning_content and loop.index0 > ns.last_user %}"
    "{{- '<think>\\n' + m.reasoning_content.strip() + '\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- if m.content %}{{- m.content.strip() }}{%- endif %}"
    "{%- for tc in (m.tool_calls or []) %}"
    "{%- set f = tc.function if tc.function is defined else tc %}"
    "{{- '<tool_call>\\n{\"name\": ' + (f.name | tojson) + ', \"arguments\": ' + "
    "(f.arguments if f.arguments is string else (f.arguments | tojson)) + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif m.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + (m.content if m.content is string else (m.content | tojson)) + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}"
    "{{- '<think>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)

RESPONSE_TEMPLATE = default_template()  # the project's default, from the template library (examples.DEFAULT_FAMILY)

EOS = "<|im_end|>"
PAD = "<|endoftext|>"
# Control tokens are special: a server decoding with ``skip_special_tokens=True`` drops them.
CONTROL_TOKENS = [PAD, "<|im_start|>", EOS]
# Reasoning and tool markers are added tokens (one id each) that are NOT special, as in Qwen3,
# so that servers decoding with ``skip_special_tokens=True`` keep them for the response template.
MARKER_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
# Every added token, in id order (ids 0-8).
SPECIAL_TOKENS = CONTROL_TOKENS + MARKER_TOKENS
