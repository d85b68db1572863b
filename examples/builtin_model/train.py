"""Train the built-in chat model from scratch: synthetic data, BPE tokenizer, Llama model.

Everything is derived from ``--seed``: the synthetic conversations (``data.py``), the
byte-level BPE tokenizer trained on them, the weight initialisation and the batch order.
The loss covers only the assistant completion tokens (reasoning, content, tool calls and the
closing ``<|im_end|>``); the prompt prefix produced by the chat template is context only.

    nice -n 15 python examples/builtin_model/train.py --seed 0 \
        --out examples/builtin_model/model

Designed to finish in under 30 minutes on 2 CPU cores (see README.md for measured times).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parent.parent)):  # the repo root: template.py takes the default template from `examples`
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

import data  # noqa: E402
from template import CHAT_TEMPLATE, CONTROL_TOKENS, EOS, MARKER_TOKENS, PAD, RESPONSE_TEMPLATE, SPECIAL_TOKENS  # noqa: E402


def completion_text(target: dict, thinking: bool) -> str:
    """The text the model must generate after the generation prompt for ``target``.

    With thinking on the prompt already ends in ``<think>\\n``, so the completion starts with
    the reasoning; with thinking off the prompt ends in an empty think block and the
    completion is the answer (content and/or tool calls) alone. Tool calls follow each other
    with no whitespace in between (see ``template.py``).
    """
    body = (target.get("content") or "").strip()
    for call in target.get("tool_calls") or []:
        f = call["function"]
        body += ('<tool_call>\n{"name": ' + json.dumps(f["name"], ensure_ascii=False) + ', "arguments": '
                 + json.dumps(f["arguments"], ensure_ascii=False) + "}\n</tool_call>")
    if thinking:
        return target["reasoning_content"].strip() + "\n</think>\n\n" + body + EOS
    return body + EOS


def prompt_text(tokenizer, example: dict) -> str:
    """The prompt prefix (generation prompt included) for one example."""
    return tokenizer.apply_chat_template(
        example["messages"], tools=example["tools"], add_generation_prompt=True,
        enable_thinking=example["thinking"], tokenize=False)


# How text is cut into words before BPE merges (see train_tokenizer).
PRETOKENIZERS = ("trailing", "wordspace", "space", "gpt2")


def train_tokenizer(texts: list[str], vocab_size: int, pretokenizer: str = "wordspace") -> PreTrainedTokenizerFast:
    """Train a byte-level BPE (digits split one by one) with the ChatML control tokens and the
    reasoning/tool markers.

    ``pretokenizer`` decides where a word's space goes, which decides whether a value copied
    from the user message has the same tokens in the tool call:

    - ``"trailing"`` (default): a space sticks to the end of the word before it (``in `` +
      ``Paris``), so ``Paris`` in ``weather in Paris?`` and in ``{"city": "Paris"}`` is the same
      tokens, and so is ``Port of Spain``; only a value followed by a space in the request
      (``Paris today``) ends in a different last token. Same token count as ``"gpt2"``.
    - ``"space"``: spaces are tokens of their own: always the same tokens, about 25% more of them.
    - ``"gpt2"``: GPT-2's leading space (``ĠParis``), so the first token of a copied value differs.
    """
    split = {
        "trailing": [pre_tokenizers.Split(Regex(r"\p{L}+ ?|\p{N}|[^\s\p{L}\p{N}]+ ?|\s+"), behavior="isolated")],
        "space": [pre_tokenizers.Split(Regex(" "), behavior="isolated")],
        "wordspace": [pre_tokenizers.Split(Regex(r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+ ?|\s+"), behavior="isolated")],
        "gpt2": [],
    }[pretokenizer]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(split + [
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=pretokenizer not in ("trailing", "wordspace")),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap_tokenizer(tok)


def wrap_tokenizer(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """The transformers tokenizer around a trained ``tok`` whose ids 0-8 are ``SPECIAL_TOKENS``.

    The trainer registers all nine added tokens as special; the reasoning and tool markers are
    then re-registered, same ids, as not special (Qwen3 does the same), so that
    ``decode(..., skip_special_tokens=True)`` keeps them and drops only the control tokens.
    """
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKER_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOS, pad_token=PAD, unk_token=None, bos_token=None,
        model_max_length=2048, clean_up_tokenization_spaces=False,
        extra_special_tokens=[t for t in CONTROL_TOKENS if t not in (EOS, PAD)])
    fast.chat_template = CHAT_TEMPLATE
    fast.response_template = RESPONSE_TEMPLATE
    return fast


_ASSISTANT_TURN = re.compile(r"<\|im_start\|>assistant\n(.*?<\|im_end\|>)", re.S)


def encode_example(tokenizer, example: dict, max_len: int) -> tuple[list[int], list[int]] | None:
    """Token ids and labels for one example; None if longer than ``max_len`` tokens.

    Labelled: the completion, and the finished assistant turns earlier in the conversation
    (their calls, answers and ``<|im_end|>``; the chat template drops their reasoning), so a
    long prompt (system turn, tool schemas) teaches more than one turn. Everything else is
    -100 (context only).
    """
    prompt = prompt_text(tokenizer, example)
    completion = completion_text(example["target"], example["thinking"])
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    p = enc["input_ids"]
    spans = [m.span(1) for m in _ASSISTANT_TURN.finditer(prompt)]
    labels = [t if any(a <= start and end <= b for a, b in spans) else -100
              for t, (start, end) in zip(p, enc["offset_mapping"])]
    c = tokenizer.encode(completion, add_special_tokens=False)
    if len(p) + len(c) > max_len:
        return None
    return p + c, labels + c


def check_consistency(tokenizer, examples: list[dict]) -> None:
    """Assert that prompt + completion equals the chat template's rendering of the full turn."""
    for ex in examples:
        if not ex["thinking"]:
            continue
        full = tokenizer.apply_chat_template(ex["messages"] + [ex["target"]], tools=ex["tools"], tokenize=False)
        joined = prompt_text(tokenizer, ex) + completion_text(ex["target"], True) + "\n"
        if full != joined:
            raise AssertionError(f"chat template and completion disagree:\n{full!r}\n{joined!r}")


def completion_loss(model: LlamaForCausalLM, ids, att, lab):
    """Mean next-token cross-entropy over the labelled (completion) positions.

    Same value as ``model(..., labels=lab).loss``, but the tied LM head (hidden x vocabulary)
    only runs on the positions that have a label, about a quarter of them: the prompt is
    context only.
    """
    hidden = model.model(input_ids=ids, attention_mask=att).last_hidden_state[:, :-1]
    target = lab[:, 1:]
    keep = target != -100
    logits = model.lm_head(hidden[keep])
    return torch.nn.functional.cross_entropy(logits.float(), target[keep])


def save(model: LlamaForCausalLM, tokenizer, out: Path) -> None:
    """Write the model folder (weights, config, generation config, tokenizer), replacing its files."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    model.config.eos_token_id = tokenizer.convert_tokens_to_ids(EOS)
    model.config.pad_token_id = tokenizer.pad_token_id
    model.generation_config = GenerationConfig(
        eos_token_id=model.config.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        do_sample=True, temperature=0.7, top_k=0, top_p=1.0, max_new_tokens=256)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out, save_jinja_files=False)


def build_model(vocab_size: int, args) -> LlamaForCausalLM:
    """A small Llama with tied embeddings and attention biases; with ``args.induction_init`` its
    first two layers start with a copying circuit (``init_induction_circuit``)."""
    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.heads,
        max_position_embeddings=1024, rope_theta=args.rope_theta, tie_word_embeddings=True, attention_bias=True,
        rms_norm_eps=1e-5, initializer_range=0.02, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg)
    if args.induction_init:
        init_induction_circuit(model, seed=args.seed)
    return model


def init_induction_circuit(model: LlamaForCausalLM, seed: int = 0, prev_scale: float = 0.1, match_scale: float = 3.0,
                           copy_scale: float = 20.0, logit_scale: float = 3.0, content_pairs: int = 8) -> None:
    """Start the model with a working induction (copying) circuit; everything is trained afterwards.

    Copying a value (an argument from the question, a number from a tool result) takes two
    heads: a previous-token head, and a later head whose query (the current token) matches keys
    that carry the previous token, so that it attends to the token after an earlier occurrence
    of the current one and copies it. Neither helps the loss without the other, so from a random
    start they form late and abruptly (thousands of steps); on this machine's budget they did
    not form at all. Here they are set up directly, in orthogonal subspaces of the residual
    stream (``B``: where the first head writes; ``P``: the token features it writes there, also
    what the second head's query reads; ``G``: the token features the second head copies):

    - layer 0, head 0: a previous-token head (``init_previous_token_head``); value ``P``,
      output ``prev_scale * B``;
    - layer 1, head 0: query ``P`` and key ``B^T`` on the ``content_pairs`` slowest rotary
      frequency pairs only (so the match does not depend on distance), scaled by
      ``match_scale``; value ``G``, output ``copy_scale * G^T``;
    - every other attention output and MLP down projection starts at zero, so the residual
      stream carries the embeddings and the circuit only; the final norm's weight starts at
      ``logit_scale`` so the copied token's logit stands out.

    At initialisation this predicts the second half of a repeated random token sequence with
    about 95% accuracy.
    """
    g = torch.Generator().manual_seed(seed + 17)
    hidden = model.config.hidden_size
    layer0, layer1 = model.model.layers[0].self_attn, model.model.layers[1].self_attn
    d = layer0.head_dim
    basis, _ = torch.linalg.qr(torch.randn(hidden, 3 * d, generator=g))
    B, P, G = basis[:, :d], basis[:, d:2 * d].T, basis[:, 2 * d:].T
    half = d // 2
    slow = list(range(half - content_pairs, half)) + list(range(d - content_pairs, d))
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        init_previous_token_head(model, layer=0, head=0)
        layer0.v_proj.weight[:d] = P
        layer0.o_proj.weight[:, :d] = prev_scale * B
        layer1.q_proj.weight[:d] = 0.0
        layer1.k_proj.weight[:d] = 0.0
        for j, row in enumerate(slow):
            layer1.q_proj.weight[row] = match_scale * P[j]
            layer1.k_proj.weight[row] = match_scale * B[:, j]
        layer1.v_proj.weight[:d] = G
        layer1.o_proj.weight[:, :d] = copy_scale * G.T
        model.model.norm.weight.fill_(logit_scale)


def circuit_slices(model: LlamaForCausalLM) -> list:
    """What ``init_induction_circuit`` sets, as (parameter, index) pairs: head 0's query, key,
    value and output weights (and query/key biases) in layers 0 and 1, and the final norm's
    weight. The other heads of those layers are not part of it."""
    out = []
    for layer in model.model.layers[:2]:
        attn = layer.self_attn
        rows = slice(0, attn.head_dim)
        for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
            out.append((proj.weight, (rows,)))
            if proj.bias is not None:
                out.append((proj.bias, (rows,)))
        out.append((attn.o_proj.weight, (slice(None), rows)))
    out.append((model.model.norm.weight, (slice(None),)))
    return out


class SlowSlices:
    """Scale the optimiser's updates of some parameter slices by ``scale`` (a per-slice learning
    rate for AdamW, whose update size does not depend on the gradient's scale): ``before()``
    remembers the slices, ``after()`` (after ``opt.step()``) keeps ``scale`` of their change."""

    def __init__(self, slices: list, scale: float):
        self.slices, self.scale, self.saved = slices, scale, []

    @torch.no_grad()
    def before(self) -> None:
        self.saved = [p[idx].clone() for p, idx in self.slices]

    @torch.no_grad()
    def after(self) -> None:
        for (p, idx), old in zip(self.slices, self.saved):
            p[idx] = old + self.scale * (p[idx] - old)


def init_previous_token_head(model: LlamaForCausalLM, layer: int, head: int, pairs: int = 4,
                             strength: float = 40.0) -> None:
    """Make one attention head attend to the previous token, whatever the tokens are.

    Copying a value (an argument from the question, a number from a tool result) needs an
    induction circuit: a previous-token head, and a later head whose query (the current token)
    matches keys that carry the previous token, so it attends to the token after an earlier
    occurrence. Neither head helps the loss without the other, so from a random start they
    form late and abruptly; starting with the first one in place lets the second form under
    ordinary training.

    The head's query and key weights are zeroed and its biases set so that, after RoPE, the
    score of key position n from query position m is ``strength * sum_i cos((m - n - 1) theta_i)``
    over the ``pairs`` fastest rotary frequencies, largest at m - n = 1. Value and output
    projections stay random; everything is trained afterwards.
    """
    attn = model.model.layers[layer].self_attn
    d = attn.head_dim
    theta = model.model.rotary_emb.inv_freq[:pairs].float()
    rows = slice(head * d, (head + 1) * d)
    a = math.sqrt(strength)
    q, k = torch.zeros(d), torch.zeros(d)
    q[:pairs], q[d // 2:d // 2 + pairs] = a * torch.cos(theta), -a * torch.sin(theta)
    k[:pairs] = a
    with torch.no_grad():
        attn.q_proj.weight[rows] = 0.0
        attn.k_proj.weight[rows] = 0.0
        attn.q_proj.bias[rows] = q
        attn.k_proj.bias[rows] = k


def batches(encoded: list[tuple[list[int], list[int]]], batch_tokens: int, pad_id: int, rng: random.Random):
    """Yield padded (input_ids, attention_mask, labels) batches of about ``batch_tokens`` padded
    tokens each, grouping similar lengths (short copy drills make big batches, long
    conversations small ones). One pass over ``encoded`` in a shuffled order."""
    order = list(range(len(encoded)))
    rng.shuffle(order)
    chunk = 256
    groups = []
    for i in range(0, len(order), chunk):
        part = sorted(order[i:i + chunk], key=lambda j: len(encoded[j][0]))
        group: list[int] = []
        for j in part:
            if group and (len(group) + 1) * len(encoded[j][0]) > batch_tokens:
                groups.append(group)
                group = []
            group.append(j)
        if group:
            groups.append(group)
    rng.shuffle(groups)
    for g in groups:
        n = max(len(encoded[j][0]) for j in g)
        ids = torch.full((len(g), n), pad_id, dtype=torch.long)
        att = torch.zeros((len(g), n), dtype=torch.long)
        lab = torch.full((len(g), n), -100, dtype=torch.long)
        for r, j in enumerate(g):
            x, y = encoded[j]
            ids[r, :len(x)] = torch.tensor(x)
            att[r, :len(x)] = 1
            lab[r, :len(y)] = torch.tensor(y)
        yield ids, att, lab


def encode_all(tokenizer, examples: list[dict], max_len: int) -> list[tuple[list[int], list[int]]]:
    """``encode_example`` over ``examples``, dropping the ones longer than ``max_len``."""
    return [e for e in (encode_example(tokenizer, ex, max_len) for ex in examples) if e]


def describe(name: str, encoded: list[tuple[list[int], list[int]]]) -> str:
    n_tok = sum(len(x) for x, _ in encoded)
    n_lab = sum(sum(1 for t in y if t != -100) for _, y in encoded)
    return (f"{name}: {len(encoded)} examples, {n_tok / len(encoded):.0f} tokens each on average, "
            f"{n_lab / n_tok:.0%} of them trained")


def _block_numbers(text: str) -> dict:
    """``"copy=3,main=12"`` -> ``{"copy": 3, "main": 12, "focus": 0, "boundary": 0, "exact": 0}`` (phases not
    named start at 0)."""
    out = dict.fromkeys(data.PHASES, 0)
    for part in text.split(","):
        phase, _, number = part.partition("=")
        if phase not in out or not number.isdigit():
            raise argparse.ArgumentTypeError(f"expected copy=N,main=M,focus=K,boundary=L,exact=E, got {text!r}")
        out[phase] = int(number)
    return out


def main(argv: list[str] | None = None) -> dict:
    """Run the whole pipeline and save the model folder; returns a summary dict."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "model"))
    ap.add_argument("--batch-tokens", type=int, default=3600,
                    help="padded tokens per batch (about 12 conversations, 45 copy drills)")
    ap.add_argument("--echo-steps", type=int, default=600, help="first phase: copy drills without tools only")
    ap.add_argument("--drill-share", type=float, default=0.15,
                    help="share of call drills (made-up values, short prompts) in the main phase")
    ap.add_argument("--echo-share", type=float, default=0.1, help="share of copy drills in the main phase")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--cooldown", type=int, default=400, help="steps of linear decay at the end")
    ap.add_argument("--block", type=int, default=2048, help="examples drawn (and shuffled) together")
    ap.add_argument("--stop-file", default=None,
                    help="when this file appears, start the cooldown now (the log says which --steps reproduces it)")
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--pretokenizer", choices=PRETOKENIZERS, default="wordspace",
                    help="where spaces go before BPE (see train_tokenizer)")
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--no-induction-init", dest="induction_init", action="store_false",
                    help="start from a plain random initialisation (see init_induction_circuit)")
    ap.add_argument("--circuit-lr-scale", type=float, default=1.0,
                    help="learning-rate factor for the copying circuit's weights (circuit_slices, with "
                         "--induction-init); 0.1 kept the circuit's weights but not its use: drills' copyable "
                         "tokens at 4.7 nats after 1000 steps, against 0.9 at the full rate after a 600-step copy phase")
    ap.add_argument("--resume", default=None,
                    help="continue training this saved model folder (tokenizer and weights; fresh optimiser)")
    ap.add_argument("--first-block", type=_block_numbers, default=dict.fromkeys(data.PHASES, 0),
                    metavar="copy=N,main=M,focus=K,boundary=L,exact=E",
                    help="block numbers the data streams start at (a resumed run: past what the first part drew)")
    ap.add_argument("--mix", choices=["main", "focus", "boundary", "exact"], default="main",
                    help="the conversation stream after the copy phase: 'focus' weights it toward what v2 got "
                         "wrong (data.make_example): answers, plain questions, two calls, values of common pieces; "
                         "'boundary' toward what v3 got wrong: where a value ends, long names, mixed two-call "
                         "requests, both currencies, plain questions it cannot know; 'exact' toward v4's call "
                         "failures: requested units, looked-up forecasts, single calculations as one call")
    ap.add_argument("--rope-theta", type=float, default=1e6)
    ap.add_argument("--max-len", type=int, default=768)
    ap.add_argument("--threads", type=int, default=1,
                    help="one thread wastes far less CPU than two on a busy 2-core machine")
    ap.add_argument("--checkpoint-dir", default=None, help="also save the model here every --save-every steps")
    ap.add_argument("--save-every", type=int, default=0)
    ap.add_argument("--log-every", type=int, default=10)
    args = ap.parse_args(argv)

    t0 = time.time()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)

    if args.resume:
        # continue a saved checkpoint: its tokenizer and weights (the optimiser starts afresh)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(args.resume, local_files_only=True)
        tokenizer.response_template = RESPONSE_TEMPLATE
        model = LlamaForCausalLM.from_pretrained(args.resume, local_files_only=True)
        args.induction_init = False
        print(f"resumed from {Path(args.resume).name}: vocab {len(tokenizer)}", flush=True)
    else:
        # 1. tokenizer, trained on rendered synthetic conversations
        tok_examples = data.make_examples(4000, "train", args.seed + 1_000_003)
        bootstrap = PreTrainedTokenizerFast(tokenizer_object=_char_tokenizer())
        bootstrap.chat_template = CHAT_TEMPLATE
        texts = [prompt_text(bootstrap, ex) + completion_text(ex["target"], ex["thinking"]) for ex in tok_examples]
        tokenizer = train_tokenizer(texts, args.vocab_size, args.pretokenizer)
        check_consistency(tokenizer, tok_examples[:300])
        print(f"tokenizer: vocab {len(tokenizer)} in {time.time() - t0:.1f}s", flush=True)

        # 2. model and optimiser
        model = build_model(len(tokenizer), args)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters", flush=True)
    # optionally, the copying circuit's weights learn more slowly (see --circuit-lr-scale)
    slow = SlowSlices(circuit_slices(model), args.circuit_lr_scale) if args.induction_init else None
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.98), eps=1e-8)
    total = args.steps  # the stop file may bring it forward

    def lr_at(step: int) -> float:
        """Warm-up, constant, then a linear decay to 5% over the last ``cooldown`` steps: the
        rate at a step depends only on the step and the final step count."""
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        left = total - step
        return args.lr * (0.05 + 0.95 * min(1.0, left / args.cooldown)) if args.cooldown else args.lr

    # 3. training: copy drills without tools for the first ``echo_steps`` steps, then the main
    #    mix, both streamed in blocks drawn from the seed and the block number, so that the data
    #    a step sees does not depend on the final step count.
    model.train()
    step, t_train, losses = 0, time.time(), []
    pad_id = tokenizer.pad_token_id

    used = dict(args.first_block)

    def blocks(phase: str):
        for b in range(args.first_block[phase], 10**6):
            examples = data.training_block(phase, args.seed, b, args.block, args.drill_share, args.echo_share)
            encoded = encode_all(tokenizer, examples, args.max_len)
            used[phase] = b + 1
            if b == 0:
                print(describe(f"{phase} data", encoded), flush=True)
            yield from batches(encoded, args.batch_tokens, pad_id, random.Random(args.seed * 100_003 + b))

    def stream():
        copy = blocks("copy")
        while step < args.echo_steps:
            yield next(copy)
        yield from blocks(args.mix)

    for ids, att, lab in stream():
        if step >= total:
            break
        if args.stop_file and total == args.steps and Path(args.stop_file).exists():
            total = max(step + 1, min(total, step + args.cooldown))
            print(f"stop file found at step {step}: finishing at step {total} (rerun with --steps {total})",
                  flush=True)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = completion_loss(model, ids, att, lab)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if slow:
            slow.before()
        opt.step()
        if slow:
            slow.after()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        step += 1
        if args.checkpoint_dir and args.save_every and step % args.save_every == 0 and step < total:
            save(model, tokenizer, Path(args.checkpoint_dir) / f"step{step}")
            model.train()
        if step % args.log_every == 0 or step == total or step == args.echo_steps:
            el = time.time() - t_train
            recent = losses[-args.log_every:]
            usage = resource.getrusage(resource.RUSAGE_SELF)
            print(f"step {step}/{total} {'copy' if step <= args.echo_steps else args.mix} "
                  f"loss {sum(recent) / len(recent):.4f} lr {lr_at(step - 1):.2e} batch {tuple(ids.shape)} "
                  f"{el:.0f}s ({el / step:.2f}s/step, {usage.ru_utime + usage.ru_stime:.0f} cpu-s)", flush=True)

    # 4. save
    out = Path(args.out)
    save(model, tokenizer, out)
    elapsed = time.time() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary = {
        "seed": args.seed, "steps": step, "pretokenizer": args.pretokenizer, "batch_tokens": args.batch_tokens,
        "echo_steps": args.echo_steps, "mix": args.mix, "drill_share": args.drill_share, "echo_share": args.echo_share,
        "lr": args.lr, "warmup": args.warmup, "cooldown": args.cooldown, "block": args.block,
        "hidden": args.hidden, "intermediate": args.intermediate, "layers": args.layers, "heads": args.heads,
        "induction_init": args.induction_init, "circuit_lr_scale": args.circuit_lr_scale, "rope_theta": args.rope_theta,
        "params": n_params, "blocks_drawn": used, "resumed_from": Path(args.resume).name if args.resume else None,
        "final_loss": sum(losses[-50:]) / len(losses[-50:]), "train_seconds": round(time.time() - t_train, 1),
        "total_seconds": round(elapsed, 1), "threads": args.threads,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "weights_bytes": (out / "model.safetensors").stat().st_size,
    }
    print(json.dumps(summary), flush=True)
    return summary


def _char_tokenizer() -> Tokenizer:
    """A throwaway byte-level tokenizer, only used to render the chat template before BPE exists."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


if __name__ == "__main__":
    main()
