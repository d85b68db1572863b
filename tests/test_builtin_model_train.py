"""The built-in model's training pieces: the copying circuit it starts from, what is labelled,
batching, the tokenizer's treatment of copied values, and the shipped tokenizer."""

from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "builtin_model"))
sys.path.insert(0, str(ROOT))

torch = pytest.importorskip("torch")

import data  # noqa: E402
import train  # noqa: E402
from examples import builtin_model  # noqa: E402

ARGS = types.SimpleNamespace(hidden=192, intermediate=512, layers=4, heads=6, induction_init=True,
                             rope_theta=1e6, seed=0)


@pytest.fixture(scope="module")
def shipped_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR, local_files_only=True)


def _repeat_batch(n=24, half=50, vocab=2048, seed=5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(20, vocab, (n, half), generator=g)
    return torch.cat([x, x], 1)


def test_initial_model_copies_repeated_random_tokens():
    torch.manual_seed(0)
    model = train.build_model(2048, ARGS).eval()
    ids = _repeat_batch()
    with torch.no_grad():
        logits = model(ids).logits
    half = ids.shape[1] // 2
    predicted, wanted = logits[:, half:-1].argmax(-1), ids[:, half + 1:]
    assert (predicted == wanted).float().mean() > 0.85
    # a plain random initialisation does not copy
    plain = train.build_model(2048, types.SimpleNamespace(**dict(vars(ARGS), induction_init=False))).eval()
    with torch.no_grad():
        plain_predicted = plain(ids).logits[:, half:-1].argmax(-1)
    assert (plain_predicted == wanted).float().mean() < 0.05


def test_previous_token_head_attends_to_the_previous_token():
    torch.manual_seed(0)
    model = train.build_model(2048, ARGS).eval()
    model.config._attn_implementation = "eager"
    ids = torch.randint(20, 2048, (1, 300))
    with torch.no_grad():
        attn = model(ids, output_attentions=True).attentions[0][0, 0]
    to_previous = torch.stack([attn[t, t - 1] for t in range(1, 300)])
    assert to_previous.min() > 0.9


def test_earlier_assistant_turns_and_the_completion_are_labelled(shipped_tokenizer):
    example = {
        "messages": [
            {"role": "user", "content": "Weather in Vorkal?"},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": {"city": "Vorkal"}}}]},
            {"role": "tool", "content": '{"city": "Vorkal", "temperature": 3}'},
            {"role": "assistant", "content": "It is 3°C in Vorkal."},
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [data.TOOLS["get_weather"]], "thinking": False,
        "target": {"role": "assistant", "content": "You're welcome!"},
    }
    ids, labels = train.encode_example(shipped_tokenizer, example, 2000)
    labelled = shipped_tokenizer.decode([t for t, y in zip(ids, labels) if y != -100], skip_special_tokens=False)
    assert labelled == ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Vorkal"}}\n</tool_call><|im_end|>'
                        "It is 3°C in Vorkal.<|im_end|>You're welcome!<|im_end|>")
    assert [y for y in labels if y != -100] == [t for t, y in zip(ids, labels) if y != -100]


def test_batches_stay_within_the_token_budget():
    rng = random.Random(0)
    encoded = [([1] * n, [1] * n) for n in (rng.randint(20, 400) for _ in range(500))]
    seen = 0
    for ids, att, lab in train.batches(encoded, 3600, 0, random.Random(1)):
        assert ids.shape[0] == 1 or ids.numel() <= 3600
        assert int(att.sum()) == int((lab != -100).sum())
        seen += ids.shape[0]
    assert seen == len(encoded)


@pytest.mark.parametrize("pretokenizer,identical", [("wordspace", True), ("gpt2", False)])
def test_copied_values_keep_their_tokens(pretokenizer, identical):
    """With words and spaces apart, a value has the same tokens in the question and in the call."""
    examples = data.make_examples(600, "train", 11)
    texts = [json.dumps(ex, ensure_ascii=False) for ex in examples]
    tok = train.train_tokenizer(texts, 1024, pretokenizer)
    question, value = "Is it warmer in Port of Spain or in St Petersburg today?", "St Petersburg"
    asked = tok.encode(question, add_special_tokens=False)
    called = tok.encode(json.dumps({"city": value}), add_special_tokens=False)
    span = tok.encode(value, add_special_tokens=False)
    inside = lambda seq: any(seq[i:i + len(span)] == span for i in range(len(seq)))  # noqa: E731
    assert (inside(asked) and inside(called)) == identical



def test_circuit_slices_learn_at_a_fraction_of_the_rate():
    """AdamW's step on the circuit's slices is scaled by SlowSlices; every other weight moves as
    without it."""
    import copy

    torch.manual_seed(0)
    fast = train.build_model(2048, ARGS)
    slow_model = copy.deepcopy(fast)
    ids = _repeat_batch(n=4, half=20)
    moved = []
    for model, scale in ((fast, None), (slow_model, 0.1)):
        start = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
        slow = train.SlowSlices(train.circuit_slices(model), scale) if scale else None
        model(ids, labels=ids).loss.backward()
        if slow:
            slow.before()
        opt.step()
        if slow:
            slow.after()
        moved.append({n: p.detach() - start[n] for n, p in model.named_parameters()})
    names = {id(p): n for n, p in slow_model.named_parameters()}
    in_circuit = {}
    for p, idx in train.circuit_slices(slow_model):
        name = names[id(p)]
        assert torch.allclose(moved[1][name][idx], 0.1 * moved[0][name][idx], atol=2e-6), name
        assert moved[0][name][idx].abs().max() > 1e-3, name
        mask = in_circuit.setdefault(name, torch.zeros_like(p, dtype=torch.bool))
        mask[idx] = True
    q = "model.layers.0.self_attn.q_proj.weight"
    assert in_circuit[q][:32].all() and not in_circuit[q][32:].any()  # head 0 only (6 heads of 32)
    for name, delta in moved[0].items():
        outside = ~in_circuit.get(name, torch.zeros_like(delta, dtype=torch.bool))
        assert torch.allclose(moved[1][name][outside], delta[outside], atol=2e-6), name


def test_first_block_numbers_parse_and_reject_typos():
    assert train._block_numbers("copy=25,main=12") == {"copy": 25, "main": 12, "focus": 0, "boundary": 0, "exact": 0}
    assert train._block_numbers("main=3") == {"copy": 0, "main": 3, "focus": 0, "boundary": 0, "exact": 0}
    assert train._block_numbers("copy=25,main=18,focus=12,boundary=2") == {"copy": 25, "main": 18, "focus": 12,
                                                                         "boundary": 2, "exact": 0}
    assert train._block_numbers("copy=25,main=18,focus=12,boundary=14,exact=1")["exact"] == 1
    for bad in ("mian=3", "main=x", "main"):
        with pytest.raises(Exception, match="copy=N,main=M"):
            train._block_numbers(bad)


def test_shipped_tokenizer_keeps_copied_values_whole(shipped_tokenizer):
    for question, value in [("What's the weather in Reykjavik?", "Reykjavik"),
                            ("Local times for Port of Spain and Lhasa, please?", "Port of Spain"),
                            ("Convert 1234.5 km to miles.", "1234.5")]:
        span = shipped_tokenizer.encode(value, add_special_tokens=False)
        for text in (question, json.dumps({"v": value})):
            seq = shipped_tokenizer.encode(text, add_special_tokens=False)
            assert any(seq[i:i + len(span)] == span for i in range(len(seq))), (text, value)
