"""Stream helpers: cutting an output into chunks, feeding chunks to a parser, comparing event lists.

The one place that defines how a stream is cut for testing and replay, and what "the same events under
every chunking" means (`merged_events`). Used by the doctor's checks and suites, the playground's paste
and side-by-side check, the example library and the tests.

Chunkers (each returns consecutive pieces that join back to the text):

- `fixed_chunks`: pieces of one size (``size=1`` is one character per feed).
- `random_chunks`: random piece sizes from 1 to a bound, like a streaming server (one token, a few tokens,
  several delimiters at once with speculative decoding); bounded piece count for long outputs.
- `random_cuts`: a random number of cuts at random places (anything from one piece to one character per
  piece), optionally with empty pieces: the widest spread, for differential testing.
- `tokenish_chunks`: special-token-like tags, short words, whitespace runs, single symbols.
- `replay_chunks`: special tokens whole, other text in small seeded pieces, as a detokenizing streamer
  emits them.

Feeding: `feed_all` (any parser with ``initial_events``/``feed``/``finalize``, ours or the transformers
reference) and `parse_stream` (ours, errors captured as data in an `Outcome`).

Like the rest of `parsing`, it needs only ``regex`` and the stdlib.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from .parser import ResponseParser
#: Upper bound (about) on the pieces of one random chunking; see `random_chunks`.
MAX_PIECES = 4000

#: The keys an event carries in the spec (section 4), plus ``message``/``raw`` of our ``region_error``.
#: Everything else (``start``/``end`` spans, a consumer's bookkeeping) is dropped before comparing.
EVENT_KEYS = ("type", "field", "text", "dirty", "value", "message", "raw")

__all__ = [
    "EVENT_KEYS", "MAX_PIECES", "Outcome", "boundaries", "chunkings", "feed_all", "fixed_chunks", "merged_events",
    "parse_stream", "random_chunks", "random_cuts", "replay_chunks", "same_events", "tokenish_chunks",
]


# ----------------------------------------------------------------------------------------------- chunkers


def fixed_chunks(text: str, size: int) -> list[str]:
    """`text` in consecutive pieces of `size` characters (the last may be shorter); ``[""]`` for ``""``.

    Raises ValueError if `size` < 1.
    """
    if size < 1:
        raise ValueError("size must be >= 1")
    return [text[i: i + size] for i in range(0, len(text), size)] or [""]


def random_chunks(text: str, rng: random.Random, max_size: int | None = None) -> list[str]:
    """Cut `text` into consecutive non-empty pieces of random sizes in ``1..max_size``.

    `max_size` defaults to a random choice between token-like (1-4 characters) and larger pieces (up to a
    third of the text), so several delimiters can land in one piece. To keep long outputs cheap the sizes are
    raised so that there are at most about `MAX_PIECES` pieces (a 100,000-character output is cut into pieces of
    up to 50 characters). Empty text gives ``[""]``. The same `rng` state gives the same cuts.
    """
    if not text:
        return [""]
    if max_size is None:
        max_size = rng.choice([2, 4, max(1, len(text) // 3)])
    max_size = max(max_size, 2 * -(-len(text) // MAX_PIECES))
    out, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, max(1, max_size))
        out.append(text[pos: pos + size])
        pos += size
    return out


def random_cuts(text: str, rng: random.Random, empty_rate: float = 0.0) -> list[str]:
    """Cut `text` at a random number (0 to ``len(text) - 1``) of distinct random places.

    With `empty_rate` > 0 an empty piece follows each piece with that probability (a parser must accept
    ``feed("")``), and empty text gives 1 to 3 empty pieces; otherwise pieces are non-empty and empty text
    gives ``[""]``. The same `rng` state gives the same cuts.
    """
    n = len(text)
    if n == 0:
        return [""] * rng.randint(1, 3) if empty_rate > 0 else [""]
    k = rng.randint(0, n)
    cuts = sorted(rng.sample(range(1, n), min(k, n - 1))) if n > 1 else []
    out, last = [], 0
    for cut in cuts + [n]:
        out.append(text[last:cut])
        last = cut
        if empty_rate > 0 and rng.random() < empty_rate:
            out.append("")
    return out


_TOKENISH = re.compile(r"<[^<>\s]{1,40}>|\s+|\w{1,6}|[^\w\s]", re.UNICODE)


def tokenish_chunks(text: str) -> list[str]:
    """Split `text` into token-like pieces: tags such as ``<think>`` or ``<|im_end|>`` whole, words of up to 6
    characters, whitespace runs, single symbols (for replaying pasted text as a stream). ``[]`` for ``""``."""
    parts = _TOKENISH.findall(text)
    if "".join(parts) != text:  # defensive: never lose characters
        return [text[i:i + 4] for i in range(0, len(text), 4)]
    return parts


def replay_chunks(text: str, special_tokens: Iterable[str] = (), seed: int = 0, *, max_piece: int = 4) -> list[str]:
    """Cut ``text`` into realistic streaming chunks, as a detokenizing streamer would emit them.

    Special tokens (any string in ``special_tokens``, e.g. ``examples.Family.special_tokens``) are always
    emitted whole, as one chunk each, the way a tokenizer emits one id per special token; the
    longest token wins where two overlap. Other text is cut into pieces of 1 to ``max_piece``
    characters, chosen with ``random.Random(seed)``, so the same seed always gives the same chunks.

    Returns a list of non-empty strings whose concatenation is ``text`` (``[]`` for ``""``).
    Raises ValueError if ``max_piece`` < 1.
    """
    if max_piece < 1:
        raise ValueError("max_piece must be >= 1")
    rng = random.Random(seed)
    tokens = sorted({t for t in special_tokens if t}, key=len, reverse=True)
    chunks: list[str] = []
    pos = 0
    n = len(text)
    plain_start = 0

    def flush_plain(end: int) -> None:
        i = plain_start
        while i < end:
            step = rng.randint(1, max_piece)
            chunks.append(text[i: min(end, i + step)])
            i += step

    while pos < n:
        hit = next((tok for tok in tokens if text.startswith(tok, pos)), None)
        if hit is None:
            pos += 1
            continue
        flush_plain(pos)
        chunks.append(hit)
        pos += len(hit)
        plain_start = pos
    flush_plain(n)
    return chunks


def chunkings(text: str, count: int, seed: int = 0) -> list[list[str]]:
    """`count` reproducible `random_chunks` chunkings of `text` (the same `seed` gives the same cuts)."""
    rng = random.Random(seed)
    return [random_chunks(text, rng) for _ in range(count)]


def boundaries(chunks: list[str]) -> list[int]:
    """The character offsets where `chunks` were cut (without 0 and the end), to reproduce a chunking."""
    out, pos = [], 0
    for c in chunks[:-1]:
        pos += len(c)
        out.append(pos)
    return out


# ----------------------------------------------------------------------------------------------- feeding


def _feed_into(parser: Any, chunks: Iterable[str], events: list) -> dict:
    events.extend(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    events.extend(final)
    return message


def feed_all(parser: Any, chunks: Iterable[str]) -> tuple[dict, list[dict]]:
    """Feed `chunks` to a freshly built `parser` and finalize it.

    `parser`: anything with ``initial_events``, ``feed(str) -> events`` and ``finalize() -> (message,
    events)``: a `parsing.ResponseParser` or transformers' ``chat_parsing.ResponseParser``.

    Returns ``(message, events)`` with every event in order: initial (from the prefix), fed, final.
    Raises whatever the parser raises.
    """
    events: list[dict] = []
    message = _feed_into(parser, chunks, events)
    return message, events


@dataclass
class Outcome:
    """The result of parsing one output with `parse_stream`.

    Attributes:
        chunks: the pieces fed to the parser (one piece for a one-shot parse).
        message: the finalized message, or None if parsing raised.
        error: ``"ExceptionType: message"`` if parsing raised (the parser raises ValueError, KeyError,
            RuntimeError or TimeoutError for bad outputs and templates), else None.
        error_types: the names of the raised exception's class and its bases up to ``Exception``, inclusive
            (``("JSONDecodeError", "ValueError", "Exception")``), for matching an expected error as ``except``
            would; ``()`` when nothing was raised.
        events: every event (initial, fed, final) in order; those before an error when it raised.
        parser: the `parsing.ResponseParser` used, for callers that need offsets (with ``spans=True``).
    """

    chunks: list[str]
    message: dict | None = None
    error: str | None = None
    error_types: tuple[str, ...] = ()
    events: list[dict] = field(default_factory=list)
    parser: Any = None

    @property
    def ok(self) -> bool:
        """True if parsing finished without an exception."""
        return self.error is None

    def result(self) -> Any:
        """What to compare across chunkings: the message, or ``{"error": ...}``."""
        return self.message if self.error is None else {"error": self.error}


def parse_stream(template: Any, prefix: str, chunks: list[str], *, tools: list | None = None,
                 spans: bool = False, recover: bool = False) -> Outcome:
    """Feed `chunks` to a fresh `parsing.ResponseParser` and finalize it; never raises for parse errors.

    Args:
        template: anything `parsing.load_template` takes (compile once and pass the compiled template when
            parsing many outputs).
        prefix: the prompt before generation (``""`` to opt out, as in `parsing.ResponseParser`).
        chunks: the generated text in pieces (``[text]`` for one shot).
        tools: tool schemas for typing tool-call arguments.
        spans: ask the parser for event offsets and delimiter records.
        recover: let the parser report a region that does not parse as a ``region_error`` event and go on.

    Returns:
        an `Outcome`; template errors surface there too (as ``error``), since the template is loaded by the
        parser.
    """
    out = Outcome(chunks=list(chunks))
    try:
        out.parser = ResponseParser(template, prefix, tools=tools, spans=spans, recover=recover)
        out.message = _feed_into(out.parser, chunks, out.events)
    except (ValueError, KeyError, RuntimeError, TimeoutError, TypeError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        out.error_types = tuple(c.__name__ for c in type(exc).__mro__ if c not in (BaseException, object))
    return out


# ----------------------------------------------------------------------------------------------- comparing


def merged_events(events: Iterable[dict]) -> list[dict]:
    """Events in the form every chunking of the same text must agree on (the spec, section 4).

    Each event keeps only its `EVENT_KEYS` (spans and bookkeeping dropped), and adjacent ``region_chunk``
    events with the same ``field`` and the same ``dirty`` are joined into one. Hold-back may split a region's
    text differently, never change its concatenation.

    ``dirty`` must match because merging must not lose information: the spec makes ``dirty`` a property of
    the field's content parser, so in a correct stream adjacent chunks of one field always agree and the
    condition changes nothing; a parser that flips it mid-region would, if joined, have its second flag
    silently overwritten by the first and compare equal to a correct one.
    """
    out: list[dict] = []
    parts: list[str] = []  # texts of the chunks being joined into out[-1] (joined once: linear time)
    for ev in events:
        ev = {k: v for k, v in ev.items() if k in EVENT_KEYS}
        last = out[-1] if out else None
        if (last is not None and ev.get("type") == "region_chunk" and last.get("type") == "region_chunk"
                and last.get("field") == ev.get("field") and last.get("dirty") == ev.get("dirty")):
            parts.append(ev["text"])
            continue
        if len(parts) > 1:
            out[-1]["text"] = "".join(parts)
        parts = [ev.get("text", "")] if ev.get("type") == "region_chunk" else []
        out.append(ev)
    if len(parts) > 1:
        out[-1]["text"] = "".join(parts)
    return out


def same_events(a: Iterable[dict], b: Iterable[dict]) -> bool:
    """Whether two event lists are the same after `merged_events` (the chunking-independent comparison)."""
    return merged_events(a) == merged_events(b)
