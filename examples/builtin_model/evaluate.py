"""Evaluate the built-in model on held-out prompts, greedy and sampled.

Held-out prompts come from ``data.make_examples(n, "eval", seed)``: real cities, search topics
and currency codes that training never contains, phrasings and plain questions that only the
evaluation uses, and number ranges training rarely draws. Before generating, the script checks
that programmatically (``data.overlap_with_training`` against every example the logged training
run drew, ``--train-log``) and records the counts, which must all be 0.

Each prompt is rendered with the shipped chat template (thinking on or off), the model
generates once greedily and once sampling at temperature 0.7, and each generation, decoded
with special tokens kept, is parsed with the shipped ``response_template`` (our ``parsing``
engine, checked against ``transformers.utils.chat_parsing`` on every generation), with the
prompt as prefix and the offered tools.

Reported for each decoding, as shares with counts and 95% Wilson intervals:

- ``parse_ok``: generations that parse without error;
- ``tool_call_valid``: tool prompts whose message has at least one call, every call naming an
  offered tool with arguments valid against its JSON schema;
- ``tool_call_names_right``: tool prompts whose calls name exactly the expected tools, in order;
- ``tool_call_exact``: tool prompts whose calls equal the expected calls, arguments included
  (values copied from the request, units mapped to their enum names);
- ``plain_answered_directly``: plain questions (no tool fits) answered with content and no call;
- ``answer_states_values``: turns after tool results answered without a call, the content
  stating every value of the results (``data.stated_values``);
- ``reasoning_on_present`` / ``reasoning_off_absent``; ``content_consistent`` (parsed content
  equals the text outside every region); ``finished_with_im_end``; ``parsers_agree_with_reference``.

    nice -n 5 python examples/builtin_model/evaluate.py --n 480 --seed 1234 \\
        --out examples/builtin_model/results/eval.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import data  # noqa: E402

DECODINGS = {"greedy": {"do_sample": False}, "sampled": {"do_sample": True}}
TRAIN_LOG = HERE / "results" / "train.log"


def training_stream(train_log: Path):
    """Every example the logged training run drew (``data.training_block`` for each block it
    used, as its summary line says), one at a time."""
    summary = next((json.loads(line) for line in reversed(Path(train_log).read_text().splitlines())
                    if line.startswith("{") and "blocks_drawn" in line), None)
    if summary is None:
        raise SystemExit(f"{Path(train_log).name} has no summary line with blocks_drawn")
    for phase, count in summary["blocks_drawn"].items():
        for b in range(count):
            yield from data.training_block(phase, summary["seed"], b, summary["block"], summary["drill_share"],
                                           summary["echo_share"])


def get_parse_response():
    """``(parse_response, name)``: the project's ``parsing`` engine if present, else the reference."""
    try:
        mod = importlib.import_module("parsing")
        fn = getattr(mod, "parse_response", None)
        if callable(fn):
            return fn, "parsing"
    except Exception:  # the engine is not importable: fall back to the reference
        pass
    from transformers.utils.chat_parsing import parse_response

    return parse_response, "transformers.utils.chat_parsing"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval ``(low, high)`` of a share of ``k`` successes in ``n`` trials."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def rate(flags: list[bool]) -> dict:
    """``{"share", "k", "n", "ci95"}`` for a list of pass/fail flags."""
    k, n = sum(1 for f in flags if f), len(flags)
    return {"share": round(k / n, 4) if n else None, "k": k, "n": n, "ci95": list(wilson(k, n))}


def outside_regions(generation: str, thinking: bool) -> str:
    """The generated text outside reasoning and tool-call blocks, up to ``<|im_end|>``, stripped.

    With thinking on, the prompt opened the reasoning block, so everything before the first
    ``</think>`` is reasoning.
    """
    text = generation
    if thinking:
        text = text.split("</think>", 1)[1] if "</think>" in text else ""
    text = text.split("<|im_end|>", 1)[0]
    text = re.sub(r"<think>.*?(</think>|$)", "", text, flags=re.S)
    text = re.sub(r"<tool_call>.*?(</tool_call>|$)", "", text, flags=re.S)
    return text.strip()


def call_problems(message: dict, tools: list[dict] | None) -> list[str]:
    """Why the message's tool calls are not valid calls to offered tools (empty list: valid)."""
    import jsonschema

    calls = message.get("tool_calls") or []
    if not calls:
        return ["no tool call"]
    offered = {t["function"]["name"]: t["function"] for t in tools or []}
    problems = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            problems.append(f"malformed call {call!r}")
            continue
        if fn["name"] not in offered:
            problems.append(f"tool {fn['name']!r} not offered")
            continue
        args = fn.get("arguments")
        schema = dict(offered[fn["name"]]["parameters"], additionalProperties=False)
        try:
            jsonschema.validate(args, schema)
        except jsonschema.ValidationError as e:
            problems.append(f"{fn['name']}: {e.message}")
    return problems


def _call_name(call) -> str | None:
    """The function name of one parsed tool call, or None when the call is not shaped like one."""
    fn = call.get("function") if isinstance(call, dict) else None
    return fn.get("name") if isinstance(fn, dict) else None


def _last_user(messages: list[dict]) -> str:
    """The text of the last user message (what the generation answers)."""
    return next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")


def score(ex: dict, text: str, finished: bool, parse_response, reference, template, prompt: str) -> dict:
    """Parse one generation and judge it against its example; returns the record."""
    rec = {"kind": ex["kind"], "thinking": ex["thinking"], "user": _last_user(ex["messages"]), "generation": text,
           "finished": finished, "tools": [t["function"]["name"] for t in ex["tools"] or []]}
    try:
        msg = parse_response(text, template, prefix=prompt, tools=ex["tools"])
        rec["message"], rec["parse_ok"] = msg, True
    except Exception as e:  # any parser error counts as a failure to parse
        rec["parse_ok"], rec["error"], msg = False, f"{type(e).__name__}: {e}", None
    if reference is not None:  # differential check of our engine against the reference
        try:
            ref_out = {"message": reference(text, template, prefix=prompt, tools=ex["tools"])}
        except Exception as e:  # compare error types too
            ref_out = {"error": type(e).__name__}
        ours = {"message": msg} if msg is not None else {"error": rec["error"].split(":")[0]}
        rec["parsers_agree"] = ours == ref_out
    if msg is None:
        return rec
    content = msg.get("content") or ""
    rec["content_consistent"] = content == outside_regions(text, ex["thinking"])
    rec["has_reasoning"] = bool(msg.get("reasoning_content"))
    rec["has_calls"] = bool(msg.get("tool_calls"))
    if ex["kind"] == "call":
        rec["call_problems"] = call_problems(msg, ex["tools"])
        rec["calls_exact"] = msg.get("tool_calls") == ex["expected_calls"]
        rec["names_right"] = ([_call_name(c) for c in msg.get("tool_calls") or []]
                              == [c["function"]["name"] for c in ex["expected_calls"]])
    elif ex["kind"] == "plain":
        rec["answered_directly"] = bool(content.strip()) and not rec["has_calls"]
    else:
        rec["missing_values"] = [v for v in ex["expected_values"] if v not in content]
        rec["states_values"] = not rec["has_calls"] and not rec["missing_values"]
    return rec


def summarize(records: list[dict]) -> dict:
    """The metrics of one decoding's records (see the module docstring)."""
    parsed = [r for r in records if r["parse_ok"]]
    calls = [r for r in records if r["kind"] == "call"]
    return {
        "parse_ok": rate([r["parse_ok"] for r in records]),
        "tool_call_valid": rate([r["parse_ok"] and not r["call_problems"] for r in calls]),
        "tool_call_names_right": rate([bool(r.get("names_right")) for r in calls]),
        "tool_call_exact": rate([bool(r.get("calls_exact")) for r in calls]),
        "plain_answered_directly": rate([bool(r.get("answered_directly")) for r in records if r["kind"] == "plain"]),
        "answer_states_values": rate([bool(r.get("states_values")) for r in records if r["kind"] == "answer"]),
        "reasoning_on_present": rate([r["has_reasoning"] for r in parsed if r["thinking"]]),
        "reasoning_off_absent": rate([not r["has_reasoning"] for r in parsed if not r["thinking"]]),
        "content_consistent": rate([r["content_consistent"] for r in parsed]),
        "finished_with_im_end": rate([r["finished"] for r in records]),
        "parsers_agree_with_reference": (rate([r["parsers_agree"] for r in records])
                                         if records and "parsers_agree" in records[0] else None),
        "tool_call_exact_by_tools": {
            name: rate([bool(r.get("calls_exact")) for r in calls if r["expected"] == name])
            for name in sorted({r["expected"] for r in calls})},
    }


def evaluate(model_dir: str, n: int, seed: int, temperature: float, max_new_tokens: int, threads: int,
             decodings: list[str], train_log: Path = TRAIN_LOG, show: int = 3) -> dict:
    """Generate for ``n`` held-out prompts with each decoding; return metrics and records."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    examples = data.make_examples(n, "eval", seed)
    overlap = data.overlap_with_training(examples, training_stream(train_log))
    if any(v for k, v in overlap.items() if k != "training_examples"):
        raise SystemExit(f"evaluation prompts overlap the training data: {overlap}")

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    template = tokenizer.response_template
    parse_response, parser_name = get_parse_response()
    reference = None
    if parser_name != "transformers.utils.chat_parsing":
        from transformers.utils.chat_parsing import parse_response as reference
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")

    records = {d: [] for d in decodings}
    gen_tokens, gen_seconds = 0, 0.0
    for i, ex in enumerate(examples):
        prompt = tokenizer.apply_chat_template(ex["messages"], tools=ex["tools"], add_generation_prompt=True,
                                               enable_thinking=ex["thinking"], tokenize=False)
        ids = torch.tensor([tokenizer.encode(prompt, add_special_tokens=False)])
        for d in decodings:
            torch.manual_seed(seed * 100_003 + i)  # each prompt's sample is reproducible on its own
            options = dict(DECODINGS[d], temperature=temperature, top_k=0, top_p=1.0) if d == "sampled" \
                else dict(DECODINGS[d])
            t = time.perf_counter()
            with torch.no_grad():
                out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                     eos_token_id=eos, pad_token_id=tokenizer.pad_token_id, **options)
            gen_seconds += time.perf_counter() - t
            new = out[0, ids.shape[1]:].tolist()
            gen_tokens += len(new)
            text = tokenizer.decode(new, skip_special_tokens=False)
            rec = score(ex, text, bool(new) and new[-1] == eos, parse_response, reference, template, prompt)
            if ex["kind"] == "call":
                rec["expected"] = "+".join(c["function"]["name"] for c in ex["expected_calls"])
            records[d].append(rec)
            if i < show:
                print(f"--- prompt {i} ({ex['kind']}, thinking={ex['thinking']}, {d})\n{prompt[-160:]!r}\n"
                      f">>> {text!r}", flush=True)
        if (i + 1) % 40 == 0:
            print(f"{i + 1}/{n} prompts done, {gen_tokens / gen_seconds:.1f} tokens/s", flush=True)

    try:
        shown_dir = str(Path(model_dir).resolve().relative_to(ROOT))
    except ValueError:  # a model outside the repository: no machine path in the results
        shown_dir = Path(model_dir).name
    metrics = {
        "model_dir": shown_dir, "parser": parser_name, "n_prompts": n, "seed": seed, "temperature": temperature,
        "max_new_tokens": max_new_tokens, "threads": threads,
        "prompts_by_kind": {k: sum(1 for e in examples if e["kind"] == k) for k in ("call", "answer", "plain")},
        "overlap_with_training": overlap,
        **{d: summarize(records[d]) for d in decodings},
        "generated_tokens": gen_tokens,
        "tokens_per_second": round(gen_tokens / gen_seconds, 1),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
    }
    return {"metrics": metrics, "records": records}


def _failed(r: dict) -> bool:
    return (not r["parse_ok"] or bool(r.get("call_problems")) or r.get("calls_exact") is False
            or r.get("answered_directly") is False or r.get("states_values") is False
            or r.get("content_consistent") is False)


def main(argv: list[str] | None = None) -> dict:
    """Command line entry point: print the metrics and optionally write them as JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(HERE / "model"))
    ap.add_argument("--n", type=int, default=480)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--decodings", default="greedy,sampled", help="comma-separated: greedy, sampled")
    ap.add_argument("--train-log", default=str(TRAIN_LOG),
                    help="log of the run that trained the model: the overlap check reads its summary line")
    ap.add_argument("--out", default=None,
                    help="write the metrics, every failed record and the first 20 records to this JSON file")
    args = ap.parse_args(argv)
    decodings = [d for d in args.decodings.split(",") if d]
    result = evaluate(args.model, args.n, args.seed, args.temperature, args.max_new_tokens, args.threads, decodings,
                      Path(args.train_log))
    for d in decodings:
        for r in [r for r in result["records"][d] if _failed(r)][:6]:
            print("FAIL", d, json.dumps({k: r.get(k) for k in ("kind", "user", "generation", "error", "call_problems",
                                                                 "missing_values")}, ensure_ascii=False))
    print(json.dumps(result["metrics"], indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        kept = {"metrics": result["metrics"],
                "failures": {d: [r for r in result["records"][d] if _failed(r)] for d in decodings},
                "first_records": {d: result["records"][d][:20] for d in decodings}}
        Path(args.out).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
    return result["metrics"]


if __name__ == "__main__":
    main()
