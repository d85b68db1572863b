"""Running one output through the engine in one shot or as chunks, capturing errors as data.

Shared by the run checks (`checks`) and the test suites (`suites`): both compare
a one-shot parse with parses of the same text cut into random chunks, the way
a streaming server delivers it (one token, a few tokens, several delimiters at
once with speculative decoding).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

#: Upper bound (about) on the pieces of one random chunking; see `random_chunks`.
MAX_PIECES = 4000

__all__ = ["MAX_PIECES", "Outcome", "random_chunks", "chunkings", "boundaries", "parse_stream", "merged_events"]


@dataclass
class Outcome:
    """The result of parsing one output.

    Attributes:
        chunks: the pieces fed to the parser (one piece for a one-shot parse).
        message: the finalized message, or None if parsing raised.
        error: ``"ExceptionType: message"`` if parsing raised (the engine raises ValueError, KeyError,
            RuntimeError or TimeoutError for bad outputs and templates), else None.
        events: every event (initial, fed, final) in order; those before an error when it raised.
        parser: the `parsing.ResponseParser` used (spans on), for callers that need offsets.
    """

    chunks: list[str]
    message: dict | None = None
    error: str | None = None
    events: list[dict] = field(default_factory=list)
    parser: Any = None

    @property
    def ok(self) -> bool:
        """True if parsing finished without an exception."""
        return self.error is None

    def result(self) -> Any:
        """What to compare across chunkings: the message, or ``{"error": ...}``."""
        return self.message if self.error is None else {"error": self.error}


def boundaries(chunks: list[str]) -> list[int]:
    """The character offsets where `chunks` were cut (without 0 and the end), to reproduce a chunking."""
    out, pos = [], 0
    for c in chunks[:-1]:
        pos += len(c)
        out.append(pos)
    return out


def random_chunks(text: str, rng: random.Random, max_size: int | None = None) -> list[str]:
    """Cut `text` into consecutive non-empty pieces of random sizes in ``1..max_size``.

    `max_size` defaults to a random choice between token-like (1-4 characters) and larger pieces (up to a
    third of the text), so several delimiters can land in one piece. To keep long outputs cheap the sizes are
    raised so that there are at most about `MAX_PIECES` pieces (a 100,000-character output is cut into pieces of
    up to 50 characters). Empty text gives ``[""]``.
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


def chunkings(text: str, count: int, seed: int = 0) -> list[list[str]]:
    """`count` reproducible random chunkings of `text` (the same `seed` gives the same cuts)."""
    rng = random.Random(seed)
    return [random_chunks(text, rng) for _ in range(count)]


def parse_stream(template: Any, prefix: str, chunks: list[str], *, tools: list | None = None,
                 spans: bool = False, recover: bool = False) -> Outcome:
    """Feed `chunks` to a fresh `parsing.ResponseParser` and finalize it; never raises for parse errors.

    Args:
        template: anything `parsing.load_template` takes (compile once and pass the compiled template when
            parsing many outputs).
        prefix: the prompt before generation (``""`` to opt out, as in the engine).
        chunks: the generated text in pieces (``[text]`` for one shot).
        tools: tool schemas for typing tool-call arguments.
        spans: ask the engine for event offsets and delimiter records.
        recover: let the engine report a region that does not parse as a ``region_error`` event and go on.

    Returns:
        an `Outcome`; template errors surface there too (as ``error``), since the template is loaded by the
        parser.
    """
    import parsing

    out = Outcome(chunks=list(chunks))
    try:
        parser = parsing.ResponseParser(template, prefix, tools=tools, spans=spans, recover=recover)
        out.parser = parser
        out.events.extend(parser.initial_events)
        for chunk in chunks:
            out.events.extend(parser.feed(chunk))
        message, final = parser.finalize()
        out.events.extend(final)
        out.message = message
    except (ValueError, KeyError, RuntimeError, TimeoutError, TypeError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


def merged_events(events: list[dict]) -> list[dict]:
    """Events with adjacent ``region_chunk`` events of the same field joined into one and span keys dropped:
    the form in which every chunking of the same text must agree (the spec, section 4)."""
    out: list[dict] = []
    for ev in events:
        ev = {k: v for k, v in ev.items() if k not in ("start", "end")}
        if (ev.get("type") == "region_chunk" and out and out[-1].get("type") == "region_chunk"
                and out[-1].get("field") == ev.get("field")):
            out[-1] = {**out[-1], "text": out[-1]["text"] + ev["text"]}
        else:
            out.append(ev)
    return out
