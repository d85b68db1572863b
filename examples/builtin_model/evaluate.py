"""Evaluate the built-in model on held-out synthetic prompts.

Held-out prompts come from ``data.make_examples(n, "eval", seed)``: cities, search topics,
currencies and number ranges that training never saw, and partly unseen phrasings. Each
prompt is rendered with the shipped chat template (thinking on or off), the model samples at
temperature 0.7, and the generation, decoded with special tokens kept, is parsed with the
shipped ``response_template`` (our ``parsing`` engine when it is importable, otherwise
``transformers.utils.chat_parsing``), with the prompt as prefix and the offered tools.

Reported:
- parse_ok: share of generations that parse without error;
- tool_call_valid: share of tool-requesting prompts whose parsed message has at least one tool
  call, every call naming an offered tool with arguments valid against its JSON schema;
- tool_call_names_right: share of tool-requesting prompts whose calls name exactly the expected
  tools, in order (the right tool was picked);
- tool_call_exact: share of tool-requesting prompts whose calls equal the expected calls,
  arguments included (the values were copied from the request and the units mapped);
- reasoning_on_present / reasoning_off_absent: reasoning_content present when thinking is
  on, absent when off;
- content_consistent: share of parsed messages whose ``content`` equals the text outside
  every region (the whitespace-between-blocks pitfall would break this);
- tokens_per_second: generated tokens per second of generation time on CPU;
- parsers_agree_with_reference: when our ``parsing`` engine is used, the share of generations
  where it gives the same message (or the same exception type) as the reference.

    nice -n 15 python examples/builtin_model/evaluate.py --n 480 --seed 1234
"""

from __future__ import annotations

import argparse
import importlib
import json
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


def get_parse_response():
    """``(parse_response, name)``: the project's ``parsing`` engine if present, else the reference."""
    try:
        mod = importlib.import_module("parsing")
        fn = getattr(mod, "parse_response", None)
        if callable(fn):
            return fn, "parsing"
    except Exception:  # the engine is still being written; fall back to the reference
        pass
    from transformers.utils.chat_parsing import parse_response

    return parse_response, "transformers.utils.chat_parsing"


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


def evaluate(model_dir: str, n: int, seed: int, temperature: float, max_new_tokens: int,
             threads: int, show: int = 3) -> dict:
    """Generate for ``n`` held-out prompts and return the metrics and per-prompt records."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    template = tokenizer.response_template
    parse_response, parser_name = get_parse_response()
    reference = None
    if parser_name != "transformers.utils.chat_parsing":
        from transformers.utils.chat_parsing import parse_response as reference
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")

    examples = data.make_examples(n, "eval", seed)
    records, gen_tokens, gen_seconds = [], 0, 0.0
    for i, ex in enumerate(examples):
        prompt = tokenizer.apply_chat_template(ex["messages"], tools=ex["tools"], add_generation_prompt=True,
                                               enable_thinking=ex["thinking"], tokenize=False)
        ids = torch.tensor([tokenizer.encode(prompt, add_special_tokens=False)])
        t = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=temperature,
                                 top_k=0, top_p=1.0, max_new_tokens=max_new_tokens, eos_token_id=eos,
                                 pad_token_id=tokenizer.pad_token_id)
        gen_seconds += time.perf_counter() - t
        new = out[0, ids.shape[1]:].tolist()
        gen_tokens += len(new)
        text = tokenizer.decode(new, skip_special_tokens=False)
        rec = {"kind": ex["kind"], "thinking": ex["thinking"], "user": _last_user(ex["messages"]), "generation": text,
               "finished": bool(new) and new[-1] == eos, "tools": [t["function"]["name"] for t in ex["tools"] or []]}
        try:
            msg = parse_response(text, template, prefix=prompt, tools=ex["tools"])
            rec["message"] = msg
            rec["parse_ok"] = True
        except Exception as e:  # any parser error counts as a failure to parse
            rec["parse_ok"] = False
            rec["error"] = f"{type(e).__name__}: {e}"
            msg = None
        if reference is not None:  # differential check of our engine against the reference
            try:
                ref_out = {"message": reference(text, template, prefix=prompt, tools=ex["tools"])}
            except Exception as e:  # compare error types too
                ref_out = {"error": type(e).__name__}
            ours = {"message": msg} if msg is not None else {"error": rec["error"].split(":")[0]}
            rec["parsers_agree"] = ours == ref_out
        if msg is not None:
            rec["content_consistent"] = (msg.get("content") or "") == outside_regions(text, ex["thinking"])
            rec["has_reasoning"] = bool(msg.get("reasoning_content"))
            rec["has_calls"] = bool(msg.get("tool_calls"))
            if ex["kind"] == "call":
                rec["call_problems"] = call_problems(msg, ex["tools"])
                rec["calls_exact"] = msg.get("tool_calls") == ex["expected_calls"]
                rec["names_right"] = ([_call_name(c) for c in msg.get("tool_calls") or []]
                                      == [c["function"]["name"] for c in ex["expected_calls"]])
        records.append(rec)
        if i < show:
            print(f"--- prompt {i} ({ex['kind']}, thinking={ex['thinking']})\n{prompt[-200:]!r}\n"
                  f">>> {text!r}\n=> {rec.get('message', rec.get('error'))}", flush=True)
        if (i + 1) % 20 == 0:
            print(f"{i + 1}/{n} done, {gen_tokens / gen_seconds:.1f} tokens/s", flush=True)

    def share(rs, key):
        rs = list(rs)
        return round(sum(1 for r in rs if r.get(key)) / len(rs), 4) if rs else None

    parsed = [r for r in records if r["parse_ok"]]
    calls = [r for r in records if r["kind"] == "call"]
    on = [r for r in parsed if r["thinking"]]
    off = [r for r in parsed if not r["thinking"]]
    metrics = {
        "model_dir": model_dir, "parser": parser_name, "n_prompts": n, "seed": seed,
        "temperature": temperature, "threads": threads,
        "parse_ok": share(records, "parse_ok"),
        "finished_with_im_end": share(records, "finished"),
        "n_tool_prompts": len(calls),
        "tool_call_valid": round(sum(1 for r in calls if r["parse_ok"] and not r["call_problems"]) / len(calls), 4),
        "tool_call_names_right": share(calls, "names_right"),
        "tool_call_exact": share(calls, "calls_exact"),
        "n_thinking_on": len([r for r in records if r["thinking"]]),
        "reasoning_on_present": share(on, "has_reasoning"),
        "n_thinking_off": len([r for r in records if not r["thinking"]]),
        "reasoning_off_absent": round(1 - share(off, "has_reasoning"), 4) if off else None,
        "content_consistent": share(parsed, "content_consistent"),
        "answers_without_calls": round(sum(1 for r in parsed if r["kind"] != "call" and not r["has_calls"]
                                           and (r["message"].get("content"))) /
                                       max(1, sum(1 for r in parsed if r["kind"] != "call")), 4),
        "parsers_agree_with_reference": share(records, "parsers_agree") if reference else None,
        "generated_tokens": gen_tokens,
        "tokens_per_second": round(gen_tokens / gen_seconds, 1),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
    }
    return {"metrics": metrics, "records": records}


def main(argv: list[str] | None = None) -> dict:
    """Command line entry point: print the metrics and optionally write them as JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(HERE / "model"))
    ap.add_argument("--n", type=int, default=480)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None,
                    help="write the metrics, every failed record and the first 20 records to this JSON file")
    args = ap.parse_args(argv)
    result = evaluate(args.model, args.n, args.seed, args.temperature, args.max_new_tokens, args.threads)
    failures = [r for r in result["records"] if not r["parse_ok"] or r.get("call_problems")
                or r.get("content_consistent") is False]
    for r in failures[:10]:
        print("FAIL", json.dumps({k: r.get(k) for k in ("kind", "thinking", "user", "generation", "error", "call_problems")},
                                 ensure_ascii=False))
    print(json.dumps(result["metrics"], indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        kept = {"metrics": result["metrics"], "failures": failures, "first_records": result["records"][:20]}
        Path(args.out).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
    return result["metrics"]


if __name__ == "__main__":
    main()
