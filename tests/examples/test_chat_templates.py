"""Every library family's chat templates render its prompt prefixes exactly.

Each family ships ``chat_template*.jinja`` (written to render as the family's published chat template
does) and ``conversations.json`` (the conversation behind each prefix of ``prefixes.json``). Each
prefix is rendered here with transformers' own chat-template machinery (``render_jinja_template``,
the sandboxed renderer ``apply_chat_template`` uses, through `parsing.doctor.chat_render`) and also
through a real tokenizer's ``apply_chat_template``, and must equal the stored text character for
character: the stored prefixes are what the transcripts are parsed after, and what the doctor's round
trip and the drafter compare with.
"""

import json

import pytest

import examples
from parsing.doctor.chat_render import render_chat

FAMILIES = examples.list_families()


def _family_prefixes():
    for name in FAMILIES:
        fam = examples.load_family(name)
        for prefix_name in fam.prefixes:
            yield name, prefix_name


def render_prefix(fam, prefix_name):
    conv = fam.conversation(prefix_name)
    kwargs = dict(conv["kwargs"])
    add_generation_prompt = kwargs.pop("add_generation_prompt", True)
    return render_chat(fam.chat_template(conv["chat_template"]), conv["messages"], tools=conv["tools"],
                       add_generation_prompt=add_generation_prompt, special_tokens=conv["special_tokens_map"],
                       **kwargs)


@pytest.mark.parametrize("family_name", FAMILIES)
def test_family_has_chat_templates_and_conversations(family_name):
    fam = examples.load_family(family_name)
    assert "chat_template.jinja" in fam.chat_templates, f"{family_name}: no chat_template.jinja"
    declared = fam.meta.get("chat_templates")
    assert isinstance(declared, dict) and declared, f"{family_name}: family.json lists no chat_templates"
    assert set(declared) == set(fam.chat_templates), (
        f"{family_name}: family.json chat_templates {sorted(declared)} != files {sorted(fam.chat_templates)}")
    for file_name, models in declared.items():
        assert isinstance(models, list) and models and all(isinstance(m, str) for m in models), (
            f"{family_name}: chat_templates[{file_name!r}] must list the models (or versions) it renders for")
    used = {fam.conversation(p)["chat_template"] for p in fam.prefixes}
    assert used <= set(fam.chat_templates), f"{family_name}: conversations use unknown templates {used}"
    assert set(fam.chat_templates) <= used, (
        f"{family_name}: chat templates {sorted(set(fam.chat_templates) - used)} render no prefix")
    unknown = set(fam.conversations.get("prefixes", {})) - set(fam.prefixes)
    assert not unknown, f"{family_name}: conversations for prefixes that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("family_name,prefix_name", list(_family_prefixes()))
def test_prefix_is_what_the_chat_template_renders(family_name, prefix_name):
    fam = examples.load_family(family_name)
    rendered = render_prefix(fam, prefix_name)
    stored = fam.prefixes[prefix_name]
    if rendered != stored:
        at = next((i for i, (a, b) in enumerate(zip(rendered, stored)) if a != b), min(len(rendered), len(stored)))
        pytest.fail(f"{family_name}/{prefix_name}: rendered prefix differs at {at}:\n"
                    f"  stored:   {stored[max(0, at - 60):at + 60]!r}\n  rendered: {rendered[max(0, at - 60):at + 60]!r}")


@pytest.fixture(scope="module")
def plain_tokenizer(tmp_path_factory):
    """A real (tiny, locally trained) tokenizer; its chat template is swapped per family."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.train_from_iterator(["hello world"], trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok)


@pytest.mark.parametrize("family_name", FAMILIES)
def test_apply_chat_template_agrees(family_name, plain_tokenizer):
    """The same prefixes through a tokenizer's own ``apply_chat_template`` (special tokens set as the
    family's tokenizer sets them)."""
    fam = examples.load_family(family_name)
    for prefix_name, stored in fam.prefixes.items():
        conv = fam.conversation(prefix_name)
        tok = plain_tokenizer
        for key in ("bos_token", "eos_token"):
            setattr(tok, key, conv["special_tokens_map"].get(key))
        kwargs = dict(conv["kwargs"])
        add_generation_prompt = kwargs.pop("add_generation_prompt", True)
        rendered = tok.apply_chat_template(conv["messages"], tools=conv["tools"], tokenize=False,
                                           chat_template=fam.chat_template(conv["chat_template"]),
                                           add_generation_prompt=add_generation_prompt, **kwargs)
        assert rendered == stored, f"{family_name}/{prefix_name}: apply_chat_template renders something else"


@pytest.mark.parametrize("family_name", FAMILIES)
def test_conversations_are_well_formed(family_name):
    fam = examples.load_family(family_name)
    for prefix_name in fam.prefixes:
        conv = fam.conversation(prefix_name)
        roles = [m["role"] for m in conv["messages"]]
        # the OpenAI roles, plus roles a family's own template names (Granite's tool_response)
        assert all(isinstance(r, str) and r for r in roles), f"{family_name}/{prefix_name}: {roles}"
        last = conv["messages"][-1]
        # a prompt ends with the user's turn or a tool result (Gemma 4 carries results in the model's message)
        assert roles[-1] in ("user", "tool", "tool_response") or last.get("tool_responses"), (
            f"{family_name}/{prefix_name}: a prompt prefix ends with the user's turn or a tool result")
        json.dumps(conv)  # plain JSON all through
