"""The drafter (parsing.doctor.draft): small chat templates written here, each with the template it must give.

The expected drafts below are written by hand from what each chat template renders; the library-wide
checks (every family's chat template drafts to a template both parsers load, evidence that points at its
marker, agreement with the library templates) are in test_draft_library.py.
"""

import json
import time

import pytest

import parsing
from parsing.doctor.chat_render import RenderTimeout, render_chat
from parsing.doctor.draft import DraftError, draft_template
from parsing.doctor.textdiff import pair_of, safe_cut, tokens
from transformers.utils import chat_parsing as reference

# ChatML with Hermes-style calls and a <think> block, as small as a real template gets.
CHATML = (
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}{{ '<|im_start|>assistant\\n' }}"
    "{%- if m.reasoning_content %}{{ '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}{% endif %}"
    "{{- m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}"
    "{{ '\\n<tool_call>\\n' + {'name': c.function.name, 'arguments': c.function.arguments} | tojson + '\\n</tool_call>' }}"
    "{%- endfor %}{{ '<|im_end|>\\n' }}"
    "{%- else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endif %}"
    "{%- endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _load_both(template):
    parsing.load_template(template)
    reference.ResponseParser(template, prefix="")


def test_chatml_with_json_calls_and_reasoning():
    d = draft_template(CHATML)
    assert d.template == {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            # every way of closing swallows the blanks after it; a lookahead on <|im_end|> ends a cut region
            "reasoning_content": {"open_pattern": r"^\s*<think>", "close_pattern": r"(?:</think>\s*|(?=<\|im_end\|>))\s*"},
            "tool_calls": {
                "open_pattern": r"<tool_call>(?=\s*\{)",
                # </tool_call> inside a JSON string does not close the call
                "close_pattern": r'(?:(?<=\{(?:[^"\\]|"(?:[^"\\]|\\.)*")*)</tool_call>\s*|(?=<\|im_end\|>))\s*',
                "repeats": True, "content": "json",
                "transform": {"type": "function", "function": "{content}"}},
            "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
        },
    }
    _load_both(d.template)
    assert d.format["parallel_calls"] is True
    assert all(c.passed for c in d.checks), [c for c in d.checks if not c.passed]
    labels = {c.label for c in d.checks}
    assert {"content", "reasoning+content", "one call", "two calls", "content+call"} <= labels
    # a model output in this format parses to the message it means
    out = ('<think>\nCheck the tool.\n</think>\n\nLet me look.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}'
           "\n</tool_call><|im_end|>")
    msg = parsing.parse_response(out, d.template, prefix="<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n")
    assert msg == {"role": "assistant", "reasoning_content": "Check the tool.", "content": "Let me look.",
                   "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]}


def test_evidence_points_at_each_marker():
    d = draft_template(CHATML)
    by_marker = {e.marker: e for e in d.evidence}
    for marker, value in (("start anchor", "<|im_start|>assistant\n"), ("end of turn", "<|im_end|>"),
                          ("reasoning open", "<think>"), ("reasoning close", "</think>")):
        e = by_marker[marker]
        assert e.value == value
        text = d.renderings[e.right].text
        assert text[e.span[0]:e.span[1]] == value, (marker, e)
    # the reasoning was found by comparing an answer with and without reasoning_content
    assert by_marker["reasoning open"].left == "content"
    assert "reasoning_content" in json.dumps(d.renderings[by_marker["reasoning open"].right].messages)
    blob = json.dumps(d.to_dict())  # plain JSON all through
    assert "tool-call open" in blob


# GLM-style: the name right after the open tag, then key/value tag pairs; no end-of-turn marker of its own.
TAGGED = (
    "{%- for m in messages %}"
    "{%- if m.role == 'user' %}<|user|>\n{{ m.content }}"
    "{%- elif m.role == 'tool' %}<|observation|>\n<tool_response>{{ m.content }}</tool_response>"
    "{%- elif m.role == 'assistant' %}<|assistant|>\n{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}\n"
    "{%- for k, v in c.function.arguments.items() %}<arg_key>{{ k }}</arg_key>\n<arg_value>{{ v }}</arg_value>\n"
    "{%- endfor %}</tool_call>{% endfor %}"
    "{%- endif %}{%- endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_tagged_arguments_are_drafted_as_xml_inline_and_typed_by_the_schema():
    d = draft_template(TAGGED)
    tc = d.template["fields"]["tool_calls"]
    assert tc["content"] == "xml-inline"
    assert d.format["end_of_turn"] == ["<|user|>", "<|observation|>"]
    assert all(c.passed for c in d.checks), [c for c in d.checks if not c.passed]
    tools = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": {
        "zip": {"type": "string"}, "days": {"type": "integer"}}}}}]
    out = "<tool_call>w\n<arg_key>zip</arg_key>\n<arg_value>03106</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><|observation|>"
    msg = parsing.parse_response(out, d.template, prefix="<|user|>\nq<|assistant|>", tools=tools)
    assert msg["tool_calls"] == [{"type": "function", "function": {"name": "w", "arguments": {"zip": "03106", "days": 3}}}]
    assert "content" not in msg  # <|observation|> is consumed as the end of the turn
    # a value holding the value's own close tag is not cut
    out = "<tool_call>w\n<arg_key>zip</arg_key>\n<arg_value>a</arg_value> b</arg_value>\n</tool_call><|observation|>"
    msg = parsing.parse_response(out, d.template, prefix="<|user|>\nq<|assistant|>")
    assert msg["tool_calls"][0]["function"]["arguments"] == {"zip": "a</arg_value> b"}


# Bracket markers; each call echoes the message's id between its name and its arguments.
ECHOED_ID = (
    "{{ bos_token }}{%- for m in messages %}"
    "{%- if m.role == 'user' %}{{ '[INST]' + m.content + '[/INST]' }}"
    "{%- elif m.role == 'assistant' %}{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}{{ '[TOOL_CALLS]' + c.function.name + '[CALL_ID]' + c.id + '[ARGS]'"
    " + c.function.arguments | tojson }}{%- endfor %}{{ eos_token }}"
    "{%- elif m.role == 'tool' %}{{ '[TOOL_RESULTS]' + m.tool_call_id + '[TOOL_CONTENT]' + m.content + '[/TOOL_RESULTS]' }}"
    "{%- endif %}{%- endfor %}"
)


def test_an_echoed_call_id_is_any_id_and_optional():
    d = draft_template(ECHOED_ID, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
    tc = d.template["fields"]["tool_calls"]
    _load_both(d.template)
    assert "kq3x9zt2w" not in tc["open_pattern"]  # the sample call's id is not part of the format
    assert d.format["parallel_calls"] is True
    prefix = "<s>[INST]q[/INST]"
    want = [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
            {"type": "function", "function": {"name": "g", "arguments": {}}}]
    for out in ('[TOOL_CALLS]f[CALL_ID]Ab12Cd34e[ARGS]{"x": 1}[TOOL_CALLS]g[CALL_ID]zz9[ARGS]{}</s>',
                '[TOOL_CALLS]f[ARGS]{"x": 1}[TOOL_CALLS]g[ARGS]{}</s>'):
        msg = parsing.parse_response(out, d.template, prefix=prefix)
        assert msg == {"role": "assistant", "tool_calls": want}, out
    # after a tool result the model answers too
    msg = parsing.parse_response("Done.</s>", d.template, prefix=prefix + '[TOOL_CALLS]f[ARGS]{"x": 1}</s>'
                                 "[TOOL_RESULTS]id1[TOOL_CONTENT]2[/TOOL_RESULTS]")
    assert msg == {"role": "assistant", "content": "Done."}


def test_thinking_switch_and_prefilled_empty_block():
    tpl = CHATML.replace("{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
                         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                         "{% if enable_thinking is defined and not enable_thinking %}"
                         "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}")
    d = draft_template(tpl)
    assert d.format["thinking_switch"]["variable"] == "enable_thinking"
    assert d.format["thinking_switch"]["off"] == "<think>\n\n</think>\n\n"
    prompt = render_chat(tpl, [{"role": "user", "content": "q"}], add_generation_prompt=True, enable_thinking=False)
    msg = parsing.parse_response("Just the answer.<|im_end|>", d.template, prefix=prompt)
    assert msg == {"role": "assistant", "content": "Just the answer."}


def test_reasoning_forced_open_by_the_generation_prompt():
    tpl = CHATML.replace("{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
                         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}")
    d = draft_template(tpl)
    assert d.template["start_anchor"] == "<|im_start|>assistant\n"
    assert d.format["reasoning"]["mode"] == "forced"
    prompt = render_chat(tpl, [{"role": "user", "content": "q"}], add_generation_prompt=True)
    # cut short before the close: the reasoning does not swallow the end-of-turn token
    assert parsing.parse_response("Still thinking<|im_end|>", d.template, prefix=prompt) == {
        "role": "assistant", "reasoning_content": "Still thinking"}
    # a <think> mentioned in the answer does not open a second reasoning block
    msg = parsing.parse_response("Plan.\n</think>\n\nWrap notes in <think> tags.<|im_end|>", d.template, prefix=prompt)
    assert msg == {"role": "assistant", "reasoning_content": "Plan.", "content": "Wrap notes in <think> tags."}


def test_template_without_tool_calls_says_so():
    tpl = ("{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
           "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    d = draft_template(tpl)
    assert set(d.template["fields"]) == {"content"}
    assert d.template["start_anchor"] == "<|assistant|>"
    assert any("No tool calls" in n for n in d.notes)
    assert any("No reasoning markers" in n for n in d.notes)


@pytest.mark.parametrize("source,reason", [
    ("{{ raise_exception('no chats here') }}", "cannot render a plain user message: TemplateError: no chats here"),
    ("{% if add_generation_prompt %}A:{% endif %}", "does not render the user's message"),
    ("{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}",
     "does not render the assistant's content"),
    ("   ", "The chat template is empty"),
    ("{% for m in messages %}", "TemplateSyntaxError"),
])
def test_templates_that_cannot_be_analysed_give_a_reason(source, reason):
    with pytest.raises(DraftError) as err:
        draft_template(source)
    assert reason in str(err.value)


def test_a_looping_template_stops_at_the_time_budget():
    looping = ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
               "{% for m in messages %}{{ m.content }}{% endfor %}")
    t0 = time.monotonic()
    with pytest.raises(DraftError) as err:
        draft_template(looping, time_budget=1.0)
    assert "time budget" in str(err.value)
    assert time.monotonic() - t0 < 20  # stopped, not run to completion (hours)


def test_render_chat_deadline():
    with pytest.raises(RenderTimeout):
        render_chat("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                    [{"role": "user", "content": "x"}], deadline=time.monotonic() + 0.3)


def test_special_tokens_are_passed_as_template_variables():
    tpl = ("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% if m.role == 'assistant' %}"
           "{{ eos_token }}{% endif %}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}")
    d = draft_template(tpl, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
    assert d.template["start_anchor"] == "[assistant]"
    assert d.template["fields"]["content"]["close"] == "</s>"
    assert d.renderings["prompt"].text.startswith("<s>")


# -- text helpers


def test_pair_of_spelling_rules():
    assert pair_of("<think>") == ("</think>",)
    assert pair_of("</seed:think>") == ("<seed:think>",)
    assert pair_of("<|START_THINKING|>")[0] == "<|END_THINKING|>"
    assert pair_of("[/THINK]") == ("[THINK]",)
    assert pair_of("<|channel>") == ("<channel|>",)
    assert pair_of("plain") == ()


def test_cuts_never_split_a_marker():
    text = "head<|assistant|><think>"
    assert safe_cut(text, len("head<|assistant|><")) == len("head<|assistant|>")
    assert safe_cut(text, len("head<|assi")) == len("head")
    assert tokens('<invoke name="x">\n<p>v</p>') == ['<invoke name="x">', "\n", "<p>", "v", "</p>"]


def test_candidates_are_parsed_back_without_a_per_pattern_timeout(monkeypatch):
    # A per-search regex timeout (1 s by default) would silently pass over a candidate whose parse happened to
    # run long on a slow or loaded machine, so the reading chosen would depend on the machine: the drafter parses
    # back with none, bounded by its own deadline only.
    import parsing.doctor.draft as draft_module

    real, seen = draft_module.parse_response, []

    def recorded(output, template, **options):
        seen.append(options)
        return real(output, template, **options)

    monkeypatch.setattr(draft_module, "parse_response", recorded)
    d = draft_template(CHATML, time_budget=60)
    assert len(seen) > len(d.checks)  # the tool-call candidates' parses, then the checks
    assert all(o["regex_timeout"] is None and 0 < o["time_budget"] <= 60 for o in seen), seen
    assert d.format["tool_calls"] and all(c.passed for c in d.checks)


def test_a_parse_back_that_runs_out_of_time_stops_the_draft(monkeypatch):
    # Running out of time while parsing a candidate back is an error, not a reason to choose another reading.
    import parsing.doctor.draft as draft_module
    from parsing.errors import BudgetExceededError

    def out_of_time(output, template, **options):
        raise BudgetExceededError(options["time_budget"], field="tool_calls", role="close", pattern="x")

    monkeypatch.setattr(draft_module, "parse_response", out_of_time)
    with pytest.raises(DraftError) as err:
        draft_template(CHATML)
    assert "time budget while parsing the sample turns back" in str(err.value)


def test_a_backtracking_candidate_is_stopped_by_the_deadline():
    # A real runaway pattern (a repeat of two ways to match the same text, on a text it cannot match) ends at
    # the draft's deadline.
    from parsing.doctor.draft import _Analysis

    analysis = _Analysis(CHATML, None, None, time.monotonic() + 0.5)
    compiled = parsing.load_template({"start_anchor": "<start>", "fields": {
        "content": {"open_pattern": r"^(?:a|a)+!", "close": "<end>"}}})
    t0 = time.monotonic()
    with pytest.raises(DraftError) as err:
        analysis.parse_back("a" * 64 + "<end>", compiled, "")
    assert "time budget" in str(err.value)
    assert time.monotonic() - t0 < 60  # stopped, not run to completion (2**64 steps)
