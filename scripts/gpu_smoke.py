"""GPU proof of the in-process path: the playground's own loading and streaming pipeline against bare `generate`.

Builds a model locally (random weights, the built-in model's tokenizer; no hub), loads it with
``playground.backends.load_model`` (``device_map="auto"``, ``dtype="auto"`` on CUDA), then in the same process:

- streams N tokens through the whole pipeline the chat tab runs: ``backends.stream_generate``
  (``TextIteratorStreamer`` in a generate thread), the streaming parser (``LiveParse``) and the coalesced
  drawing (``playground.streaming``: ``stream_views`` + ``draw``: timeline, event log, message previews as HTML);
- generates N tokens with bare ``model.generate`` (no streamer);

and prints tokens/s of both, the pipeline's overhead in percent, time to first token and to the first drawn
update, and peak GPU memory.  Generation is greedy and never stops early (no end-of-sequence id), so both
sides produce exactly N tokens.

    .venv/bin/python scripts/gpu_smoke.py                 # CUDA: ~0.5B Qwen3; CPU: tiny Llama
    .venv/bin/python scripts/gpu_smoke.py --size builtin --threads 1  # the built-in model (the CPU target)
    .venv/bin/python scripts/gpu_smoke.py --size tiny --tokens 300 --json
    .venv/bin/python scripts/gpu_smoke.py --no-spaces     # as if the `spaces` package were not installed

Targets (issue #15, benchmark numbers, not timed tests): overhead <= 5 % on GPU with the ~0.5B model,
<= 10 % on CPU with the built-in model.  With the `spaces` package installed its ``GPU`` decorator must be a
no-op outside ZeroGPU: the script reports whether ``stream_generate`` is still the undecorated generator.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name -> (architecture, config overrides); vocab and special ids come from the built-in tokenizer
SIZES = {
    "tiny": ("llama", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16)),
    # Qwen3-0.6B's shape (28 layers, hidden 1024, 16/8 heads, head_dim 128) with the small built-in vocabulary
    "0.5b": ("qwen3", dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                           num_key_value_heads=8, head_dim=128)),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=2000, help="tokens to generate on each side (default 2000)")
    p.add_argument("--size", choices=["auto", "tiny", "0.5b", "builtin"], default="auto",
                   help="auto: 0.5b on CUDA, tiny on CPU; builtin: the shipped built-in model")
    p.add_argument("--arch", choices=["llama", "qwen3"], default=None, help="override the architecture")
    p.add_argument("--repeats", type=int, default=2, help="runs of each side; the fastest counts (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads for every thread (OMP_NUM_THREADS); on a machine shared with other "
                        "work, 1 avoids OpenMP threads spinning against other processes")
    p.add_argument("--no-spaces", action="store_true", help="hide the `spaces` package before importing the app")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    return p.parse_args(argv)


def build_model(folder: Path, size: str, arch: str | None, on_cuda: bool, seed: int) -> Path:
    """Write a random-weight model with the built-in tokenizer to ``folder`` (bf16 on CUDA, fp32 on CPU)."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen3Config, \
        Qwen3ForCausalLM

    from examples import builtin_model

    tok = AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR)
    default_arch, shape = SIZES[size]
    arch = arch or default_arch
    cfg_cls, model_cls = (LlamaConfig, LlamaForCausalLM) if arch == "llama" else (Qwen3Config, Qwen3ForCausalLM)
    cfg = cfg_cls(vocab_size=len(tok), max_position_embeddings=32768, tie_word_embeddings=True,
                  pad_token_id=tok.pad_token_id, bos_token_id=None, eos_token_id=None, **shape)
    torch.manual_seed(seed)
    model = model_cls(cfg)
    if on_cuda:
        model = model.to(torch.bfloat16)  # saved as bf16, so dtype="auto" loads bf16
    model.generation_config = GenerationConfig(pad_token_id=tok.pad_token_id, eos_token_id=None, do_sample=False)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def bare_generate(lm, prompt: str, n: int) -> tuple[float, int, str, float]:
    """(seconds, tokens, decoded text, process CPU seconds) of one bare greedy ``generate`` of ``n`` tokens,
    run in a thread of its own like the pipeline's generate."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(_bare_generate(lm, prompt, n)))
    worker.start()
    worker.join()
    return out[0]


def _bare_generate(lm, prompt: str, n: int) -> tuple[float, int, str, float]:
    import torch

    inputs = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(lm.model.device)
    _sync()
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        out = lm.model.generate(**inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                pad_token_id=lm.tokenizer.pad_token_id)
    _sync()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    new = out[0, inputs["input_ids"].shape[-1]:]
    return elapsed, int(new.shape[-1]), lm.tokenizer.decode(new, skip_special_tokens=False), cpu


def pipeline(lm, prompt: str, n: int, template_text: str) -> dict:
    """One run of the chat tab's pipeline: streamer -> parser -> coalesced rendering.  Returns timings."""
    from playground import backends, streaming
    from playground.session import LiveParse

    live = LiveParse(template_text, prompt, None)
    record, times = [], []
    throttle = streaming.Throttle(streaming.PREVIEW_INTERVAL)
    updates = 0
    first_update = None
    stop = threading.Event()
    t0, c0, own0 = time.perf_counter(), time.process_time(), time.thread_time()
    gen = backends.stream_generate(lm, prompt, max_new_tokens=n, temperature=0, seed=0, stop_event=stop)
    try:
        for view in streaming.stream_views(live, gen, record, times):
            if view.final:
                break
            streaming.draw(view, window=streaming.STREAM_WINDOW, preview=throttle())
            updates += 1
            if first_update is None:
                first_update = time.perf_counter() - t0
    finally:
        gen.close()
    streaming.draw(live.view())  # the final state, drawn in full
    own = time.thread_time() - own0  # this thread: parsing and rendering (waiting for chunks costs no CPU)
    _sync()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    text = "".join(record)
    return {"seconds": elapsed, "cpu_seconds": cpu, "consumer_cpu_seconds": own, "text": text, "chunks": len(record), "updates": updates,
            "first_chunk_s": times[0] if times else None, "first_update_s": first_update,
            "parse_errors": len(live.view().errors), "chars": len(text)}


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.no_spaces:
        sys.modules["spaces"] = None  # `import spaces` now raises ImportError, as when it is not installed
    if args.threads:
        # OpenMP's thread count is per thread: torch.set_num_threads in this thread would not reach the thread
        # that runs generate in the pipeline, so set it for every thread before torch starts
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    from playground import backends

    on_cuda = backends.cuda_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    size = args.size if args.size != "auto" else ("0.5b" if on_cuda else "tiny")
    work = Path(tempfile.mkdtemp(prefix="gpu-smoke-"))
    try:
        if size == "builtin":
            from examples import builtin_model

            folder = builtin_model.MODEL_DIR
        else:
            folder = str(build_model(work / "model", size, args.arch, on_cuda, args.seed))
        lm = backends.load_model(folder)
        if size == "builtin":  # never stop early, so both sides generate exactly N tokens
            lm.model.generation_config.eos_token_id = None
        from playground.session import template_to_text

        template_text = template_to_text(lm.tokenizer.response_template)
        prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": "What is the weather in Paris?"}],
                                                  tokenize=False, add_generation_prompt=True)
        n = args.tokens
        bare_generate(lm, prompt, 8)  # warm-up (kernels, caches)
        bare_ttft = min(bare_generate(lm, prompt, 1)[0] for _ in range(3))
        bare_runs, pipe_runs = [], []
        for _ in range(max(1, args.repeats)):  # alternate, so load changes hit both sides alike
            if on_cuda:
                torch.cuda.reset_peak_memory_stats()
            bare_runs.append(bare_generate(lm, prompt, n))
            pipe_runs.append(pipeline(lm, prompt, n, template_text))
        bare_s, bare_tokens, bare_text, _ = min(bare_runs)
        bare_cpu = min(r[3] for r in bare_runs)
        pipe_cpu = min(r["cpu_seconds"] for r in pipe_runs)
        consumer_cpu = min(r["consumer_cpu_seconds"] for r in pipe_runs)
        pipe = min(pipe_runs, key=lambda r: r["seconds"])
        bare_tps, pipe_tps = bare_tokens / bare_s, n / pipe["seconds"]
        params = sum(p.numel() for p in lm.model.parameters())
        result = {
            "date": time.strftime("%Y-%m-%d"),
            "device": str(lm.model.device),
            "gpu": torch.cuda.get_device_name(0) if on_cuda else None,
            "dtype": str(next(lm.model.parameters()).dtype).replace("torch.", ""),
            "model": size if size != "builtin" else "built-in",
            "architecture": lm.model.config.model_type,
            "parameters": params,
            "torch_threads": torch.get_num_threads(),
            "tokens": n,
            "bare_tokens": bare_tokens,
            "bare_tokens_per_s": round(bare_tps, 1),
            "pipeline_tokens_per_s": round(pipe_tps, 1),
            "overhead_percent": round(100 * (1 - pipe_tps / bare_tps), 1),
            # CPU seconds of the whole process (both threads), fastest run of each side: on a machine shared
            # with other work this is steadier than wall-clock throughput
            "bare_cpu_s": round(bare_cpu, 2),
            "pipeline_cpu_s": round(pipe_cpu, 2),
            "cpu_overhead_percent": round(100 * (pipe_cpu / bare_cpu - 1), 1),
            # the pipeline's own work (parser + rendering, the consumer thread's CPU) per bare generation second:
            # what it takes from generation when both compete for one core
            "consumer_cpu_s": round(consumer_cpu, 3),
            "consumer_share_percent": round(100 * consumer_cpu / bare_s, 1),
            "bare_ttft_ms": round(1000 * bare_ttft, 1),
            "pipeline_first_chunk_ms": round(1000 * pipe["first_chunk_s"], 1) if pipe["first_chunk_s"] else None,
            "pipeline_first_update_ms": round(1000 * pipe["first_update_s"], 1) if pipe["first_update_s"] else None,
            "peak_gpu_memory_mib": round(torch.cuda.max_memory_allocated() / 2**20) if on_cuda else None,
            "pipeline_chunks": pipe["chunks"],
            "pipeline_updates": pipe["updates"],
            # greedy on both sides: the streamed text must be the decoded bare output, token for token
            "same_text_as_bare": pipe["text"] == bare_text,
            "parse_errors": pipe["parse_errors"],
            "spaces_imported": backends.spaces is not None,
            "gpu_decorator_noop": inspect.isgeneratorfunction(backends.stream_generate)
                                  and not hasattr(backends.stream_generate, "zerogpu"),
            "runs": {"bare_s": [round(r[0], 3) for r in bare_runs],
                     "pipeline_s": [round(r["seconds"], 3) for r in pipe_runs]},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        r = result
        print(f"{r['date']} · {r['model']} {r['architecture']} ({r['parameters'] / 1e6:.1f}M params, {r['dtype']}) "
              f"on {r['gpu'] or r['device']} · {r['torch_threads']} torch threads")
        print(f"bare generate : {r['bare_tokens_per_s']:8.1f} tokens/s  ({r['bare_tokens']} tokens)")
        print(f"pipeline      : {r['pipeline_tokens_per_s']:8.1f} tokens/s  ({r['pipeline_chunks']} chunks, "
              f"{r['pipeline_updates']} drawn updates, {r['parse_errors']} parse errors, "
              f"{'same text as bare' if r['same_text_as_bare'] else 'TEXT DIFFERS FROM BARE'})")
        print(f"overhead      : {r['overhead_percent']:.1f} % of bare throughput; CPU time {r['pipeline_cpu_s']} s vs "
              f"{r['bare_cpu_s']} s bare ({r['cpu_overhead_percent']:+.1f} %)")
        print(f"parser+render : {r['consumer_cpu_s']} s CPU in the consumer thread = {r['consumer_share_percent']} % "
              f"of the bare generation time")
        print(f"first token   : bare {r['bare_ttft_ms']} ms · pipeline first chunk {r['pipeline_first_chunk_ms']} ms"
              f" · first drawn update {r['pipeline_first_update_ms']} ms")
        print(f"peak GPU mem  : {r['peak_gpu_memory_mib']} MiB" if r["peak_gpu_memory_mib"] is not None
              else "peak GPU mem  : n/a (CPU)")
        print(f"spaces        : {'installed' if r['spaces_imported'] else 'not installed'}; GPU decorator "
              f"{'is a no-op' if r['gpu_decorator_noop'] else 'WRAPPED stream_generate'}")
    return result


if __name__ == "__main__":
    main()
