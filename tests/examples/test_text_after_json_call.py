"""Text after a JSON tool call (trial 13, F1): the library templates whose calls are one JSON value with no close
marker of their own (llama3_json, magistral, mistral, granite, phi4_mini) close the call where the JSON value ends
when text follows on a later line, so the call is kept and the text is content, instead of the text going into the
JSON and the whole parse raising. Each family has one such transcript; these are the interplays around it
(parallel calls, a closing bracket and an escaped newline inside a JSON string, pretty-printed JSON, a second call
list, text that could continue the JSON), parsed by the transformers reference and by our engine, in one shot and
under several chunkings.

Every expectation is written by hand from the format: the call as the model wrote it, the text after it as
content, or ValueError where the JSON region still swallows the text (the families' NOTES.md, Known limits: text
on the call's own line or glued to it, text that starts like JSON or like the next call), or the known limit a
second call list gives after text.
"""

import pytest
from transformers.utils import chat_parsing as reference

import examples
import parsing as engine
from streamed import chunkings, stream_message


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def message(calls, content=None):
    out = {"role": "assistant", "tool_calls": calls}
    if content is not None:
        out["content"] = content
    return out


WEATHER, TIME = call("get_weather", {"city": "Paris"}), call("get_time", {"tz": "Europe/Paris"})
NOW = call("get_time", {})
L_WEATHER = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
L_TIME = '{"name": "get_time", "parameters": {"tz": "Europe/Paris"}}'
LIST_NOW = '[{"name": "get_time", "arguments": {}}]'
LIST_WEATHER = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
# (marker before a call list, end of turn) of the three families whose calls are one JSON list
LISTS = {"mistral": ("[TOOL_CALLS] ", "</s>"), "granite": ("<|tool_call|>", "<|end_of_text|>"),
         "phi4_mini": ("functools", "<|end|>")}

CASES = {
    "llama3_json/parallel_calls_then_text": (
        L_WEATHER + "; " + L_TIME + "\n\nI asked for both.<|eot_id|>", message([WEATHER, TIME], "I asked for both.")),
    "llama3_json/brace_blank_line_and_text_in_string": (
        '{"name": "save_note", "parameters": {"text": "end with }\\n\\nThen sign it."}}\n\nSaved.<|eot_id|>',
        message([call("save_note", {"text": "end with }\n\nThen sign it."})], "Saved.")),
    "llama3_json/escaped_quote_before_brace_in_string": (
        '{"name": "echo", "parameters": {"text": "say \\"}\\" now"}}\nOK<|eot_id|>',
        message([call("echo", {"text": 'say "}" now'})], "OK")),
    "llama3_json/pretty_printed_then_text": (
        '{\n  "name": "get_weather",\n  "parameters": {\n    "city": "Paris"\n  }\n}\n\nChecking.<|eot_id|>',
        message([WEATHER], "Checking.")),
    "llama3_json/python_tag_call_then_text": (
        "<|python_tag|>" + L_WEATHER + "\n\nChecking.<|eom_id|>", message([WEATHER], "Checking.")),
    "llama3_json/text_glued_to_the_brace_raises": ('{"name": "get_time", "parameters": {}}Done.<|eot_id|>', ValueError),
    "llama3_json/text_on_the_same_line_raises": (L_WEATHER + " Let me check.<|eot_id|>", ValueError),
    "llama3_json/trailing_spaces_then_text": (
        L_WEATHER + "  \r\n\nChecking.<|eot_id|>", message([WEATHER], "Checking.")),
    "llama3_json/pretty_printed_call_alone": (
        '{\n  "name": "get_weather",\n  "parameters": {"city": "Paris"}\n}\n<|eom_id|>', message([WEATHER])),
    "llama3_json/second_object_after_blank_line_raises": (L_WEATHER + "\n\n" + L_TIME + "<|eot_id|>", ValueError),
    "llama3_json/truncated_call_still_raises": ('{"name": "get_weather", "parameters": {"city": "Pa', ValueError),
    # vLLM #48975's reproduction, with the [ARGS] token kept: no whitespace before the text (Known limits)
    "magistral/vllm48975_text_glued_to_call_raises": (
        '[TOOL_CALLS]get_weather[ARGS]{"city":"San Francisco"}Estimating the weather...</s>', ValueError),
    "magistral/two_calls_then_text": (
        '[TOOL_CALLS]add[ARGS]{"a": 1}[TOOL_CALLS]mul[ARGS]{"a": 2}\n\nComputing.</s>',
        message([call("add", {"a": 1}), call("mul", {"a": 2})], "Computing.")),
    "magistral/text_between_calls": (
        '[TOOL_CALLS]add[ARGS]{"a": 1}\nNow the product.[TOOL_CALLS]mul[ARGS]{"a": 2}</s>',
        message([call("add", {"a": 1}), call("mul", {"a": 2})], "Now the product.")),
    "magistral/brace_blank_line_and_text_in_string": (
        '[TOOL_CALLS]save_note[ARGS]{"text": "end with }\\n\\nThen sign it.", "meta": {"tags": ["a"]}}\n\nSaved.</s>',
        message([call("save_note", {"text": "end with }\n\nThen sign it.", "meta": {"tags": ["a"]}})], "Saved.")),
    "magistral/reasoning_call_then_text": (
        '[THINK]Search.[/THINK][TOOL_CALLS]grep[ARGS]{"pattern": "TODO"}\n\nSearching.</s>',
        {"role": "assistant", "reasoning_content": "Search.", "tool_calls": [call("grep", {"pattern": "TODO"})],
         "content": "Searching."}),
    "magistral/truncated_call_still_raises": ('[TOOL_CALLS]add[ARGS]{"a": {"b": 1}', ValueError),
}
for fam, (tag, end) in LISTS.items():
    CASES.update({
        # Known limit (NOTES.md, e.several_tool_sections): the field holds one list, the second replaces the first
        f"{fam}/text_then_a_second_call_list_replaces_the_first": (
            tag + LIST_NOW + "\n\nAlso the weather.\n" + tag + LIST_WEATHER + end,
            message([call("get_weather", {"city": "Paris"})], "Also the weather.")),
        f"{fam}/second_call_list_right_after_raises": (tag + LIST_NOW + "\n" + tag + LIST_NOW + end, ValueError),
        f"{fam}/nested_lists_and_bracket_in_string_then_text": (
            tag + '[{"name": "f", "arguments": {"l": [[1], {"x": "]\\n\\ny"}]}}]\nok' + end,
            message([call("f", {"l": [[1], {"x": "]\n\ny"}]})], "ok")),
        f"{fam}/pretty_printed_list_alone": (
            tag + '[\n  {\n    "name": "get_time",\n    "arguments": {}\n  }\n]\n' + end, message([NOW])),
        f"{fam}/text_before_and_after": (
            "Let me check.\n" + tag + LIST_NOW + "\nDone." + end, message([NOW], "Let me check.Done.")),
        f"{fam}/text_after_without_stop_token": (tag + LIST_NOW + "\nDone.", message([NOW], "Done.")),
        f"{fam}/text_on_the_same_line_raises": (tag + LIST_NOW + " Let me check." + end, ValueError),
    })
CASES["phi4_mini/text_starting_with_lowercase_f_raises"] = (
    "functools" + LIST_NOW + "\n\nfetching now.<|end|>", ValueError)


def _check(module, family, prefix, output, expected):
    """One shot and every chunking give ``expected`` (a message, or ValueError raised)."""
    runs = [("one-shot", lambda: module.parse_response(output, family.template, prefix=prefix))]
    runs += [(label, lambda chunks=chunks: stream_message(module, family.template, prefix, chunks))
             for label, chunks in chunkings(output, family.special_tokens)]
    for label, run in runs:
        if expected is ValueError:
            with pytest.raises(ValueError):
                run()
        else:
            assert run() == expected, label


@pytest.mark.parametrize("module", [reference, engine], ids=["reference", "engine"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_library_template_closes_the_call_before_text(module, case):
    family = examples.load_family(case.split("/")[0])
    output, expected = CASES[case]
    _check(module, family, family.prefixes["tools"], output, expected)


# Trial 13 F11: llama3_json's `;` close used to re-read the call from its start at every `;`, quadratic in
# transformers' parser on code arguments; it now checks only that a `}` stands right before. The price, in the
# family's Known limits: a string holding `}`, `;`, `{` in that order ends the call, and the cut JSON raises.
BOUNDED_CLOSES = {
    "llama3_json/semicolon_in_code_string": (
        "tools", '{"name": "write_file", "parameters": {"path": "a.c", "content": "int x = f(a, b); y += x; {z();}"}}'
        "<|eom_id|>",
        message([call("write_file", {"path": "a.c", "content": "int x = f(a, b); y += x; {z();}"})])),
    "llama3_json/brace_semicolon_brace_in_string_raises": (
        "tools", '{"name": "write_file", "parameters": {"content": "struct a {}; {b}"}}<|eom_id|>', ValueError),
}


@pytest.mark.parametrize("module", [reference, engine], ids=["reference", "engine"])
@pytest.mark.parametrize("case", sorted(BOUNDED_CLOSES))
def test_bounded_call_close(module, case):
    family = examples.load_family(case.split("/")[0])
    prefix_name, output, expected = BOUNDED_CLOSES[case]
    _check(module, family, family.prefixes[prefix_name], output, expected)
