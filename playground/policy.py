"""Which models the playground may load, whether they fit, and the bounded cache of loaded ones.

On a public Space the model box is text from anyone: it must not load any server path, download any hub
repository, fill the GPU with copies of one model, or tell a visitor which files exist on the server. So:

* `ModelPolicy.resolve` turns the box's text into one `ResolvedModel` (one cache key per model, whatever its
  spelling) or refuses it with `ModelRefused`, whose message never depends on the server's file system.
* `ModelPolicy.check_size` compares the checkpoint's parameter count and dtypes (safetensors metadata: read
  from the hub before any download, or from a local folder's headers) with free GPU/CPU memory and disk.
* `ModelCache` keeps at most ``max_loaded`` models, least recently used evicted first, one load per key.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

MAX_NAME_CHARS = 200
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
# What a public Space offers besides its default model: small chat models with reasoning and tool calls that fit
# a small GPU, each with a library template.
CURATED_MODELS = ("HuggingFaceTB/SmolLM3-3B", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B")
# Bytes per parameter of each safetensors dtype.
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
               "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1}
LOAD_OVERHEAD = 1.2  # buffers, activations of a short generation, allocator slack


class ModelRefused(ValueError):
    """The model box names a model this server will not load; ``str(err)`` is safe to show to anyone."""


@dataclass(frozen=True)
class ResolvedModel:
    """One model, however it was spelled.

    Attributes:
        key: the cache key (``"hub:<id, case-folded>"`` or ``"folder:<real path>"``).
        source: ``"hub"`` or ``"folder"``.
        location: what ``from_pretrained`` gets (the hub id, or the folder's real path).
        label: what messages show (the hub id, or the name the operator allowed / the user typed).
    """

    key: str
    source: str
    location: str
    label: str


def folder_label(real: str) -> str:
    """How messages name a local folder: relative to the working directory when inside it, else its last two
    path parts (never the absolute path)."""
    rel = os.path.relpath(real)
    if not rel.startswith(".."):
        return rel
    return os.path.join(os.path.basename(os.path.dirname(real)), os.path.basename(real))


def shown(name: str, limit: int = 60) -> str:
    """A user-typed name cut to ``limit`` characters, for messages."""
    name = "".join(ch if ch.isprintable() else "?" for ch in name)
    return name if len(name) <= limit else name[:limit] + "…"


@dataclass
class ModelPolicy:
    """What the model box may load.

    Args:
        allowed: model names the operator allows: hub ids, local folders, or ``NAME=FOLDER`` (the box then
            shows and accepts NAME for that folder; a plain folder inside the working directory is shown by its
            relative path, one outside it by its last two path parts); None allows any hub id or local folder
            (a private machine).
        allow_any_hub: with ``allowed``, also allow any other hub id (never a local folder).
        hide_paths: keep file-system facts out of every message (public deployments).
        check_sizes: refuse models whose weights would not fit in free memory or disk (from metadata).
    """

    allowed: tuple[str, ...] | None = None
    allow_any_hub: bool = False
    hide_paths: bool = False
    check_sizes: bool = True

    def __post_init__(self):
        self._allowed: dict[str, ResolvedModel] = {}
        for entry in self.allowed or ():
            resolved = self._resolve_trusted(entry)
            spellings = [resolved.label, os.path.normpath(resolved.label)]
            if resolved.source == "hub":
                spellings.append(entry.strip())
            else:
                name, sep, folder = entry.strip().partition("=")
                operator = folder.strip() if sep else name  # the operator's spelling of the folder
                if not self.hide_paths:
                    spellings += [entry.strip(), operator, resolved.location]
                elif not os.path.isabs(operator):
                    # Never an absolute path on a public server: answering to it would tell visitors where the
                    # app lives (the page itself always uses the label).
                    spellings.append(operator)
            for spelling in spellings:
                self._allowed.setdefault(spelling, resolved)

    @staticmethod
    def _resolve_trusted(entry: str) -> ResolvedModel:
        """Resolve an entry from the operator (command line): a hub id, a folder, or ``NAME=FOLDER``."""
        entry = entry.strip()
        label, sep, folder = entry.partition("=")
        if sep and os.path.isdir(folder):
            real = os.path.realpath(folder)
            return ResolvedModel(f"folder:{real}", "folder", real, label.strip())
        if os.path.isdir(entry):
            real = os.path.realpath(entry)
            return ResolvedModel(f"folder:{real}", "folder", real, folder_label(real))
        return ResolvedModel(f"hub:{entry.casefold()}", "hub", entry, entry)

    def label_for(self, name: str) -> str:
        """What the model box should show for a model the operator named (e.g. the default model's folder)."""
        try:
            return self.resolve(name).label
        except ModelRefused:
            return self._resolve_trusted(name).label

    def allowed_labels(self) -> list[str]:
        """The allowed models as the operator named them (in order)."""
        return list(dict.fromkeys(r.label for r in self._allowed.values()))

    def resolve(self, name: str | None) -> ResolvedModel:
        """The model the box's text names.

        Raises:
            ModelRefused: empty, too long, not allowed, or (without an allow-list) neither a folder nor a hub id.
                With ``hide_paths`` the message is the same whether or not such a path exists.
        """
        name = (name or "").strip()
        if not name:
            raise ModelRefused("Enter a model id (e.g. org/name) or a local folder.")
        if len(name) > MAX_NAME_CHARS or "\x00" in name:
            raise ModelRefused(f"Model names are at most {MAX_NAME_CHARS} characters, without NUL characters.")
        if self.allowed is not None:
            hit = self._allowed.get(name) or self._allowed.get(os.path.normpath(name))
            if hit is not None:
                return hit
            if self.allow_any_hub and HUB_ID.match(name) and not os.path.isdir(name):
                return ResolvedModel(f"hub:{name.casefold()}", "hub", name, name)
            return self._refuse(name)
        if os.path.isdir(name):
            real = os.path.realpath(name)
            # the label is the name as typed, without its '..' and '.' detours (messages name it)
            return ResolvedModel(f"folder:{real}", "folder", real, os.path.normpath(name))
        if HUB_ID.match(name):
            return ResolvedModel(f"hub:{name.casefold()}", "hub", name, name)
        if self.hide_paths:
            return self._refuse(name)
        raise ModelRefused(f"'{shown(name)}' is neither a local folder nor a hub id (org/name).")

    def _refuse(self, name: str) -> ResolvedModel:
        offered = ", ".join(shown(label, 80) for label in self.allowed_labels()) or "none"
        extra = " or any hub id (org/name)" if self.allow_any_hub else ""
        raise ModelRefused(f"This server does not load '{shown(name)}'. It loads: {offered}{extra}. "
                           "To try any model, run the playground on your own machine: "
                           "python app.py --model ORG/NAME")

    def check_size(self, resolved: ResolvedModel, device: str, *, metadata: dict[str, int] | None = None,
                   free_memory: int | None = None, free_disk: int | None = None) -> int | None:
        """Refuse a model whose weights would not fit; returns the estimated bytes in memory (None: unknown).

        Args:
            resolved: the model.
            device: ``"cuda"`` (weights keep their dtype, ``dtype="auto"``) or ``"cpu"`` (loaded as float32).
            metadata: parameter count per safetensors dtype (default: `parameter_counts`).
            free_memory, free_disk: bytes (default: measured with `free_memory_bytes` / the hub cache's disk).

        Raises:
            ModelRefused: the estimate exceeds free memory (or, for a hub model, free disk); or a hub model's
                size is unknown and it was not explicitly allowed.
        """
        if not self.check_sizes:
            return None
        counts = metadata if metadata is not None else parameter_counts(resolved)
        if counts is None:
            if resolved.source == "hub" and self.allowed is not None and resolved.label not in self._labels():
                raise ModelRefused(f"'{shown(resolved.label)}' has no safetensors metadata on the hub, so its size "
                                   "cannot be checked before downloading it; this server does not load it.")
            return None
        params = sum(counts.values())
        on_disk = sum(n * DTYPE_BYTES.get(dtype.upper(), 4) for dtype, n in counts.items())
        in_memory = int((on_disk if device != "cpu" else params * 4) * LOAD_OVERHEAD)
        free = free_memory if free_memory is not None else free_memory_bytes(device)
        size = f"{params / 1e9:.2f}B parameters" if params >= 1e8 else f"{params / 1e6:.1f}M parameters"
        if free is not None and in_memory > free:
            raise ModelRefused(f"'{shown(resolved.label)}' ({size}) needs about {in_memory / 2**30:.1f} GiB of "
                               f"{'GPU' if device != 'cpu' else 'CPU'} memory, more than the "
                               f"{free / 2**30:.1f} GiB free now. Pick a smaller model.")
        if resolved.source == "hub":
            disk = free_disk if free_disk is not None else _free_disk()
            if disk is not None and on_disk > disk:
                raise ModelRefused(f"'{shown(resolved.label)}' ({size}, {on_disk / 2**30:.1f} GiB to download) does "
                                   "not fit in the disk space left for downloads. Pick a smaller model.")
        return in_memory

    def _labels(self) -> set[str]:
        return set(self.allowed_labels())


def parameter_counts(resolved: ResolvedModel) -> dict[str, int] | None:
    """Parameter count per safetensors dtype (``{"BF16": 3075098624}``), from the hub's safetensors metadata
    (headers only, no weights) or a local folder's files; None when unknown (no safetensors, no network)."""
    try:
        import huggingface_hub as hub

        if resolved.source == "folder":
            meta = hub.get_local_safetensors_metadata(resolved.location)
        else:
            meta = hub.get_safetensors_metadata(resolved.location)
        return dict(meta.parameter_count) or None
    except Exception:  # noqa: BLE001 - unknown size: the caller decides
        return None


def free_memory_bytes(device: str) -> int | None:
    """Free memory on ``device`` (``"cuda"``: the current GPU; else available system memory), None if unknown."""
    try:
        if device != "cpu":
            import torch

            free, _total = torch.cuda.mem_get_info()
            return int(free)
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001
        return None


def _free_disk() -> int | None:
    try:
        from huggingface_hub import constants

        folder = constants.HF_HUB_CACHE
        while folder and not os.path.exists(folder):
            folder = os.path.dirname(folder)
        return shutil.disk_usage(folder or "/").free
    except Exception:  # noqa: BLE001
        return None


class ModelCache:
    """Loaded models by `ResolvedModel.key` (plus the trust-remote-code switch), at most ``max_loaded`` at once.

    `get` loads a missing model with ``loader`` under a per-key lock (one load per model; other models load or
    serve meanwhile), after evicting the least recently used ones so the new one has room. An evicted model stays
    usable by whoever holds it; its memory is freed when they let go.
    """

    def __init__(self, max_loaded: int | None = 2, on_evict: Callable[[Any], None] | None = None):
        self.max_loaded = max_loaded
        self.on_evict = on_evict
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}

    def get(self, key: tuple, loader: Callable[[], Any]) -> Any:
        """The cached value for ``key``, else ``loader()``'s (cached). Exceptions of ``loader`` propagate."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            try:
                self._make_room(1)
                value = loader()
                with self._lock:
                    self._items[key] = value
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)
            self._make_room(0)
            return value

    def trim(self) -> None:
        """Evict least recently used models beyond ``max_loaded`` (after it was lowered)."""
        self._make_room(0)

    def _make_room(self, incoming: int) -> None:
        if self.max_loaded is None:
            return
        evicted = []
        with self._lock:
            while self._items and len(self._items) + incoming > self.max_loaded:
                evicted.append(self._items.popitem(last=False)[1])
        for value in evicted:
            if self.on_evict is not None:
                self.on_evict(value)
        if evicted:
            del evicted
            gc.collect()
            _empty_cuda_cache()

    def keys(self) -> list[tuple]:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def values(self) -> list[Any]:
        """Cached values, least recently used first."""
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        """Drop every cached model."""
        with self._lock:
            self._items.clear()
        gc.collect()
        _empty_cuda_cache()


_CURRENT = ModelPolicy()


def current() -> ModelPolicy:
    """The policy in force (a private machine's by default: any hub id or folder)."""
    return _CURRENT


def configure(rules: ModelPolicy) -> ModelPolicy:
    """Put ``rules`` in force for every later load; returns the previous policy."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, rules
    return previous


def _empty_cuda_cache() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass
