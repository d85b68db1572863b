"""Loading and streaming with a tiny local model (built in a second, no hub)."""

import threading
import time

import pytest

from playground import backends
from playground.session import LiveParse, template_to_text

pytestmark = pytest.mark.slow  # loads models and generates


def test_load_is_cached_and_template_comes_from_tokenizer(tiny_model_dir):
    a = backends.load_model(tiny_model_dir)
    b = backends.load_model(tiny_model_dir)
    assert a is b
    tpl, note = backends.template_for_tokenizer(a.tokenizer)
    assert tpl and "own" in note
    assert "params" in backends.model_label(a)


def test_template_falls_back_to_library_match_or_skeleton(tiny_model_no_template):
    lm = backends.load_model(tiny_model_no_template)
    tpl, note = backends.template_for_tokenizer(lm.tokenizer)
    assert ("library match" in note and tpl) or (tpl is None and "skeleton" in note)


def test_unknown_model_is_a_readable_error(tmp_path):
    with pytest.raises(backends.ModelLoadError, match="Could not load"):
        backends.load_model("no-such-org/no-such-model-xyz")
    with pytest.raises(backends.ModelLoadError, match="Enter a model"):
        backends.load_model("  ")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(backends.ModelLoadError):
        backends.load_model(str(tmp_path))


def test_no_chat_template_is_a_readable_error(tiny_model_dir):
    lm = backends.load_model(tiny_model_dir)
    broken = backends.LoadedModel(name="x", tokenizer=type("T", (), {"chat_template": None})(), model=lm.model)
    with pytest.raises(backends.GenerationError, match="no chat template"):
        backends.render_prompt(broken, [{"role": "user", "content": "hi"}])


def test_stream_generate_keeps_special_tokens_and_feeds_the_parser(tiny_model_dir):
    lm = backends.load_model(tiny_model_dir)
    prompt = backends.render_prompt(lm, [{"role": "user", "content": "hi"}], None, {"enable_thinking": True})
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")
    chunks = list(backends.stream_generate(lm, prompt, max_new_tokens=24, temperature=0, seed=0))
    assert chunks and all(chunks)
    live = LiveParse(template_to_text(lm.tokenizer.response_template), prompt)
    for c in chunks:
        live.feed(c)
    live.finalize()
    view = live.view()
    assert view.text.endswith("".join(chunks))
    assert view.events[0]["phase"] == "prefix"  # <think> opened by the prompt
    # the greedy run is reproducible
    again = list(backends.stream_generate(lm, prompt, max_new_tokens=24, temperature=0, seed=0))
    assert again == chunks


def test_special_tokens_reach_the_stream(tiny_model_dir):
    """Force the model to emit <|im_end|> first: it must arrive as text, not be skipped."""
    lm = backends.load_model(tiny_model_dir)
    tok = lm.tokenizer
    end_id = tok.convert_tokens_to_ids("<|im_end|>")
    import torch

    bias = torch.zeros(len(tok))
    bias[end_id] = 1e4

    class Force:
        def __call__(self, input_ids, scores):
            return scores + bias.to(scores.dtype)

    from transformers import LogitsProcessorList

    orig = lm.model.generate

    def gen(**kw):
        return orig(logits_processor=LogitsProcessorList([Force()]), **kw)

    lm2 = backends.LoadedModel(name=lm.name, tokenizer=tok, model=type("M", (), {"generate": staticmethod(gen),
                                                                               "device": lm.model.device})())
    out = "".join(backends.stream_generate(lm2, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
                                           max_new_tokens=3, temperature=0))
    assert "<|im_end|>" in out


def test_stop_event_really_stops_generate(tiny_model_dir):
    lm = backends.load_model(tiny_model_dir)
    # make sure it would not end by itself: ban the eos token
    prompt = backends.render_prompt(lm, [{"role": "user", "content": "hi"}])
    stop = threading.Event()
    got = []
    t0 = time.perf_counter()
    gen = backends.stream_generate(lm, prompt, max_new_tokens=20000, temperature=1.0, seed=1, stop_event=stop)
    # bias away eos by sampling many tokens; stop after a few chunks
    for c in gen:
        got.append(c)
        if len(got) == 5:
            stop.set()
    elapsed = time.perf_counter() - t0
    assert len(got) < 200
    assert elapsed < 20
    assert backends.active_generations() == 0


def test_closing_the_generator_stops_generate(tiny_model_dir):
    lm = backends.load_model(tiny_model_dir)
    prompt = backends.render_prompt(lm, [{"role": "user", "content": "hi"}])
    gen = backends.stream_generate(lm, prompt, max_new_tokens=20000, temperature=1.0, seed=2)
    next(gen)
    gen.close()  # what Gradio does when it cancels a handler
    deadline = time.time() + 10
    while backends.active_generations() and time.time() < deadline:
        time.sleep(0.05)
    assert backends.active_generations() == 0


def test_concurrent_loads_share_one_model(tmp_path):
    from playground.tinymodel import build_tiny_model

    path = str(build_tiny_model(tmp_path / "m"))
    results = []
    threads = [threading.Thread(target=lambda: results.append(backends.load_model(path))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(r is results[0] for r in results)
    assert path in backends.cached_models()


def test_prompt_switches_system_and_tools_reach_the_chat_template(tiny_model_dir):
    lm = backends.load_model(tiny_model_dir)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    on = backends.render_prompt(lm, msgs, tools, {"enable_thinking": True})
    off = backends.render_prompt(lm, msgs, tools, {"enable_thinking": False})
    assert on.endswith("<|im_start|>assistant\n<think>\n")
    assert off.endswith("<think>\n\n</think>\n\n")
    assert "Be brief." in on and '"get_weather"' in on
    from playground.session import parse_run, Run, template_to_text

    # with thinking off the prefix closes the reasoning region: the answer is content
    view = parse_run(Run(prefix=off, chunks=("Hello", "<|im_end|>"),
                         template_text=template_to_text(lm.tokenizer.response_template)))
    assert view.message == {"role": "assistant", "content": "Hello"}


def test_token_streamer_yields_each_token_and_whole_characters():
    import torch
    from transformers import AutoTokenizer

    from examples import builtin_model

    tok = AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR)
    text = "Ça va? 天気 ☀️ done</think>\n\n<tool_call>{\"a\": 1}</tool_call><|im_end|>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    streamer = backends.make_streamer(tok)
    assert isinstance(streamer, backends.TokenStreamer)
    streamer.put(torch.tensor([[1, 2, 3]]))  # the prompt: skipped
    for i in ids:
        streamer.put(torch.tensor([i]))
    streamer.end()
    chunks = list(streamer)
    assert "".join(chunks) == tok.decode(ids, skip_special_tokens=False) == text
    assert "\ufffd" not in "".join(chunks)  # a character split over tokens comes out once it is whole
    # special tokens and markers kept; a chunk ends at an added token or after whitespace
    assert any(c.endswith("</think>") for c in chunks) and chunks[-1].endswith("<|im_end|>")
    assert all(c[-1].isspace() or c.endswith(">") or " " in c for c in chunks[:-1]), chunks


def test_stream_generate_matches_bare_generate(tiny_model_dir):
    import torch

    lm = backends.load_model(tiny_model_dir)
    prompt = backends.render_prompt(lm, [{"role": "user", "content": "hi"}], None, {"enable_thinking": True})
    chunks = list(backends.stream_generate(lm, prompt, max_new_tokens=40, temperature=0, seed=0))
    inputs = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = lm.model.generate(**inputs, max_new_tokens=40, do_sample=False)
    new = out[0, inputs["input_ids"].shape[-1]:]
    assert "".join(chunks) == lm.tokenizer.decode(new, skip_special_tokens=False)


def test_token_streamer_flushes_an_incomplete_character_at_the_end():
    import torch
    from transformers import AutoTokenizer

    from examples import builtin_model

    tok = AutoTokenizer.from_pretrained(builtin_model.MODEL_DIR)
    lead_byte = tok.convert_tokens_to_ids("â")  # byte-level BPE: the byte 0xE2 alone, the start of "☀"
    ids = tok("ok", add_special_tokens=False)["input_ids"] + [lead_byte]
    streamer = backends.make_streamer(tok)
    for i in [[0]] + [[i] for i in ids]:
        streamer.put(torch.tensor(i))
    streamer.end()
    chunks = list(streamer)
    assert "".join(chunks) == tok.decode(ids, skip_special_tokens=False) == "ok\ufffd"


def test_a_prompt_longer_than_the_model_reads_is_refused_before_generating(tiny_model_dir, monkeypatch):
    """Whatever the page's limits, the model never gets more tokens than its context window: a 3 MB system prompt
    (3,000,018 tokens for a 2,048-token model) took a public server to 22 GB and the OOM killer."""
    lm = backends.load_model(tiny_model_dir)
    window = 64
    monkeypatch.setattr(lm.model.config, "max_position_embeddings", window)  # a small window, a small prompt
    assert backends.context_window(lm) == window
    prompt = backends.render_prompt(lm, [{"role": "user", "content": "hi " * 200}], None, {})
    n = len(lm.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert n > window
    with pytest.raises(backends.GenerationError) as info:
        list(backends.stream_generate(lm, prompt, max_new_tokens=4, temperature=0, seed=0))
    assert f"The prompt is {n:,} tokens; this model reads at most {window:,}" in str(info.value)
    short = backends.render_prompt(lm, [{"role": "user", "content": "hi"}], None, {})
    assert list(backends.stream_generate(lm, short, max_new_tokens=4, temperature=0, seed=0))  # still generates


def test_a_folder_that_is_not_a_model_says_so(tmp_path):
    """Not transformers' guess (a missing sentencepiece or tiktoken): the folder has no config.json."""
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(backends.ModelLoadError) as info:
        backends.load_model(str(tmp_path))
    assert "not a model folder (no config.json" in str(info.value), str(info.value)
    assert "sentencepiece" not in str(info.value)
