"""Streaming one output through either parser (ours or the transformers reference) in the chunkings the library
tests use: whole, one character per chunk, and a few tokenizer-like replays that cut special tokens apart."""

from __future__ import annotations

from parsing.streams import replay_chunks


def stream_message(module, template, prefix, chunks) -> dict:
    """The message ``module.ResponseParser`` (``parsing`` or ``transformers.utils.chat_parsing``) gives for
    ``chunks`` fed one by one after ``prefix``."""
    parser = module.ResponseParser(template, prefix=prefix)
    for chunk in chunks:
        parser.feed(chunk)
    return parser.finalize()[0]


def chunkings(output: str, special_tokens):
    """``(label, chunks)`` pairs: the whole output, one character per chunk, and three seeded replays."""
    yield "one chunk", [output]
    yield "one char per chunk", list(output)
    for seed in range(3):
        yield f"replay seed {seed}", replay_chunks(output, special_tokens, seed)
