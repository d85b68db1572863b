"""How the drafter's templates compare with the library's hand-written ones, on the library's transcripts.

For each family and each of its chat templates (``chat_template*.jinja``), `parsing.doctor.draft` drafts a
response template from the chat template alone; every transcript whose prefix that chat template renders is
parsed with the draft (one shot, the transcript's tools) and compared with what the library template gives
for it (`examples.Transcript.outcome`: the recorded ``actual`` where the template language falls short, else
the hand-written expectation). A difference is *better* when the draft gives the hand-written expectation
and the library template does not. Used by ``tests/doctor/test_draft_library.py`` and
``scripts/draft_report.py`` (the README table).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import examples

__all__ = ["TranscriptResult", "TemplateAgreement", "family_agreement", "special_tokens_of"]


@dataclass(frozen=True)
class TranscriptResult:
    """One transcript parsed with the draft: ``got`` and ``library`` are ``{"message": ...}`` or ``{"error": name}``."""

    transcript_id: str
    got: dict
    library: dict
    expected: dict

    @property
    def agrees(self) -> bool:
        return self.got == self.library

    @property
    def better(self) -> bool:
        return not self.agrees and self.got == self.expected and self.library != self.expected


@dataclass
class TemplateAgreement:
    """The draft of one chat template of a family, and its results on the transcripts that template renders."""

    family: str
    chat_template: str
    draft: Any = None
    error: str = ""
    results: list = field(default_factory=list)

    @property
    def agreed(self) -> int:
        return sum(r.agrees for r in self.results)


def special_tokens_of(fam: Any) -> dict:
    """The special tokens a tokenizer of the family would have: its bos/eos map and its added tokens."""
    mapping = dict(fam.conversations.get("special_tokens_map", {}))
    mapping["additional_special_tokens"] = list(fam.special_tokens)
    return mapping


def family_agreement(name: str) -> list[TemplateAgreement]:
    """Draft every chat template of family ``name`` and parse its transcripts with the drafts."""
    import parsing
    from parsing.doctor.draft import DraftError, draft_template

    fam = examples.load_family(name)
    template_of = {p: fam.conversation(p)["chat_template"] for p in fam.prefixes}
    out = []
    for ct_name, source in fam.chat_templates.items():
        row = TemplateAgreement(name, ct_name)
        try:
            row.draft = draft_template(source, special_tokens=special_tokens_of(fam))
        except DraftError as exc:
            row.error = str(exc)
            out.append(row)
            continue
        for t in fam.transcripts:
            if template_of.get(t.prefix_name) != ct_name:
                continue
            try:
                got = {"message": parsing.parse_response(t.output, row.draft.template, prefix=t.prefix,
                                                         tools=t.tools or None)}
            except Exception as exc:  # noqa: BLE001 - an error is an outcome to compare, like the library's
                got = {"error": type(exc).__name__}
            expected = {"message": t.expected} if t.expected is not None else {"error": t.expected_error}
            row.results.append(TranscriptResult(t.id, got, t.outcome, expected))
        out.append(row)
    return out
