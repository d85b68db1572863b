"""Lint: each warning with a template that triggers it and one that does not; the compatibility section."""

import copy
import json

import pytest

import parsing
from parsing.doctor.compat import compatibility
from parsing.doctor.lint import lint

from doctor_templates import CHATML_PROMPT, CLEAN, GUIDE, clean

TOOL = {
    "open": "<tool_call>",
    "close": "</tool_call>",
    "repeats": True,
    "content": "json",
    "transform": {"type": "function", "function": "{content}"},
}


def codes(spec, **kw):
    return lint(spec, **kw).codes


def only(spec, code, **kw):
    return [w for w in lint(spec, **kw).warnings if w.code == code]


def test_clean_template_has_no_warnings():
    report = lint(CLEAN, generation_prompt_text=(CHATML_PROMPT, CHATML_PROMPT.index("<|im_start|>assistant")))
    assert report.warnings == []
    assert "No lint warnings." in report.format()


def test_accepts_json_text_and_rejects_invalid_templates():
    assert lint(json.dumps(CLEAN)).warnings == []
    bad = copy.deepcopy(CLEAN)
    bad["fields"]["content"]["bogus"] = 1
    with pytest.raises(parsing.TemplateError) as info:
        lint(bad)
    assert info.value.path.startswith("fields.content")


# ---- reasoning-field-name


def test_reasoning_field_name_triggers_on_other_reasoning_names_and_offers_both_read_keys():
    spec = clean(reasoning_content=None, thoughts={"open": "<think>", "close": "</think>", "repeats": True,
                                                   "join": ""})
    [w] = only(spec, "reasoning-field-name")
    assert w.path == "fields.thoughts"
    assert "'reasoning_content'" in w.fix and "'thinking'" in w.fix


def test_reasoning_field_name_quiet_for_thinking_the_key_vllm_and_gpt_oss_read():
    """vLLM's response_template parser reads reasoning only from 'thinking' (and gpt-oss's chat template reads
    message.thinking): lint must not tell a template that vLLM accepts to rename it (no rule no template meets)."""
    spec = clean(reasoning_content=None, thinking={"open": "<think>", "close": "</think>", "repeats": True})
    assert only(spec, "reasoning-field-name") == []


def test_reasoning_field_name_triggers_on_reasoning_open_delimiter():
    spec = clean(reasoning_content=None, scratch={"open": "[THINK]", "close": "[/THINK]", "repeats": True,
                                                  "join": ""})
    [w] = only(spec, "reasoning-field-name")
    assert w.path == "fields.scratch" and "[THINK]" in w.message


def test_reasoning_field_name_quiet_for_reasoning_content_and_closing_tags():
    assert only(CLEAN, "reasoning-field-name") == []
    # A content field that opens at `</think>` is not reasoning.
    spec = clean(content={"open": "</think>", "close": "<|im_end|>", "repeats": True, "join": ""})
    assert only(spec, "reasoning-field-name") == []


def test_reasoning_field_name_quiet_for_a_call_open_that_names_the_analysis_channel():
    # gpt-oss calls from the analysis channel too: the open addresses a function, so it opens a tool call
    spec = clean(tool_calls={"open_pattern": r"<\|channel\|>(?:commentary|analysis) to=functions\.(?P<name>\w+)<\|message\|>",
                             "close": "<|call|>", "content": "json", "repeats": True,
                             "transform": {"name": "{name}", "arguments": "{content}"}})
    assert only(spec, "reasoning-field-name") == []
    spec = clean(reasoning_content=None, notes={"open": "<|channel|>analysis<|message|>", "close": "<|end|>"})
    assert [w.path for w in only(spec, "reasoning-field-name")] == ["fields.notes"]


# ---- field-overwrite


def test_overwrite_triggers_on_non_repeating_implicit_field():
    implicit = [w for w in only(GUIDE, "field-overwrite") if w.path == "fields.content"]
    assert len(implicit) == 1 and implicit[0].severity == "warning"
    assert '"repeats": true' in implicit[0].fix and '"join": ""' in implicit[0].fix
    # ...and the warning is real: a newline after the tool call wipes the content.
    out = "Answer.<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n"
    assert "content" not in parsing.parse_response(out, GUIDE, prefix="")
    assert parsing.parse_response(out, CLEAN, prefix="")["content"] == "Answer."


def test_overwrite_triggers_on_implicit_field_with_only_its_own_close():
    spec = {"start_anchor": "A:", "fields": {"content": {"close": "<|im_end|>"}}}
    [w] = only(spec, "field-overwrite")
    assert "own close" in w.message


def test_overwrite_quiet_when_implicit_repeats_or_cannot_be_reentered():
    assert [w for w in only(CLEAN, "field-overwrite") if w.path == "fields.content"] == []
    # An implicit field that can never be re-entered: the only explicit field runs to the end.
    spec = {"start_anchor": "A:", "fields": {"content": {}, "tool_calls": {"open_pattern": "(?=x)"}}}
    assert only(spec, "field-overwrite") == []


def test_overwrite_info_for_non_repeating_explicit_field():
    spec = clean(reasoning_content={"open": "<think>", "close": "</think>"})
    [w] = only(spec, "field-overwrite")
    assert w.path == "fields.reasoning_content" and w.severity == "info"
    assert only(CLEAN, "field-overwrite") == []


# ---- delimiter-prefix


def test_delimiter_prefix_triggers_on_literal_prefix_between_fields():
    spec = clean(a={"open": "[TOOL]", "close": "[/TOOL]"}, b={"open": "[TOOL][ARGS]", "close": "[/ARGS]"})
    warnings = only(spec, "delimiter-prefix")
    assert [w.path for w in warnings] == ["fields.a.open"]
    assert "[TOOL][ARGS]" in warnings[0].message


def test_delimiter_prefix_triggers_when_a_close_is_a_prefix_of_another_open():
    spec = clean(reasoning_content={"open": "<think>", "close": "</think>", "repeats": True, "join": ""},
                 content={"open": "</think>\n\n", "close": "<|im_end|>"})
    warnings = only(spec, "delimiter-prefix")
    assert warnings and warnings[0].path == "fields.reasoning_content.close"
    assert "cannot open right after it" in warnings[0].message


def test_delimiter_prefix_triggers_on_identical_delimiters_and_literal_vs_pattern():
    spec = clean(a={"open": "<x>", "close": "</x>"}, b={"open": ["<y>", "<x>"], "close": "</y>"})
    [w] = only(spec, "delimiter-prefix")
    assert w.path == "fields.b.open[1]" and "same text" in w.message
    spec = clean(qwen={"open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>", "close": "</tool_call>",
                       "transform": {"name": "{name}"}})
    [w] = only(spec, "delimiter-prefix")
    assert w.path == "fields.tool_calls.open"


def test_delimiter_prefix_quiet_for_distinct_delimiters():
    assert only(CLEAN, "delimiter-prefix") == []
    # Prefixes inside one field's own list are the parser's business (it holds them correctly).
    spec = clean(tool_calls={**TOOL, "open": ["<tool_call>", "<tool_call>\n"]})
    assert only(spec, "delimiter-prefix") == []


# ---- missing-close


def test_missing_close_triggers_on_explicit_field_without_close():
    spec = clean(reasoning_content={"open": "<think>", "repeats": True, "join": ""})
    [w] = only(spec, "missing-close")
    assert w.path == "fields.reasoning_content" and "tool_calls" in w.message


def test_missing_close_quiet_for_closed_and_implicit_fields():
    assert only(CLEAN, "missing-close") == []
    spec = clean(content={"repeats": True, "join": ""})  # implicit without close: fine
    assert only(spec, "missing-close") == []


# ---- close-in-json


def test_close_in_json_triggers_on_brace_close():
    spec = clean(tool_calls={**TOOL, "open": "<|python_tag|>", "close": "}}"})
    [w] = only(spec, "close-in-json")
    assert w.path == "fields.tool_calls.close" and "}}" in w.message


def test_close_in_json_triggers_on_pattern_matching_json_text():
    spec = clean(tool_calls={**TOOL, "close": None, "close_pattern": r"\]"})
    del spec["fields"]["tool_calls"]["close"]
    [w] = only(spec, "close-in-json")
    assert w.path == "fields.tool_calls.close_pattern"


def test_close_in_json_quiet_for_special_tokens_end_anchors_and_text_fields():
    assert only(CLEAN, "close-in-json") == []
    spec = clean(tool_calls={k: v for k, v in TOOL.items() if k != "close"} | {"close_pattern": r"\}\s*$"})
    assert only(spec, "close-in-json") == []
    # `}` closing a text field is not a JSON problem.
    spec = clean(a={"open": "{{", "close": "}"})
    assert only(spec, "close-in-json") == []


# ---- empty-match


def test_empty_match_triggers_on_patterns_matching_nothing():
    spec = clean()
    del spec["start_anchor"]
    spec["start_anchor_pattern"] = r"(?:<\|im_start\|>assistant\n)?"
    spec["fields"]["reasoning_content"] = {"open": "<think>", "close_pattern": r"\s*", "repeats": True,
                                           "join": ""}
    paths = sorted(w.path for w in only(spec, "empty-match"))
    assert paths == ["fields.reasoning_content.close_pattern", "start_anchor_pattern"]


def test_empty_match_quiet_for_lookaheads_and_real_patterns():
    spec = clean(reasoning_content={"open_pattern": r"<think>\n?", "close_pattern": r"(?=<tool_call>)|</think>",
                                    "repeats": True, "join": ""})
    assert only(spec, "empty-match") == []
    assert only(CLEAN, "empty-match") == []


# ---- missing-role


def test_missing_role_warns_and_names_the_fix():
    spec = copy.deepcopy(CLEAN)
    del spec["defaults"]
    [w] = only(spec, "missing-role")
    assert w.path == "defaults" and '"role": "assistant"' in w.fix and w.severity == "warning"
    assert parsing.parse_response("Hi", spec, prefix=CHATML_PROMPT).get("role") is None  # what it warns about
    assert only(CLEAN, "missing-role") == []
    spec["fields"]["role"] = {"open": "<r>", "close": "</r>"}  # a role read from the output counts
    assert only(spec, "missing-role") == []


# ---- anchor-not-in-generation-prompt


def test_anchor_warning_when_generation_prompt_lacks_the_anchor():
    # A Gemma-style prompt whose generation prompt is `<start_of_turn>model\n`.
    prompt = "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    [w] = only(CLEAN, "anchor-not-in-generation-prompt", generation_prompt_text=(prompt, prompt.index("<start_of_turn>model")))
    assert w.path == "start_anchor" and "does not occur" in w.message
    assert "<start_of_turn>model" in w.fix


def test_anchor_warning_when_anchor_only_matches_earlier_turns():
    prompt = CHATML_PROMPT + "Hello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"  # no generation prompt
    [w] = only(CLEAN, "anchor-not-in-generation-prompt", generation_prompt_text=(prompt, len(prompt)))
    assert "earlier turns" in w.message


def test_anchor_fix_leaves_a_prefilled_opening_tag_in_the_parsed_part():
    # Gemma-style prompt with a prefilled reasoning open: the suggested anchor stops before `<think>`.
    generation = "<start_of_turn>model\n"
    prompt = "<start_of_turn>user\nHi<end_of_turn>\n" + generation + "<think>\n"
    [w] = only(CLEAN, "anchor-not-in-generation-prompt", generation_prompt_text=(prompt, prompt.index(generation)))
    assert json.dumps(generation) + " (the prefilled " + json.dumps("<think>\n") in w.fix
    assert json.dumps(generation + "<think>\n") not in w.fix  # the example no longer contradicts the advice
    # the same with the library's regex open (^\s*<think>)
    spec = clean(reasoning_content={"open_pattern": "^\\s*<think>", "close": "</think>"})
    [w] = only(spec, "anchor-not-in-generation-prompt", generation_prompt_text=(prompt, prompt.index(generation)))
    assert json.dumps(generation) + " (the prefilled " in w.fix
    # nothing prefilled: the whole generation prompt is the example
    plain = prompt[: -len("<think>\n")]
    [w] = only(CLEAN, "anchor-not-in-generation-prompt", generation_prompt_text=(plain, plain.index(generation)))
    assert w.fix.endswith("e.g. " + json.dumps(generation) + ".")


def test_anchor_quiet_when_generation_prompt_has_it():
    start = CHATML_PROMPT.index("<|im_start|>assistant")
    assert only(CLEAN, "anchor-not-in-generation-prompt", generation_prompt_text=(CHATML_PROMPT, start)) == []
    # Also with a prefilled `<think>` after the anchor, and for a pattern anchor.
    prompt = CHATML_PROMPT + "<think>\n"
    spec = copy.deepcopy(CLEAN)
    del spec["start_anchor"]
    spec["start_anchor_pattern"] = r"<\|im_start\|>assistant\n"
    assert only(spec, "anchor-not-in-generation-prompt", generation_prompt_text=(prompt, start)) == []


class _BrokenTokenizer:
    def apply_chat_template(self, *a, **k):
        raise ValueError("no chat template")


class _ChatMLTokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False, **kw):
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def test_anchor_check_with_a_tokenizer_object():
    assert only(CLEAN, "anchor-not-in-generation-prompt", tokenizer=_ChatMLTokenizer()) == []
    spec = copy.deepcopy(CLEAN)
    spec["start_anchor"] = "<|assistant|>"
    assert len(only(spec, "anchor-not-in-generation-prompt", tokenizer=_ChatMLTokenizer())) == 1
    [w] = only(CLEAN, "anchor-not-in-generation-prompt", tokenizer=_BrokenTokenizer())
    assert w.severity == "info" and "no chat template" in w.message


# ---- compatibility


def _compat(spec):
    return {c.target: c for c in compatibility(spec)}


def test_compatibility_of_transformers_style_template():
    c = _compat(CLEAN)
    assert c["transformers"].accepted and c["transformers"].reasons == ()
    assert not c["vllm"].accepted
    assert any("reasoning_content" in r and "thinking" in r for r in c["vllm"].reasons)
    assert "vllm/parser/response_template.py" in c["vllm"].basis  # where the rule was read


def test_compatibility_vllm_accepts_plain_thinking_content_tool_calls():
    spec = {"start_anchor": "<|im_start|>assistant\n", "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": TOOL,
        "content": {"close": "<|im_end|>"},
    }}
    c = _compat(spec)
    assert c["vllm"].accepted and c["transformers"].accepted


def test_compatibility_vllm_rejects_non_text_content():
    spec = {"start_anchor": "A:", "fields": {"content": {"content": "json", "close": "<|im_end|>"}}}
    [reason] = _compat(spec)["vllm"].reasons
    assert "plain text" in reason and "json" in reason
    spec = {"start_anchor": "A:", "fields": {"content": {"repeats": True, "join": ""}}}
    [reason] = _compat(spec)["vllm"].reasons
    assert "join" in reason
    spec = {"start_anchor": "A:", "fields": {"content": {"transform": "{content}"}}}
    assert "transform" in _compat(spec)["vllm"].reasons[0]


def test_compatibility_vllm_rule_is_vllms_own():
    """vLLM's validate_response_template_for_serving (vllm/parser/response_template.py): repeats and content_args
    are allowed on thinking/content; join and transform are not; defaults may only set role."""
    spec = {"defaults": {"role": "assistant"}, "start_anchor": "A:", "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "repeats": True},
        "content": {"repeats": True, "content_args": {"strip": False}}}}
    assert _compat(spec)["vllm"].accepted
    spec["defaults"]["name"] = "bot"
    [reason] = _compat(spec)["vllm"].reasons
    assert "defaults may only set role" in reason and "name" in reason


def test_a_template_can_satisfy_lint_and_vllm_at_once():
    """No lint rule demands what vLLM refuses: a thinking/content/tool_calls template with content repeating
    (no join) draws no lint warning and vLLM accepts it."""
    spec = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "repeats": True},
        "tool_calls": clean()["fields"]["tool_calls"],
        "content": {"close_pattern": "(?=<tool_call>)|<\\|im_end\\|>", "repeats": True}}}
    report = lint(spec)
    assert [w for w in report.warnings if w.severity != "info"] == [], report.format()
    assert {c.target: c.accepted for c in report.compatibility} == {"transformers": True, "vllm": True}


def test_compatibility_of_invalid_template_never_raises():
    c = _compat({"fields": {}})
    assert not c["transformers"].accepted and not c["vllm"].accepted
    assert c["transformers"].reasons


def test_report_dict_and_text_have_paths_and_fixes():
    report = lint(GUIDE)
    d = report.to_dict()
    assert {w["code"] for w in d["warnings"]} >= {"field-overwrite"}
    assert all(w["path"] and w["fix"] for w in d["warnings"])
    assert [c["target"] for c in d["compatibility"]] == ["transformers", "vllm"]
    text = report.format()
    assert "fields.content" in text and "fix:" in text and "vllm: NOT accepted (per vLLM" in text


def test_imports_stay_light():
    """`import parsing` does not load the doctor; the doctor (lint, checks, suites, round trip module) does not
    load transformers until a round trip loads a tokenizer by path."""
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(parsing.__file__).resolve().parent.parent
    code = ("import sys, parsing; assert 'parsing.doctor' not in sys.modules, 'doctor imported by parsing'; "
            "import parsing.doctor; from parsing.doctor import run_checks; from parsing.doctor.lint import lint; "
            "lint({'start_anchor': 'A', 'fields': {'content': {}}}); "
            "run_checks({'start_anchor': 'A', 'fields': {'content': {}}}, '', 'hi'); "
            "assert 'transformers' not in sys.modules, 'transformers imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_delimiter_prefix_quiet_for_closes_of_different_fields():
    # Two explicit closes are never watched at the same time: `</tool_call>` twice is fine.
    spec = clean(other={"open": "<other>", "close": "</tool_call>"})
    assert only(spec, "delimiter-prefix") == []


def test_delimiter_prefix_triggers_when_a_close_equals_another_open():
    spec = clean(content={"open": "</think>", "close": "<|im_end|>", "repeats": True, "join": ""})
    [w] = only(spec, "delimiter-prefix")
    assert "same text" in w.message


def test_empty_match_quiet_for_stream_edge_anchors():
    # ERNIE-style: reasoning opens at the very start of the stream with `^`; `\Z` closes at its end.
    spec = clean(reasoning_content={"open_pattern": "^", "close": "</think>", "repeats": True, "join": ""},
                 x={"open": "<x>", "close_pattern": r"\Z"})
    assert only(spec, "empty-match") == []
    spec = clean(reasoning_content={"open_pattern": "(?m)^", "close": "</think>", "repeats": True, "join": ""})
    [w] = only(spec, "empty-match")
    assert w.path == "fields.reasoning_content.open_pattern"


def test_warnings_come_before_infos():
    report = lint(GUIDE)
    severities = [w.severity for w in report.warnings]
    assert severities == sorted(severities, key=lambda s: s != "warning") and "info" in severities


def test_implicit_overwrite_after_its_own_close_only_is_info():
    spec = {"start_anchor": "A:", "fields": {"content": {"close": "<|im_end|>"}}}
    [w] = only(spec, "field-overwrite")
    assert w.severity == "info"


def test_compatibility_asks_the_installed_transformers_when_told():
    c = {x.target: x for x in compatibility(CLEAN, reference=True)}
    assert c["transformers"].accepted and c["transformers"].basis.startswith("transformers 5.")
    bad = {"start_anchor": "A", "fields": {"c": {"open_pattern": "(?P<n>x)"}}}  # named group, no transform
    c = {x.target: x for x in compatibility(bad, reference=True)}
    assert not c["transformers"].accepted and "transform" in c["transformers"].reasons[0]
    assert "transformers 5." in c["transformers"].basis
    c = {x.target: x for x in compatibility(bad, reference=False)}
    assert not c["transformers"].accepted and "`parsing`" in c["transformers"].basis
    assert "per " in lint(CLEAN, reference=False).format()


def test_search_start_anchor_triggers_on_backslash_g():
    spec = clean(g={"open_pattern": r"\G<g>", "close": "</g>", "repeats": True})
    [w] = only(spec, "search-start-anchor")
    assert w.path == "fields.g.open_pattern" and "chunk" in w.message


def test_search_start_anchor_quiet_for_escaped_backslash_and_plain_patterns():
    spec = clean(g={"open_pattern": r"\\G<g>", "close_pattern": r"</g>\s*", "repeats": True})
    assert only(spec, "search-start-anchor") == []
    assert only(CLEAN, "search-start-anchor") == []


# ---- unknown-transform-variable

def test_unknown_transform_variable_triggers_and_is_a_real_parse_failure():
    spec = clean(tool_calls=dict(TOOL, transform={"type": "function", "function": {"name": "{missing}",
                                                                                   "arguments": "{content}"}}))
    [w] = only(spec, "unknown-transform-variable")
    assert w.path == "fields.tool_calls.transform.function.name" and "'missing'" in w.message
    # The warning is right: the engine (like transformers) fails when such a region closes.
    with pytest.raises(KeyError):
        parsing.parse_response('<tool_call>{"name": "f", "arguments": {}}</tool_call>', spec, prefix="")


def test_close_pattern_groups_are_flagged_as_not_variables():
    spec = clean(tool_calls={"open": "<tool_call>", "close_pattern": r"</tool_call id=(?P<id>\d+)>",
                             "content": "json", "transform": {"id": "{id}", "function": "{content}"}})
    [w] = only(spec, "unknown-transform-variable")
    assert "close_pattern" in w.message and w.path == "fields.tool_calls.transform.id"


def test_transform_variables_quiet_for_content_open_groups_and_transform_each():
    assert only(CLEAN, "unknown-transform-variable") == []
    spec = clean(tool_calls={"open_pattern": r"<call name=(?P<name>\w+)>", "close": "</call>", "content": "json",
                             "repeats": True, "transform": {"function": {"name": "{name}",
                                                                         "arguments": "{content.args}"}}})
    assert only(spec, "unknown-transform-variable") == []
    each = clean(tool_calls={"open": "<a>", "close": "</a>", "content": "json", "transform_each": True,
                             "transform": {"function": {"name": "{tool_name}"}}})
    assert only(each, "unknown-transform-variable") == []


# ---- close-in-json: the close's own text inside a JSON string value


def test_close_in_json_triggers_on_a_plain_close_that_fires_inside_a_string_value():
    """`</tool_call>` closes the call at its first mention, also inside an argument string: the call is cut and
    fails to parse. The suggested balanced-quote lookbehind (the library templates' form) fixes it."""
    spec = clean(tool_calls=TOOL)
    [w] = only(spec, "close-in-json")
    assert w.path == "fields.tool_calls.close" and "inside a JSON string value" in w.message
    assert "see </tool_call> here" in w.message
    output = 'Sure.<tool_call>{"name": "f", "arguments": {"s": "see </tool_call> here"}}</tool_call><|im_end|>'
    with pytest.raises(ValueError):
        parsing.parse_response(output, spec, prefix=CHATML_PROMPT)
    pattern = json.loads(w.fix.split("close_pattern ", 1)[1].split(" (in place of")[0])
    fixed = copy.deepcopy(spec)
    del fixed["fields"]["tool_calls"]["close"]
    fixed["fields"]["tool_calls"]["close_pattern"] = pattern
    assert only(fixed, "close-in-json") == []
    message = parsing.parse_response(output, fixed, prefix=CHATML_PROMPT)
    assert message["tool_calls"][0]["function"]["arguments"] == {"s": "see </tool_call> here"}


def test_close_in_json_string_check_quiet_for_turn_ends_and_balanced_closes():
    assert only(CLEAN, "close-in-json") == []  # the balanced lookbehind close
    # A call that ends at the end-of-turn token the content field closes on too: the model stops there anyway.
    spec = clean(tool_calls={**TOOL, "close": "<|im_end|>"})
    assert only(spec, "close-in-json") == []


# ---- content_args: regexes and key names


def xml_call(args):
    return clean(tool_calls={"open": "<tool_call>", "close": "</tool_call>", "repeats": True,
                             "content": "xml-inline", "content_args": args,
                             "transform": {"type": "function", "function": {"name": "f", "arguments": "{content}"}}})


def test_invalid_tag_pattern_is_an_error_with_its_path_and_position():
    spec = xml_call({"tag_pattern": "(?P<key>"})
    parsing.load_template(spec)  # it loads (as in transformers) ...
    with pytest.raises(Exception):  # ... and every call then fails
        parsing.parse_response("<tool_call><a>1</a></tool_call><|im_end|>", spec, prefix=CHATML_PROMPT)
    [w] = only(spec, "invalid-regex")
    assert w.severity == "error" and w.path == "fields.tool_calls.content_args.tag_pattern"
    # the unclosed group opens at 0 (`regex` gives up at 8, the pattern's end)
    assert "does not compile: missing ) at position 0 (\"\" <- here)" in w.message, w.message


def test_invalid_regex_in_a_nested_value_parser_and_missing_key_group():
    nested = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
              "value_parser": {"name": "xml-inline", "args": {"tag_pattern": "[a-"}}}
    [w] = only(xml_call(nested), "invalid-regex")
    assert w.path == "fields.tool_calls.content_args.value_parser.args.tag_pattern"
    assert "unterminated character set at position 0" in w.message, w.message  # the `[` of "[a-"
    [w] = only(xml_call({"tag_pattern": r"<(\w+)>(?P<value>.*?)</\1>"}), "invalid-regex")
    assert "no named group 'key'" in w.message
    [w] = only(xml_call({}), "invalid-regex")
    assert w.path == "fields.tool_calls.content_args" and "needs a tag_pattern" in w.message
    assert only(xml_call({"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}), "invalid-regex") == []


def test_a_misspelt_content_arg_names_the_known_keys():
    from parsing.content import CONTENT_ARGS

    spec = clean(tool_calls={**TOOL, "content_args": {"strin_delims": [["'", "'"]], "unquoted_keys": True}})
    [w] = only(spec, "unknown-content-arg")
    assert w.path == "fields.tool_calls.content_args.strin_delims"
    assert all(key in w.message for key in CONTENT_ARGS["json"]) and w.fix == 'Rename it to "string_delims".'
    nested = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
              "value_parser": {"name": "kv-lines", "arg": {}, "args": {"kv_seperator": "="}}}
    found = {w.path: w for w in only(xml_call(nested), "unknown-content-arg")}
    assert set(found) == {"fields.tool_calls.content_args.value_parser.arg",
                          "fields.tool_calls.content_args.value_parser.args.kv_seperator"}
    assert found["fields.tool_calls.content_args.value_parser.args.kv_seperator"].fix == 'Rename it to "kv_sep".'
    bad_name = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "value_parser": {"name": "jsn"}}
    [w] = only(xml_call(bad_name), "unknown-content-arg")
    assert w.path == "fields.tool_calls.content_args.value_parser.name" and w.severity == "error"
    assert only(clean(tool_calls={**TOOL, "content_args": {"string_delims": [["'", "'"]]}}),
                "unknown-content-arg") == []


def test_errors_come_first_and_fail_the_lint_command(tmp_path):
    """A content_args regex that cannot compile fails every parse: severity error, listed before warnings, and
    `python -m parsing lint` exits 1 on it (as on a warning)."""
    import os
    import pathlib
    import subprocess
    import sys

    spec = xml_call({"tag_pattern": "(?P<key>"})
    spec["fields"]["content"] = {"close": "<|im_end|>"}  # a warning too (the implicit field can be overwritten)
    report = lint(spec)
    assert [w.severity for w in report.warnings][:2] == ["error", "warning"]
    assert report.format().startswith("ERROR [invalid-regex] fields.tool_calls.content_args.tag_pattern")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(xml_call({"tag_pattern": "(?P<key>"})))
    assert [w.severity for w in lint(json.loads(path.read_text())).warnings] == ["error"]
    root = pathlib.Path(parsing.__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "parsing", "lint", str(path)], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 1 and "ERROR [invalid-regex]" in proc.stdout, proc.stdout + proc.stderr


class _TemplateOnly:
    """A tokenizer that has a chat template source but cannot render (the anchor check then gives an info)."""

    def __init__(self, chat_template):
        self.chat_template = chat_template


def test_reasoning_field_name_against_the_key_the_chat_template_reads():
    reads_thinking = "{% for message in messages %}{{ message.thinking }}{{ message['content'] }}{% endfor %}"
    reads_reasoning = "{% for message in messages %}{{ message.get('reasoning_content', '') }}{% endfor %}"
    [w] = only(CLEAN, "reasoning-field-name", tokenizer=_TemplateOnly(reads_thinking))
    assert w.path == "fields.reasoning_content" and "reads reasoning from 'thinking'" in w.message
    assert only(CLEAN, "reasoning-field-name", tokenizer=_TemplateOnly(reads_reasoning)) == []
    thinking = clean(reasoning_content=None, thinking={"open": "<think>", "close": "</think>", "repeats": True})
    [w] = only(thinking, "reasoning-field-name", tokenizer=_TemplateOnly(reads_reasoning))
    assert w.path == "fields.thinking" and "'reasoning_content'" in w.fix
    assert only(thinking, "reasoning-field-name", tokenizer=_TemplateOnly(reads_thinking)) == []
    # A content block's `block.thinking` (magistral) is not the message key; a template reading neither: quiet.
    blocks = "{% for block in message.content %}{{ block.thinking }}{% endfor %}"
    assert only(CLEAN, "reasoning-field-name", tokenizer=_TemplateOnly(blocks)) == []


# --- typed-tool-arguments: a value_parser that types tool-call arguments against the tool schema -----------------

_XML_CALL_ARGS = {"tag_pattern": "<p name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</p>"}
_TYPED_OUT = ('<call name="note"><p name="zip">12345</p><p name="title">true</p><p name="n">null</p>'
              '<p name="city">Paris</p></call>')
_STRING_TOOLS = [{"type": "function", "function": {"name": "note", "parameters": {
    "type": "object", "properties": {k: {"type": "string"} for k in ("zip", "title", "n", "city")}}}}]


def _xml_calls(value_parser=None, transform=True, content="xml-inline"):
    args = dict(_XML_CALL_ARGS, **({"value_parser": value_parser} if value_parser else {}))
    field = {"open_pattern": "<call name=\"(?P<name>[^\"]+)\">", "close": "</call>", "content": content,
             "content_args": args if content == "xml-inline" else {"value_parser": value_parser}, "repeats": True}
    field["transform"] = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}} \
        if transform else {"tool": "{name}", "values": "{content}"}  # values that build no tool-call arguments
    return {"defaults": {"role": "assistant"}, "start_anchor": "<a>", "fields": {"content": {}, "tool_calls": field}}


def _reference_arguments(template, tools):
    from transformers.utils import chat_parsing

    parser = chat_parsing.ResponseParser(template, "<a>", tools=tools)
    parser.feed(_TYPED_OUT)
    return parser.finalize()[0]["tool_calls"][0]["function"]["arguments"]


def test_typed_tool_arguments_warns_on_a_value_parser_that_overrides_the_tool_schema():
    """Trial 11: value_parser json on xml-inline arguments turned "12345"/"true"/"null" into 12345/True/None
    although the tool schema says string, and lint said nothing."""
    template = _xml_calls({"name": "json", "args": {"allow_non_json": True}})
    # what the warning claims, from the reference: typed against the schema with it, strings kept without it
    assert _reference_arguments(template, _STRING_TOOLS) == {"zip": 12345, "title": True, "n": None, "city": "Paris"}
    assert _reference_arguments(_xml_calls(), _STRING_TOOLS) == {"zip": "12345", "title": "true", "n": "null",
                                                                 "city": "Paris"}
    warnings = [w for w in lint(template).warnings if w.code == "typed-tool-arguments"]
    assert len(warnings) == 1
    w = warnings[0]
    assert w.path == "fields.tool_calls.content_args.value_parser" and w.severity == "warning"
    assert '"12345" becomes 12345' in w.message and "never re-casts" in w.message
    assert "fails the region" not in w.message  # allow_non_json keeps text that is not JSON
    assert "Remove the value_parser" in w.fix and "tools=" in w.fix


@pytest.mark.parametrize("parser,says", [("json", "fails the region"), ("int", "not a number fails the region"),
                                         ("float", "not a number fails the region"),
                                         ("bool", "every value becomes true or false")])
def test_typed_tool_arguments_says_what_each_value_parser_does(parser, says):
    template = _xml_calls({"name": parser})
    (w,) = [w for w in lint(template).warnings if w.code == "typed-tool-arguments"]
    assert says in w.message
    if parser == "bool":  # checked on the reference: "12345", "null" and "Paris" become false
        assert _reference_arguments(template, _STRING_TOOLS) == {"zip": False, "title": True, "n": False,
                                                                  "city": False}
    else:  # checked on the reference: "Paris" is no JSON text, "true" no number: the region fails
        with pytest.raises(ValueError):
            _reference_arguments(template, _STRING_TOOLS)


def test_typed_tool_arguments_quiet_when_values_stay_text_or_are_no_arguments():
    for template in (_xml_calls(), _xml_calls({"name": "text"}), _xml_calls({"name": "json"}, transform=False)):
        assert "typed-tool-arguments" not in lint(template).codes, template["fields"]["tool_calls"]
    assert "typed-tool-arguments" in lint(_xml_calls({"name": "json"}, content="kv-lines")).codes
    # a JSON call body is the model's own typing ({"zip": 12345} is what it wrote): not this warning
    json_calls = clean()
    assert "typed-tool-arguments" not in lint(json_calls).codes


# ---- optional-tail


def _reference_streamed(spec, text, size):
    from transformers.utils import chat_parsing as reference

    from parsing.streams import feed_all, fixed_chunks
    message, _events = feed_all(reference.ResponseParser(copy.deepcopy(spec), ""), fixed_chunks(text, size))
    return message


def test_optional_tail_triggers_on_a_close_whose_tail_spans_several_characters_and_the_fault_is_real():
    spec = clean(tool_calls=dict(TOOL, close_pattern=r"</tool_call>\s*(?:</calls>)?", close=None))
    del spec["fields"]["tool_calls"]["close"]
    [w] = only(spec, "optional-tail")
    assert w.path == "fields.tool_calls.close_pattern" and "streaming" in w.message and "own field" in w.fix
    # The warning is right: transformers' streaming parser, fed 1-character chunks, leaks the tail into content,
    # while its one-shot parse (and our engine streamed the same way) keep it out.
    from transformers.utils import chat_parsing as reference
    text = 'Hi<tool_call>{"name": "f", "arguments": {}}</tool_call>\n</calls>'
    one_shot = reference.parse_response(text, copy.deepcopy(spec), prefix="")
    assert "</calls>" not in one_shot["content"]
    assert "</calls>" in _reference_streamed(spec, text, 1)["content"]
    from parsing.streams import feed_all, fixed_chunks
    ours, _ = feed_all(parsing.ResponseParser(spec, ""), fixed_chunks(text, 1))
    assert ours == one_shot


@pytest.mark.parametrize("pattern", [
    r"</g>(?:</w>)*", r"(?:</g>|</h>)(?:\n</w>)?\s*", r"</g>(?:ab|c)+", r"(?:</g>(?:</w>)?|</h>)",
])
def test_optional_tail_triggers_on_repeats_branches_and_trailing_blanks(pattern):
    spec = clean(g={"open": "<g>", "close_pattern": pattern, "repeats": True})
    assert [w.path for w in only(spec, "optional-tail")] == ["fields.g.close_pattern"]


@pytest.mark.parametrize("pattern", [
    r"</g>\s*", r"</g>\n?", r"(?:</g>|</h>)", r"</g>(?:</w>)??", r"</g>(?=\n)", r"</g>(?:</w>)?x", r"</g>[ab]*$",
])
def test_optional_tail_quiet_for_one_character_tails_lazy_and_required_ends(pattern):
    spec = clean(g={"open": "<g>", "close_pattern": pattern, "repeats": True})
    assert only(spec, "optional-tail") == []
    assert only(CLEAN, "optional-tail") == []


def test_optional_tail_quiet_pattern_really_streams_as_one_shot_in_the_reference():
    spec = clean(g={"open": "<g>", "close_pattern": r"</g>\s*", "repeats": True})
    text = "a<g>x</g>\n\nb"
    from transformers.utils import chat_parsing as reference
    assert _reference_streamed(spec, text, 1) == reference.parse_response(text, copy.deepcopy(spec), prefix="")
