"""Raw outputs that broke the library's templates (issue #11), parsed with the library template of
their family by the transformers reference and by our engine, in one shot and under chunkings.

Each expectation is written by hand from what the model meant; the outputs come from reports
against deployed parsers (a reasoning cut by the end of turn, a marker mentioned in the answer,
a close tag inside a JSON string or an XML parameter value, GLM-4.7's thinking-off prompt).
"""

import pytest
from transformers.utils import chat_parsing as reference

import examples
import parsing as engine
from streamed import chunkings, stream_message

QWEN3_PREFILLED = "<|im_start|>user\nIs 17 prime?<|im_end|>\n<|im_start|>assistant\n<think>\n"
CHATML = "<|im_start|>user\nSave a note.<|im_end|>\n<|im_start|>assistant\n"
GLM47_OFF = "[gMASK]<sop><|user|>What time is it?<|assistant|></think>"

CODE = 'def end_tag():\n    return "</parameter>"'

CASES = {
    "qwen3_reasoning_cut_by_end_of_turn": (
        "qwen3", QWEN3_PREFILLED,
        "17 is prime: nothing from 2 to 4 divides it.<|im_end|>",
        {"role": "assistant", "reasoning_content": "17 is prime: nothing from 2 to 4 divides it."},
    ),
    "qwen3_think_tag_in_answer": (
        "qwen3", QWEN3_PREFILLED,
        "The user asks how to hide notes.\n</think>\n\nPut them inside a <think> block and the viewer folds them."
        "<|im_end|>",
        {"role": "assistant", "reasoning_content": "The user asks how to hide notes.",
         "content": "Put them inside a <think> block and the viewer folds them."},
    ),
    "hermes_close_tag_in_json_string": (
        "hermes", CHATML,
        '<tool_call>\n{"name": "save_note", "arguments": {"title": "tags", "text": "A call always ends with '
        '</tool_call> on a new line."}}\n</tool_call><|im_end|>',
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "save_note",
            "arguments": {"title": "tags", "text": "A call always ends with </tool_call> on a new line."}}}]},
    ),
    "qwen3_coder_parameter_close_in_value": (
        "qwen3_coder", CHATML,
        "<tool_call>\n<function=write_file>\n<parameter=path>\nlib/tags.py\n</parameter>\n<parameter=content>\n"
        + CODE + "\n</parameter>\n</function>\n</tool_call><|im_end|>",
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "write_file", "arguments": {"path": "lib/tags.py", "content": CODE}}}]},
    ),
    "glm47_thinking_off": (
        "glm45", GLM47_OFF, "It is noon.<|user|>", {"role": "assistant", "content": "It is noon."},
    ),
    "glm47_thinking_off_tool_call": (
        "glm45", GLM47_OFF,
        "<tool_call>get_time<arg_key>tz</arg_key><arg_value>Asia/Tokyo</arg_value></tool_call><|observation|>",
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}}]},
    ),
}


@pytest.mark.parametrize("module", [reference, engine], ids=["reference", "engine"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_library_template_parses_real_output(module, case):
    family_name, prefix, output, expected = CASES[case]
    family = examples.load_family(family_name)
    assert module.parse_response(output, family.template, prefix=prefix) == expected
    for label, chunks in chunkings(output, family.special_tokens):
        assert stream_message(module, family.template, prefix, chunks) == expected, label
