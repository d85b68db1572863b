"""The template library as the page uses it: families for the picker, their templates, example runs."""

from __future__ import annotations

import examples
from parsing.streams import replay_chunks

from .probe_panel import score_label
from .session import Run, template_to_text

SKELETON_CHOICE = "(skeleton)"
TOKENIZER_CHOICE = "(tokenizer's own / best match)"


def list_library_families() -> list[str]:
    """Family names in the example library (`examples.list_families`)."""
    return examples.list_families()


def library_choices(families: list[str]) -> list:
    """Dropdown choices for the library picker: ``(label, family)`` with each family's probe score in the
    label (``"qwen3 — probes 34/38, 4 known limits"``), from ``examples.probe_scores()``."""
    scores = examples.probe_scores()
    return [(score_label(name, scores.get(name)), name) for name in families]


def picker_choices(families: list[str]) -> list:
    """Every choice of the "Load a library template" picker: the skeleton, the tokenizer's own, the library."""
    return [SKELETON_CHOICE, TOKENIZER_CHOICE] + library_choices(families)


def example_run(family: str, transcript: str) -> Run:
    """The Run for one library transcript: its prefix, its recorded chunks (else ``replay_chunks``
    of its output, special tokens whole), the family template and the transcript's tools.

    Raises ValueError when no family or transcript is picked or it is not in the library.
    """
    if not family or not transcript:
        raise ValueError("Pick a family and a transcript first.")
    try:
        fam = examples.load_family(family)
        t = fam.transcript(transcript)
    except KeyError as e:
        raise ValueError(f"Not in the library: {e}") from None
    chunks = t.chunks or replay_chunks(t.output, fam.special_tokens)
    return Run(prefix=t.prefix or "", chunks=tuple(c for c in chunks if c), template_text=template_to_text(fam.template),
               tools=tuple(t.tools) if t.tools else None, source="example")


def example_transcript_names(family: str) -> list[str]:
    """Transcript ids of a library family ([] for no family or one not in the library)."""
    if not family or family not in examples.list_families():
        return []
    return [t.id for t in examples.load_family(family).transcripts]


def library_template_text(family: str) -> str:
    """The JSON text of a library family's template. Raises ValueError for a family not in the library."""
    if family not in examples.list_families():
        raise ValueError(f"Not in the library: {family!r}")
    return template_to_text(examples.load_family(family).template)
