"""Model loading (a shared cache guarded by locks) and streaming generation.

Loaded ``(tokenizer, model)`` pairs are shared by all sessions; nothing here
holds per-user data.  Generation runs ``model.generate`` in a thread feeding a
streamer that yields each new token's text with special tokens kept (:class:`TokenStreamer`); a
``StoppingCriteria`` reads a ``threading.Event`` that the caller (Stop button)
or the generator's ``finally`` sets, so ``generate`` really stops.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import examples
from examples import builtin_model

from . import policy

try:  # ZeroGPU on Spaces (the `spaces` package exists only there); elsewhere a plain function
    import spaces  # type: ignore

    _GPU = spaces.GPU(duration=120)
except ImportError:
    spaces = None

    def _GPU(fn):
        return fn


HUB_DEFAULT_GPU = "HuggingFaceTB/SmolLM3-3B"


class ModelLoadError(RuntimeError):
    """A model could not be loaded; ``str(err)`` is a readable message for the UI."""


class GenerationError(RuntimeError):
    """Generation failed; ``str(err)`` is a readable message for the UI."""


@dataclass
class LoadedModel:
    """A loaded model: ``name`` (the policy's label for it), ``tokenizer``, ``model``, ``device`` (str),
    ``load_seconds`` (of its first load)."""

    name: str
    tokenizer: Any
    model: Any
    device: str = "cpu"
    load_seconds: float = 0.0
    trust_remote_code: bool = False
    info: dict = field(default_factory=dict)


# Loaded models shared by all sessions: one entry per resolved model (and trust-remote-code switch), at most
# `set_max_loaded(n)` of them, least recently used evicted first.
_CACHE = policy.ModelCache(max_loaded=None)
_ACTIVE = 0
_ACTIVE_LOCK = threading.Lock()


def cuda_available() -> bool:
    """True when torch sees a CUDA device."""
    import torch  # heavy: only when asked

    return bool(torch.cuda.is_available())


def builtin_model_dir() -> str | None:
    """The built-in model folder (examples.builtin_model) when its files are there, else None."""
    return str(builtin_model.MODEL_DIR) if builtin_model.available() else None


def default_model() -> str:
    """The model to load when none is given: a hub model on CUDA, else the built-in one, else a tiny local one."""
    if cuda_available():
        return HUB_DEFAULT_GPU
    found = builtin_model_dir()
    if found:
        return found
    from .tinymodel import default_tiny_model_dir

    return str(default_tiny_model_dir())


def _readable_load_error(model: policy.ResolvedModel, e: BaseException, hide_paths: bool) -> str:
    name = policy.shown(model.label)
    text = f"{type(e).__name__}: {e}"
    low = text.lower()
    if isinstance(e, MemoryError) or "out of memory" in low:
        return f"Out of memory while loading '{name}'. Try a smaller model."
    if "trust_remote_code" in low:
        return f"'{name}' needs custom code; start the app with --trust-remote-code if you trust it."
    if model.source == "folder" and not os.path.isfile(os.path.join(model.location, "config.json")):
        # transformers then complains about the tokenizer backend (sentencepiece, tiktoken): not the cause
        return (f"Could not load '{name}': it is a folder but not a model folder (no config.json; a model folder "
                "holds config.json, the weights and the tokenizer files).")
    if hide_paths:  # exception texts name cache folders and files: say nothing about them
        return (f"Could not load '{name}' (unknown id, private or gated repository, no network, or files "
                "missing).")
    if model.source == "hub" and any(k in low for k in ("offline", "connect", "resolve", "not a valid model",
                                                        "repository not found", "does not appear", "hub",
                                                        "couldn't", "can't load", "not found", "no such")):
        return (f"Could not load '{name}': it is not a local folder and it could not be fetched from the "
                f"Hugging Face Hub (unknown id, private repo, or no network). Details: {text[:300]}")
    return f"Could not load '{name}': {text[:500]}"


def load_model(name: str, trust_remote_code: bool = False) -> LoadedModel:
    """Load (or fetch from the shared cache) a tokenizer and causal LM by hub id or local folder.

    The name goes through the model policy first (`playground.policy.current()`: allow-list, one cache entry
    per resolved model, size check from metadata before any download). On CUDA: ``dtype="auto",
    device_map="auto"``; on CPU: float32.  Raises :class:`ModelLoadError` with a readable message for any
    failure or refusal.
    """
    rules = policy.current()
    try:
        model = rules.resolve(name)
    except policy.ModelRefused as e:
        raise ModelLoadError(str(e)) from None
    lm = _CACHE.get((model.key, bool(trust_remote_code)), lambda: _load(model, trust_remote_code, rules))
    # The cached entry keeps the first spelling; each caller sees the model's label for the name it asked for
    # (tokenizer and model shared).
    return lm if lm.name == model.label else dataclasses.replace(lm, name=model.label)


def is_loaded(name: str, trust_remote_code: bool = False) -> bool:
    """Whether `load_model` would take ``name``'s model from the shared cache (False for a name it refuses)."""
    try:
        key = policy.current().resolve(name).key
    except policy.ModelRefused:
        return False
    return (key, bool(trust_remote_code)) in _CACHE.keys()


def _load(model: policy.ResolvedModel, trust_remote_code: bool, rules: policy.ModelPolicy) -> LoadedModel:
    t0 = time.perf_counter()
    on_gpu = cuda_available()
    try:
        rules.check_size(model, "cuda" if on_gpu else "cpu")
    except policy.ModelRefused as e:
        raise ModelLoadError(str(e)) from None
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model.location, trust_remote_code=trust_remote_code)
        if on_gpu:
            lm_model = AutoModelForCausalLM.from_pretrained(model.location, dtype="auto", device_map="auto",
                                                            trust_remote_code=trust_remote_code)
        else:
            lm_model = AutoModelForCausalLM.from_pretrained(model.location, dtype=torch.float32,
                                                            trust_remote_code=trust_remote_code)
        lm_model.eval()
    except BaseException as e:  # noqa: BLE001 - includes OOM
        if isinstance(e, KeyboardInterrupt):
            raise
        gc.collect()
        raise ModelLoadError(_readable_load_error(model, e, rules.hide_paths)) from None
    return LoadedModel(name=model.label, tokenizer=tok, model=lm_model,
                       device=str(getattr(lm_model, "device", "cpu")), load_seconds=time.perf_counter() - t0,
                       trust_remote_code=trust_remote_code,
                       info={"parameters": sum(p.numel() for p in lm_model.parameters()), "key": model.key,
                             "source": model.source})


def cached_models() -> list[str]:
    """Names (as shown) of the models in the shared cache, least recently used first."""
    return [lm.name for lm in _CACHE.values()]


def set_max_loaded(n: int | None) -> None:
    """Keep at most ``n`` models loaded (None: no limit); evicts the least recently used beyond it."""
    _CACHE.max_loaded = n
    _CACHE.trim()


def render_prompt(lm: LoadedModel, messages: list[dict], tools: list | None = None,
                  template_kwargs: dict | None = None) -> str:
    """The prompt text: ``apply_chat_template(messages, tools=..., add_generation_prompt=True, **template_kwargs)``.

    Raises :class:`GenerationError` when the tokenizer has no chat template or rendering fails.
    """
    tok = lm.tokenizer
    if not getattr(tok, "chat_template", None):
        raise GenerationError(f"'{lm.name}' has no chat template, so it cannot chat. Use Paste mode, "
                              "or load a chat model.")
    try:
        return tok.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=True,
                                       **(template_kwargs or {}))
    except Exception as e:  # noqa: BLE001
        raise GenerationError(f"The chat template failed to render: {type(e).__name__}: {e}") from None


def active_generations() -> int:
    """How many ``generate`` threads are running right now (for tests and the status line)."""
    return _ACTIVE


class _EventStop:
    """StoppingCriteria that stops every sequence once ``event`` is set."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device)


class TokenStreamer:
    """A ``generate`` streamer yielding the new text word by word, special tokens kept.

    Decodes with the tokenizers library's incremental ``DecodeStream``: constant work per token (a token
    that ends inside a multi-byte character yields nothing until the character is complete; ``end()`` flushes
    an incomplete one), where
    ``TextIteratorStreamer`` decodes its whole pending word again at every token (0.2 ms a token for the
    built-in model, 200 times more).  A chunk ends after whitespace, at an added token (so a delimiter such
    as ``</think>`` or ``<|im_end|>`` arrives as soon as it is generated) or after ``MAX_HELD`` tokens.
    The joined chunks equal ``tokenizer.decode(new_ids,
    skip_special_tokens=False)``.  The first ``put`` (the prompt) is skipped.  Iterate for the chunks (str);
    ``end()`` ends the iteration; waiting longer than ``timeout`` seconds for a token raises ``queue.Empty``.
    ``backend``: a ``tokenizers.Tokenizer`` (a fast tokenizer's ``backend_tokenizer``).
    """

    MAX_HELD = 8  # tokens held at most while a word is completed

    def __init__(self, backend, timeout: float = 300):
        from tokenizers.decoders import DecodeStream

        self._backend, self._decode, self.timeout = backend, DecodeStream(skip_special_tokens=False), timeout
        self._queue: queue.Queue = queue.Queue()
        self._prompt_seen = False
        self._pending: list[int] = []  # ids since the last text (the end of an incomplete character)
        self._held: list[str] = []  # text of the word being completed
        self._added = {int(i) for i in backend.get_added_tokens_decoder()}

    def put(self, value) -> None:
        """Called by ``generate`` with the prompt ids, then with each new token id (batch of one)."""
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for token_id in value.reshape(-1).tolist():
            text = self._decode.step(self._backend, int(token_id))
            if not text:
                self._pending.append(int(token_id))
                continue
            self._pending.clear()
            self._held.append(text)
            # a chunk per word (as TextIteratorStreamer), an added token (delimiters) on its own, and never
            # more than MAX_HELD tokens held: fewer, larger chunks cost the parser and the page less
            if int(token_id) in self._added or len(self._held) >= self.MAX_HELD or text[-1:].isspace() \
                    or " " in text:
                self._queue.put("".join(self._held))
                self._held.clear()

    def end(self) -> None:
        """End of generation: flush tokens still waiting for the rest of a character (shown as U+FFFD, as
        ``decode`` shows them), then end the iteration."""
        if self._pending:
            self._held.append(self._backend.decode(self._pending, skip_special_tokens=False))
            self._pending.clear()
        if self._held:
            self._queue.put("".join(self._held))
            self._held.clear()
        self._queue.put(None)

    def __iter__(self) -> Iterator[str]:
        while True:
            item = self._queue.get(timeout=self.timeout)
            if item is None:
                return
            yield item


def make_streamer(tokenizer, timeout: float = 300):
    """A :class:`TokenStreamer` for a fast tokenizer, else ``TextIteratorStreamer(skip_prompt=True,
    skip_special_tokens=False)`` (slow tokenizers have no incremental decoder)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        from tokenizers import Tokenizer

        if isinstance(backend, Tokenizer):
            return TokenStreamer(backend, timeout)
    except ImportError:
        pass
    from transformers import TextIteratorStreamer

    return TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=False, timeout=timeout)


def context_window(lm: LoadedModel) -> int | None:
    """The most tokens ``lm``'s model reads at once: its config's ``max_position_embeddings`` (or the
    tokenizer's ``model_max_length`` when the config has none and it is a real number); None when unknown."""
    config = getattr(getattr(lm, "model", None), "config", None)
    for source in (getattr(config, "get_text_config", lambda: config)(), config):
        n = getattr(source, "max_position_embeddings", None)
        if isinstance(n, int) and n > 0:
            return n
    n = getattr(lm.tokenizer, "model_max_length", None)
    return n if isinstance(n, int) and 0 < n < 10_000_000 else None  # transformers' "no limit" is ~1e30


@_GPU
def stream_generate(lm: LoadedModel, prompt: str, *, max_new_tokens: int = 256, temperature: float = 0.7,
                    top_p: float = 0.95, seed: int | None = None,
                    stop_event: threading.Event | None = None) -> Iterator[str]:
    """Generate from ``prompt`` and yield the decoded text chunks as they arrive (empty ones skipped).

    Special tokens are kept.  ``temperature`` <= 0 means greedy.  Setting
    ``stop_event`` (or closing the generator) stops ``generate`` at the next
    token; the generator's ``finally`` always sets it and joins the thread.
    Raises :class:`GenerationError` if ``generate`` fails.
    """
    global _ACTIVE
    import torch
    from transformers import StoppingCriteriaList, set_seed

    tok, model = lm.tokenizer, lm.model
    stop_event = stop_event or threading.Event()
    inputs = tok(prompt, return_tensors="pt", add_special_tokens=False)
    window = context_window(lm)
    n_prompt = int(inputs["input_ids"].shape[-1])
    if window is not None and n_prompt > window:
        # A 3 MB system prompt (3,000,018 tokens for a 2,048-token model) took the server to 22 GB and the OOM killer.
        raise GenerationError(f"The prompt is {n_prompt:,} tokens; this model reads at most {window:,}. Shorten the "
                              "conversation or the system prompt, or clear the chat.")
    inputs = inputs.to(model.device)
    streamer = make_streamer(tok)
    kwargs = dict(**inputs, streamer=streamer, max_new_tokens=int(max_new_tokens),
                  stopping_criteria=StoppingCriteriaList([_EventStop(stop_event)]))
    if temperature and temperature > 0:
        kwargs.update(do_sample=True, temperature=float(temperature), top_p=float(top_p))
    else:
        kwargs.update(do_sample=False)
    if getattr(tok, "pad_token_id", None) is None and getattr(tok, "eos_token_id", None) is not None:
        kwargs["pad_token_id"] = tok.eos_token_id
    errors: list[BaseException] = []

    def target():
        global _ACTIVE
        with _ACTIVE_LOCK:
            _ACTIVE += 1
        try:
            if seed is not None and int(seed) >= 0:
                set_seed(int(seed))
            with torch.inference_mode():
                model.generate(**kwargs)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            streamer.end()
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE -= 1

    thread = threading.Thread(target=target, name="generate", daemon=True)
    thread.start()
    try:
        for text in streamer:
            if text:
                yield text
        if errors:
            e = errors[0]
            msg = "out of memory" if "out of memory" in str(e).lower() else f"{type(e).__name__}: {e}"
            raise GenerationError(f"Generation failed: {msg}")
    finally:
        stop_event.set()
        thread.join(timeout=60)


def template_for_tokenizer(tokenizer) -> tuple[dict | None, str]:
    """The best starting template for a tokenizer and where it came from.

    Returns ``(template dict, note)``: the tokenizer's own ``response_template``;
    else the example library's best match (``examples.best_template_for``);
    else ``(None, note)`` meaning "use the skeleton".
    """
    own = getattr(tokenizer, "response_template", None)
    if isinstance(own, dict) and own:
        return own, "the tokenizer's own response_template"
    match = examples.best_template_for(tokenizer)
    if match.family is not None:
        return match.template, f"library match: {match.family}, confidence {match.confidence:.2f}"
    return None, "skeleton (no template on the tokenizer and no library match)"


def model_label(lm: LoadedModel, already_loaded: bool = False) -> str:
    """One-line description of a loaded model for the status bar; ``already_loaded``: it came from the shared
    cache (said so, instead of its first load's time)."""
    n = lm.info.get("parameters", 0)
    size = f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"
    base = os.path.basename(lm.name.rstrip("/")) if lm.info.get("source") == "folder" else lm.name
    when = "already loaded" if already_loaded else f"loaded in {lm.load_seconds:.1f}s"
    return f"{policy.shown(base)} · {size} params · {lm.device} · {when}"
