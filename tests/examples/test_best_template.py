"""examples.best_template_for: picking a family for a tokenizer, and replaying transcripts.

Tokenizers are built locally (no hub): a tiny BPE trained in well under a second, the family's
special tokens added, and a chat template. The chat templates below are short hand-written
excerpts in the style of each family's real template (the lines that mention its markup), not
generated from the library's marker lists.
"""

import json
import random

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

import examples
from parsing.streams import replay_chunks

# Hand-written chat-template excerpts, one per family.
CHAT_TEMPLATES = {
    "hermes": (
        "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
        "{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}{{- '</tools>\\n\\nFor each function call, return a json object within <tool_call></tool_call> XML tags<|im_end|>\\n' }}{%- endif %}"
        "{%- for m in messages %}{%- if m.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}"
        "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    ),
    "qwen3": (
        "{%- for m in messages %}{%- if m.role == 'assistant' and m.reasoning_content %}{{- '<|im_start|>assistant\\n<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}"
        "{%- elif m.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response>' }}{%- endif %}"
        "{%- if m.tool_calls %}{{- '<tool_call>\\n' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
    ),
    "qwen3_coder": (
        "{{- '<|im_start|>system\\n# Tools\\n\\n<tools>' }}{%- for tool in tools %}{{- '\\n<function>\\n<name>' + tool.name + '</name>' }}{%- endfor %}"
        "{{- '</tools>\\n\\nIf you choose to call a function ONLY reply in the following format:\\n<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\nvalue_1\\n</parameter>\\n</function>\\n</tool_call><|im_end|>\\n' }}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    ),
    "smollm3": (
        "{%- set reasoning_mode = '/think' if enable_thinking else '/no_think' %}{{- '<|im_start|>system\\n## Metadata\\n\\nReasoning Mode: ' + reasoning_mode + '\\n\\n' }}"
        "{%- if xml_tools %}{{- 'pass a json object within <tool_call></tool_call> XML tags' }}{%- endif %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if reasoning_mode == '/no_think' %}{{- '<think>\\n\\n</think>\\n' }}{%- endif %}{%- endif %}"
    ),
    "llama3_json": (
        "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}{%- if tools %}{{- 'Environment: ipython\\n' }}{%- endif %}"
        "{{- 'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.' }}"
        "{%- if builtin_tools %}{{- '<|python_tag|>' }}{%- endif %}{{- '<|eot_id|>' }}"
        "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
    ),
    "pythonic": (
        "{{- '<|header_start|>system<|header_end|>\\n\\nIf you decide to invoke any of the function(s), you MUST put it in the format of [func_name(param=value, param2=value2)]<|eot|>' }}"
        "{%- for m in messages %}{{- '<|header_start|>' + m.role + '<|header_end|>\\n\\n' + m.content + '<|eot|>' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}{%- endif %}"
    ),
    "mistral": (
        "{{- bos_token }}{%- for m in messages %}{%- if m.role == 'user' %}{%- if tools and loop.last %}{{- '[AVAILABLE_TOOLS] ' + tools | tojson + '[/AVAILABLE_TOOLS]' }}{%- endif %}"
        "{{- '[INST] ' + m.content + '[/INST]' }}{%- elif m.tool_calls %}{{- '[TOOL_CALLS] ' + m.tool_calls | tojson + eos_token }}"
        "{%- elif m.role == 'tool' %}{{- '[TOOL_RESULTS] ' + m.content + '[/TOOL_RESULTS]' }}{%- endif %}{%- endfor %}"
    ),
    "magistral": (
        "{{- '[SYSTEM_PROMPT]First draft your thinking process until you arrive at a response.[THINK]Your thoughts[/THINK][/SYSTEM_PROMPT]' }}"
        "{%- for m in messages %}{%- if m.role == 'user' %}{{- '[INST]' + m.content + '[/INST]' }}"
        "{%- elif m.tool_calls %}{%- for c in m.tool_calls %}{{- '[TOOL_CALLS]' + c.function.name + '[ARGS]' + c.function.arguments | tojson }}{%- endfor %}{%- endif %}{%- endfor %}"
    ),
    "deepseek_r1": (
        "{{- bos_token }}{%- for m in messages %}{%- if m.role == 'user' %}{{- '<｜User｜>' + m.content }}"
        "{%- elif m.role == 'assistant' %}{{- '<｜Assistant｜>' + m.content + '<｜end▁of▁sentence｜>' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<｜Assistant｜><think>\\n' }}{%- endif %}"
    ),
    "deepseek_v3": (
        "{%- for m in messages %}{%- if m.role == 'user' %}{{- '<｜User｜>' + m.content }}{%- elif m.tool_calls %}"
        "{{- '<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool.type + '<｜tool▁sep｜>' + tool.function.name + '\\n```json\\n' + tool.function.arguments + '\\n```<｜tool▁call▁end｜>' }}"
        "{%- elif m.role == 'tool' %}{{- '<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + m.content + '<｜tool▁output▁end｜><｜tool▁outputs▁end｜>' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt and not ns.is_tool %}{{- '<｜Assistant｜>' }}{%- endif %}"
    ),
    "deepseek_v31": (
        "{{- 'IMPORTANT: ALWAYS adhere to this exact format for tool use:\\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜><｜tool▁calls▁end｜>' }}"
        "{%- for m in messages %}{%- if m.role == 'user' %}{{- '<｜User｜>' + m.content }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{%- if thinking %}{{- '<｜Assistant｜><think>' }}{%- else %}{{- '<｜Assistant｜></think>' }}{%- endif %}{%- endif %}"
    ),
    "gpt_oss": (
        "{{- '<|start|>system<|message|>Reasoning: ' + reasoning_effort + '\\n\\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>' }}"
        "{%- if tools %}{{- '<|start|>developer<|message|># Tools\\n\\n## functions\\n\\nnamespace functions {\\n' }}{%- endif %}"
        "{%- for m in messages %}{{- '<|start|>' + m.role + '<|channel|>final<|message|>' + m.content + '<|end|>' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}"
    ),
    "command_r7b": (
        "{{- '<BOS_TOKEN><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Write <|START_THINKING|> then <|START_ACTION|> with \"tool_call_id\", \"tool_name\" and \"parameters\"<|END_ACTION|><|END_OF_TURN_TOKEN|>' }}"
        "{%- for m in messages %}{%- if m.role == 'assistant' %}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>' + m.content + '<|END_RESPONSE|><|END_OF_TURN_TOKEN|>' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{%- endif %}"
    ),
    "glm45": (
        "[gMASK]<sop>{%- if tools %}<|system|>\n# Tools\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n</tool_call>{%- endif %}"
        "{%- for m in messages %}{%- if m.role == 'tool' %}<|observation|><tool_response>{{ m.content }}</tool_response>{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}<|assistant|>{{- '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' }}{%- endif %}"
    ),
    "kimi_k2": (
        "{%- if tools %}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif %}"
        "{%- for m in messages %}{%- if m.role == 'tool' %}<|im_system|>tool<|im_middle|>## Return of {{ m.tool_call_id }}\n{{ m.content }}<|im_end|>"
        "{%- else %}<|im_user|>user<|im_middle|>{{ m.content }}<|im_end|>{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>{%- endif %}"
    ),
    "granite": (
        "{%- if thinking %}{%- set system_message = \"Write your thoughts after 'Here is my thought process:' and write your response after 'Here is my response:' for each user query.\" %}{%- endif %}"
        "{{- '<|start_of_role|>system<|end_of_role|>' + system_message + '<|end_of_text|>\\n' }}{%- if tools %}{{- '<|start_of_role|>available_tools<|end_of_role|>' + tools | tojson + '<|end_of_text|>\\n' }}{%- endif %}"
        "{%- if m.tool_calls %}{{- '<|tool_call|>' + m.tool_calls | tojson }}{%- endif %}"
        "{%- if add_generation_prompt %}{{- '<|start_of_role|>assistant<|end_of_role|>' }}{%- endif %}"
    ),
    "phi4_mini": (
        "{%- for m in messages %}{%- if m.role == 'system' and 'tools' in m %}{{- '<|system|>' + m.content + '<|tool|>' + m.tools + '<|/tool|>' + '<|end|>' }}"
        "{%- else %}{{- '<|' + m.role + '|>' + m.content + '<|end|>' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}"
    ),
    "functiongemma": (
        "{{- bos_token }}{%- if tools %}{{- '<start_of_turn>developer\\nYou are a model that can do function calling with the following functions' }}"
        "{%- for tool in tools %}{{- '<start_function_declaration>declaration:' + tool.function.name + '{description:<escape>' + tool.function.description + '<escape>}<end_function_declaration>' }}{%- endfor %}{%- endif %}"
        "{%- if m.tool_calls %}{{- '<start_function_call>call:' + c.function.name + '{' + args + '}<end_function_call>' }}{%- endif %}"
        "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
    ),
    "gemma4": (
        "{%- if enable_thinking %}{{- '<|turn>system\\n<|think|>' }}{%- endif %}{%- for tool in tools %}{{- '<|tool>declaration:' + tool.function.name + '<tool|>' }}{%- endfor %}"
        "{%- if m.tool_calls %}{{- '<|tool_call>call:' + c.function.name + '{' + k + ':<|\"|>' + v + '<|\"|>}<tool_call|>' }}{%- endif %}"
        "{%- if m.reasoning_content %}{{- '<|channel>thought\\n' + m.reasoning_content + '<channel|>' }}{%- endif %}"
        "{%- if add_generation_prompt and not last_was_tool %}{{- '<|turn>model\\n' }}{%- endif %}"
    ),
    "minimax_m2": (
        "{{- ']~!b[' + ']~b]system\\n' + system_message }}{%- if tools %}{{- '\\n<minimax:tool_call>\\n<invoke name=\"tool-name-1\">\\n<parameter name=\"param-key-1\">param-value-1</parameter>\\n</invoke>\\n</minimax:tool_call>' }}{%- endif %}"
        "{{- '[e~[\\n' }}{%- for m in messages %}{{- ']~b]' + m.role + '\\n' + m.content + '[e~[\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- ']~b]ai' ~ '\\n' ~ '<think>' ~ '\\n' }}{%- endif %}"
    ),
    "seed_oss": (
        "{%- if thinking_budget == 0 %}{{- '<seed:bos>system\\nyour thinking budget is 0<seed:eos>' }}{%- else %}{{- '<seed:bos>system\\nYou have a thinking budget of ' + thinking_budget + ' tokens<seed:eos>' }}{%- endif %}"
        "{{- 'When invoking tools, strictly follow this format:\\n<seed:tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>value_1</parameter>\\n</function>\\n</seed:tool_call>' }}"
        "{%- if add_generation_prompt %}{{- '<seed:bos>assistant\\n' }}{%- endif %}"
    ),
    "hunyuan_a13b": (
        "{{- '<|startoftext|>' + system }}{%- for m in messages %}{%- if m.role == 'user' %}{{- '<|extra_4|>' + m.content + '<|extra_0|>' }}"
        "{%- else %}{{- '<think>\\n' + m.reasoning_content + '\\n</think>\\n<answer>\\n' + m.content + '\\n</answer><|eos|>' }}{%- endif %}{%- endfor %}"
        "{%- if tools %}{{- 'return a JSON list within <tool_calls></tool_calls> XML tags' }}{%- endif %}"
    ),
    "ernie45_thinking": (
        "{{- '<|im_start|>system\\n<global_setting>\\nthink_mode=True\\n</global_setting><|im_end|>\\n\\n' }}"
        "{%- for m in messages %}{%- if m.role == 'assistant' %}{{- '<|im_start|>assistant\\n\\n<response>\\n' + m.content + '\\n</response>\\n<|im_end|>\\n\\n' }}"
        "{%- elif m.tool_calls %}{{- '<tool_call>\\n' + c | tojson + '\\n</tool_call>' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    ),
    "functionary_v32": (
        "{{- '<|start_header_id|>system<|end_header_id|>\\n\\nYou are capable of executing available function(s) if required.\\nAsk for the required input to:recipient==all\\n"
        "Use JSON for function arguments.\\nRespond in this format:\\n>>>${recipient}\\n${content}\\nAvailable functions:\\n// Supported function definitions that should be called when necessary.\\n"
        "namespace functions {\\n' }}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n>>>' }}{%- endif %}"
    ),
    "nemotron": (
        "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + ('detailed thinking on' if thinking else 'detailed thinking off') }}"
        "{%- if tools %}{{- '\\n\\n<AVAILABLE_TOOLS>' + tools | tojson + '</AVAILABLE_TOOLS>' }}{%- endif %}"
        "{%- if m.tool_calls %}{{- '<TOOLCALL>' + m.tool_calls | tojson + '</TOOLCALL>' }}{%- endif %}"
        "{%- if m.role == 'tool' %}{{- '<TOOL_RESPONSE>' + m.content + '</TOOL_RESPONSE>' }}{%- endif %}"
        "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
    ),
}

FAMILIES = examples.list_families()


@pytest.fixture(scope="module")
def base_tokenizer_json():
    """A tiny byte-level BPE trained on a few lines of text (no hub)."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    corpus = ["The weather in Paris is sunny.", "What time is it in Tokyo?", "def f(x):\n    return x + 1"] * 20
    tok.train_from_iterator(corpus, trainer)
    return tok.to_str()


def build_tokenizer(base_json, special_tokens=(), chat_template=None):
    tok = Tokenizer.from_str(base_json)
    tok.add_special_tokens(list(special_tokens))
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=chat_template)


def family_tokenizer(base_json, name):
    fam = examples.load_family(name)
    return build_tokenizer(base_json, fam.special_tokens, CHAT_TEMPLATES[name])


def test_every_family_has_a_chat_template_excerpt():
    assert sorted(CHAT_TEMPLATES) == FAMILIES


@pytest.mark.parametrize("name", FAMILIES)
def test_best_template_with_model_type(base_tokenizer_json, name):
    fam = examples.load_family(name)
    tok = family_tokenizer(base_tokenizer_json, name)
    match = examples.best_template_for(tok, model_type=fam.meta["model_types"][0])
    assert match.family == name, (match, examples.rank_templates_for(tok, model_type=fam.meta["model_types"][0])[:3])
    assert match.confidence >= 0.75
    assert any("model_type" in r for r in match.reasons)
    assert any("special token" in r for r in match.reasons)
    assert any("chat template" in r for r in match.reasons)
    assert match.template == fam.template


@pytest.mark.parametrize("name", FAMILIES)
def test_best_template_from_tokenizer_alone(base_tokenizer_json, name):
    """Without a model type, special tokens and chat-template text still single the family out."""
    tok = family_tokenizer(base_tokenizer_json, name)
    match = examples.best_template_for(tok)
    assert match.family == name, (match, examples.rank_templates_for(tok)[:3])
    assert 0.4 <= match.confidence <= 1.0
    with_type = examples.best_template_for(tok, model_type=examples.load_family(name).meta["model_types"][0])
    assert with_type.confidence >= match.confidence


def test_model_type_read_from_config_next_to_tokenizer(base_tokenizer_json, tmp_path):
    tok = family_tokenizer(base_tokenizer_json, "gpt_oss")
    tok.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_oss"}))
    loaded = PreTrainedTokenizerFast.from_pretrained(str(tmp_path))
    match = examples.best_template_for(loaded)
    assert match.family == "gpt_oss"
    assert "model_type 'gpt_oss'" in match.reasons


def test_superset_family_does_not_win(base_tokenizer_json):
    """A Hermes tokenizer (ChatML + <tool_call>, no <think>) is not taken for Qwen3, whose
    signature is a superset; a Mistral v3 tokenizer is not taken for Magistral."""
    hermes = build_tokenizer(base_tokenizer_json, ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"], CHAT_TEMPLATES["hermes"])
    assert examples.best_template_for(hermes).family == "hermes"
    mistral = build_tokenizer(base_tokenizer_json, examples.load_family("mistral").special_tokens, CHAT_TEMPLATES["mistral"])
    assert examples.best_template_for(mistral, model_type="mistral").family == "mistral"


def test_less_evidence_means_less_confidence(base_tokenizer_json):
    glm = examples.load_family("glm45")
    full = examples.best_template_for(family_tokenizer(base_tokenizer_json, "glm45"), model_type="glm4_moe")
    tokens_only = examples.best_template_for(build_tokenizer(base_tokenizer_json, glm.special_tokens))
    type_only = examples.best_template_for(None, model_type="glm4_moe")
    assert full.family == tokens_only.family == type_only.family == "glm45"
    assert full.confidence > tokens_only.confidence > 0
    assert full.confidence > type_only.confidence > 0


def test_tie_is_reported_as_unsure(base_tokenizer_json):
    """Qwen3 and Qwen3-Coder share model types and special tokens: without the chat template
    nothing separates them, and the match says so."""
    tok = build_tokenizer(base_tokenizer_json, examples.load_family("qwen3").special_tokens)
    ranked = examples.rank_templates_for(tok, model_type="qwen3")
    assert {m.family for m in ranked[:2]} == {"qwen3", "qwen3_coder"}
    assert ranked[0].score == ranked[1].score
    assert ranked[0].confidence <= 0.5
    # the chat template decides it
    assert examples.best_template_for(family_tokenizer(base_tokenizer_json, "qwen3_coder"), model_type="qwen3").family == "qwen3_coder"


def test_ambiguous_chatml_tokenizer_has_low_confidence(base_tokenizer_json):
    """Bare ChatML tokens fit several families; whichever is picked, the match says it is unsure."""
    tok = build_tokenizer(base_tokenizer_json, ["<|im_start|>", "<|im_end|>"], "{{ '<|im_start|>assistant\\n' }}")
    match = examples.best_template_for(tok)
    assert match.family is not None
    assert match.confidence < 0.5


def test_unknown_tokenizer_matches_nothing(base_tokenizer_json):
    tok = build_tokenizer(base_tokenizer_json, ["<my_turn>"], "{{ '<my_turn>' + message }}")
    match = examples.best_template_for(tok, model_type="some_new_arch")
    assert match.family is None and match.confidence == 0.0 and match.reasons
    assert match.template is None


# ------------------------------------------------------------------------------------------ replay


def test_replay_chunks_keep_special_tokens_whole_and_join_back():
    fam = examples.load_family("gpt_oss")
    for t in fam.transcripts:
        for seed in range(5):
            chunks = replay_chunks(t.output, fam.special_tokens, seed)
            assert "".join(chunks) == t.output
            assert all(chunks)
            pos = 0
            for c in chunks:
                for tok in fam.special_tokens:
                    i = c.find(tok)
                    if i != -1:
                        assert c == tok, f"special token {tok} not alone in chunk {c!r}"
                pos += len(c)
            # every special-token occurrence starts a chunk
            starts = set()
            p = 0
            for c in chunks:
                starts.add(p)
                p += len(c)
            for tok in fam.special_tokens:
                i = t.output.find(tok)
                while i != -1:
                    assert i in starts
                    i = t.output.find(tok, i + len(tok))


def test_replay_feeds_a_parser_to_the_same_message():
    """The playground's use: replay a transcript through the reference parser."""
    from transformers.utils.chat_parsing import ResponseParser

    rng = random.Random(0)
    for name in FAMILIES:
        fam = examples.load_family(name)
        t = rng.choice([t for t in fam.transcripts if "message" in t.outcome])
        p = ResponseParser(fam.template, prefix=t.prefix, tools=t.tools)
        for c in replay_chunks(t.output, fam.special_tokens, seed=3):
            p.feed(c)
        assert p.finalize()[0] == t.outcome["message"], (name, t.id)


def test_load_family_errors_and_copies():
    with pytest.raises(KeyError):
        examples.load_family("no_such_family")
    a = examples.load_family("qwen3")
    a.template["fields"].clear()
    assert examples.load_family("qwen3").template["fields"]
    assert a.transcript("reasoning").prefix == a.prefixes["thinking_on"]
    with pytest.raises(KeyError):
        a.transcript("nope")
