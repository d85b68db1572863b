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


def train_tokenizer(texts: list[str], vocab_size: int, space_tokens: bool = False) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE (digits split one by one) with the ChatML/think/tool special tokens.

    With ``space_tokens`` spaces are tokens of their own, so a word has the same tokens
    wherever it appears: ``Paris`` in ``weather in Paris?`` and in ``{"city": "Paris"}``.
    Copying arguments from the user message then becomes token identity instead of the
    GPT-2-style ``ĠParis`` -> ``Paris`` mapping (about 30% more tokens per conversation).
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(([
        pre_tokenizers.Split(Regex(" "), behavior="isolated")] if space_tokens else []) + [
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
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


def encode_example(tokenizer, example: dict, max_len: int) -> tuple[list[int], list[int]] | None:
    """Token ids and labels (-100 on the prompt) for one example; None if too long."""
    prompt = prompt_text(tokenizer, example)
    completion = completion_text(example["target"], example["thinking"])
    p = tokenizer.encode(prompt, add_special_tokens=False)
    c = tokenizer.encode(completion, add_special_tokens=False)
    if len(p) + len(c) > max_len:
        return None
    return p + c, [-100] * len(p) + c


def check_consistency(tokenizer, examples: list[dict]) -> None:
    """Assert that prompt + completion equals the chat template's rendering of the full turn."""
    for ex in examples:
        if not ex["thinking"]:
            continue
        full = tokenizer.apply_chat_template(ex["messages"] + [ex["target"]], tools=ex["tools"], tokenize=False)
        joined = prompt_text(tokenizer, ex) + completion_text(ex["target"], True) + "\n"
        if full != joined:
            raise AssertionError(f"chat template and completion disagree:\n{full!r}\n{joined!r}")


def build_model(vocab_size: int, args) -> LlamaForCausalLM:
    """A small Llama with tied embeddings."""
    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.heads,
        max_position_embeddings=1024, rope_theta=10000.0, tie_word_embeddings=True,
        rms_norm_eps=1e-5, initializer_range=0.02, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return LlamaForCausalLM(cfg)


def batches(encoded: list[tuple[list[int], list[int]]], batch_size: int, pad_id: int, rng: random.Random):
    """Yield padded (input_ids, attention_mask, labels) batches, grouping similar lengths."""
    order = list(range(len(encoded)))
    rng.shuffle(order)
    chunk = batch_size * 16
    groups = []
    for i in range(0, len(order), chunk):
        part = sorted(order[i:i + chunk], key=lambda j: len(encoded[j][0]))
        groups += [part[k:k + batch_size] for k in range(0, len(part), batch_size)]
    rng.shuffle(groups)
    for g in groups:
        if len(g) < batch_size:
            continue
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


def main(argv: list[str] | None = None) -> dict:
    """Run the whole pipeline and save the model folder; returns a summary dict."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "model"))
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--space-tokens", action="store_true",
                    help="make spaces tokens of their own (see train_tokenizer)")
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=768)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=10)
    args = ap.parse_args(argv)

    t0 = time.time()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)

    # 1. tokenizer, trained on rendered synthetic conversations
    tok_examples = data.make_examples(4000, "train", args.seed + 1_000_003)
    bootstrap = PreTrainedTokenizerFast(tokenizer_object=_char_tokenizer())
    bootstrap.chat_template = CHAT_TEMPLATE
    texts = [prompt_text(bootstrap, ex) + completion_text(ex["target"], ex["thinking"]) for ex in tok_examples]
    tokenizer = train_tokenizer(texts, args.vocab_size, args.space_tokens)
    check_consistency(tokenizer, tok_examples[:300])
    t_tok = time.time() - t0
    print(f"tokenizer: vocab {len(tokenizer)} in {t_tok:.1f}s", flush=True)

    # 2. training data: a fresh stream of examples, enough for every step
    n_needed = int(args.steps * args.batch_size * 1.05) + args.batch_size * 16
    examples = data.make_examples(n_needed, "train", args.seed)
    encoded = [e for e in (encode_example(tokenizer, ex, args.max_len) for ex in examples) if e]
    n_tok = sum(len(x) for x, _ in encoded)
    n_lab = sum(sum(1 for t in y if t != -100) for _, y in encoded)
    print(f"data: {len(encoded)} examples, {n_tok / len(encoded):.0f} tokens each on average, "
          f"{n_lab / n_tok:.0%} of them trained, built in {time.time() - t0 - t_tok:.1f}s", flush=True)

    # 3. model and optimiser
    model = build_model(len(tokenizer), args)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-8)

    def lr_at(step: int) -> float:
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    rng = random.Random(args.seed)
    model.train()
    step, t_train, losses = 0, time.time(), []
    pad_id = tokenizer.pad_token_id
    while step < args.steps:
        for ids, att, lab in batches(encoded, args.batch_size, pad_id, rng):
            if step >= args.steps:
                break
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss = model(input_ids=ids, attention_mask=att, labels=lab).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            step += 1
            if step % args.log_every == 0 or step == args.steps:
                el = time.time() - t_train
                print(f"step {step}/{args.steps} loss {sum(losses[-args.log_every:]) / len(losses[-args.log_every:]):.4f} "
                      f"lr {lr_at(step - 1):.2e} {el:.0f}s ({el / step:.2f}s/step)", flush=True)

    # 4. save
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    model.config.eos_token_id = tokenizer.convert_tokens_to_ids(EOS)
    model.config.pad_token_id = pad_id
    model.generation_config = GenerationConfig(
        eos_token_id=model.config.eos_token_id, pad_token_id=pad_id,
        do_sample=True, temperature=0.7, top_k=0, top_p=1.0, max_new_tokens=256)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out, save_jinja_files=False)
    total = time.time() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary = {
        "seed": args.seed, "steps": args.steps, "space_tokens": args.space_tokens, "batch_size": args.batch_size, "params": n_params,
        "final_loss": sum(losses[-50:]) / len(losses[-50:]), "train_seconds": round(time.time() - t_train, 1),
        "total_seconds": round(total, 1), "threads": args.threads,
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
