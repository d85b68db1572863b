"""Template library: response templates and real-format transcripts for 25 model families.

Each family lives in ``examples/families/<name>/``:

- ``template.json``: the response template (fields ``reasoning_content``, ``content``,
  ``tool_calls``; ``start_anchor`` matching the family's generation prompt).
- ``family.json``: metadata: ``title``, ``models`` (who emits this format), ``source`` (where the
  format is documented), ``model_types`` (``config.json`` values), ``special_tokens`` (tokens the
  family's vocabulary carries; used by `parsing.streams.replay_chunks` and :func:`best_template_for`) and
  ``markers`` (substrings of the family's chat template, used by :func:`best_template_for`);
  optionally ``not_applicable`` (transcript kind -> why the family has none, e.g. no tool calls).
- ``prefixes.json``: ``{name: prompt text}``: what the family's chat template renders, generation
  prompt included (variants such as ``thinking_off``, ``prefilled_think``, ``multi_turn``,
  ``after_tool_response``).
- ``transcripts.jsonl``: one transcript per line (see :class:`Transcript`).
- ``NOTES.md``: the format, where it comes from, and what the template cannot express.
- ``chat_template*.jinja``: the family's chat template (one file per version whose framing differs,
  named in ``family.json`` under ``chat_templates``), written to render prompts and assistant turns as
  the family's published chat template does.
- ``conversations.json``: for each prefix of ``prefixes.json``, the conversation that renders it:
  ``{"special_tokens_map": {...}, "tools": [...], "prefixes": {name: {"messages": [...],
  "tools": true, "kwargs": {...}, "chat_template": "chat_template.jinja"}}}`` (``tools: true``
  means the family's tool list; ``chat_template`` defaults to ``chat_template.jinja``).

The formats follow what the serving engines' parsers read (vLLM, SGLang, llama.cpp, openai-harmony;
each family's ``NOTES.md`` names its sources). Expected messages were written by hand from those
format descriptions; they are never produced by a parser.

Only the standard library is imported here; nothing in this module needs ``parsing`` or
``transformers`` (a tokenizer is only duck-typed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "FAMILIES_DIR",
    "Family",
    "Transcript",
    "TemplateMatch",
    "DEFAULT_FAMILY",
    "default_template",
    "list_families",
    "load_family",
    "best_template_for",
    "rank_templates_for",
]

FAMILIES_DIR = Path(__file__).resolve().parent / "families"

# The tags a transcript's ``covers`` list may use. The first five are the kinds every family
# gets (where they apply); the rest are the pitfalls real outputs show (examples/README.md, covers tags).
COVER_TAGS = frozenset(
    {
        "plain",
        "reasoning",
        "tool_call",
        "parallel_tool_calls",
        "truncated",
        "split_markers",
        "several_markers_one_chunk",
        "prefilled_think",
        "thinking_off",
        "whitespace_between_blocks",
        "close_in_json_string",
        "stop_token_missing",
        "tool_call_in_reasoning",
        "schema_typed_args",
        "skip_special_tokens",
        "multi_turn",
        "after_tool_response",
        "unsupported",
        "variant",
        # probe classes (parsing.doctor.probe): see PROBE_CLASS_TAGS
        "cut_by_end_of_turn",
        "close_in_value",
        "open_marker_in_text",
        "text_around_calls",
        "repeated_blocks",
        "multibyte",
        "drift",
        "false_positive",
    }
)

#: Probe class (``parsing.doctor.probe.CLASSES``) -> the ``covers`` tags of transcripts that show it on real
#: output. Every class the probe suite applies to a family needs at least one such transcript.
PROBE_CLASS_TAGS = {
    "a": frozenset({"truncated", "cut_by_end_of_turn", "stop_token_missing"}),
    "b": frozenset({"close_in_json_string", "close_in_value"}),
    "c": frozenset({"open_marker_in_text", "tool_call_in_reasoning"}),
    "d": frozenset({"whitespace_between_blocks", "text_around_calls"}),
    "e": frozenset({"parallel_tool_calls", "repeated_blocks"}),
    "f": frozenset({"prefilled_think", "thinking_off", "after_tool_response", "multi_turn"}),
    "g": frozenset({"split_markers", "several_markers_one_chunk", "multibyte"}),
    "h": frozenset({"drift", "variant"}),
    "i": frozenset({"false_positive"}),
}


@dataclass(frozen=True)
class Transcript:
    """One recorded generation of a family, with the message it should parse to.

    Attributes:
        id: unique within the family (``plain``, ``tool_call``, ...).
        title: one line saying what the transcript shows.
        covers: tags from ``COVER_TAGS`` (kinds and pitfalls this transcript exercises).
        prefix_name: key into the family's ``prefixes``; ``prefix`` is the resolved text.
        tools: the tools offered (JSON schemas in the ``apply_chat_template`` format), possibly empty.
        output: the raw generated text, special tokens included (``skip_special_tokens=False``).
        chunks: an optional recorded chunking of ``output`` (joins to ``output``) for pitfalls that
            depend on how text arrives (a delimiter split across chunks, several in one chunk).
        expected: the message the format means, written by hand, or None when ``expected_error``.
        expected_error: exception class name (``"ValueError"``) when the right outcome is an error,
            e.g. a tool call cut off inside its JSON.
        actual: present only where the template language (and so both the reference and our engine)
            produces something else than ``expected``: ``{"message": {...}}`` or
            ``{"error": "ValueError"}``; ``why`` explains the difference.
    """

    id: str
    title: str
    covers: tuple[str, ...]
    prefix_name: str
    prefix: str
    tools: list
    output: str
    chunks: tuple[str, ...] | None
    expected: dict | None
    expected_error: str | None
    actual: dict | None
    why: str

    @property
    def outcome(self) -> dict:
        """What parsing this transcript really yields: ``{"message": ...}`` or ``{"error": name}``.

        That is ``actual`` where recorded, otherwise the hand-written expectation."""
        if self.actual is not None:
            return self.actual
        if self.expected_error is not None:
            return {"error": self.expected_error}
        return {"message": self.expected}


@dataclass(frozen=True)
class Family:
    """A model family: its response template, prompt prefixes, transcripts and notes.

    Attributes:
        name: directory name under ``examples/families`` (e.g. ``"qwen3"``).
        title: human-readable name.
        template: the response template (a dict, as stored in ``template.json``).
        notes: the text of ``NOTES.md``.
        prefixes: prompt prefix name -> text (generation prompt included).
        transcripts: list of :class:`Transcript`.
        meta: the whole ``family.json`` dict.
        special_tokens: the family's special tokens (from ``family.json``).
        chat_templates: chat-template file name -> Jinja source (``chat_template.jinja`` first).
        conversations: the parsed ``conversations.json`` (empty when the family has none).
    """

    name: str
    title: str
    template: dict
    notes: str
    prefixes: dict
    transcripts: list
    meta: dict
    special_tokens: tuple = field(default=())
    chat_templates: dict = field(default_factory=dict)
    conversations: dict = field(default_factory=dict)

    def chat_template(self, name: str = "chat_template.jinja") -> str:
        """The Jinja source of one of the family's chat templates; KeyError if there is none."""
        try:
            return self.chat_templates[name]
        except KeyError:
            raise KeyError(f"{self.name}: no chat template {name!r}; has {sorted(self.chat_templates)}") from None

    def conversation(self, prefix_name: str) -> dict:
        """How prefix ``prefix_name`` is rendered: ``{"chat_template": file name, "messages": [...],
        "tools": [...] or None, "kwargs": {...}, "special_tokens_map": {...}}`` (fresh copies).

        Raises KeyError when ``conversations.json`` has no entry for it."""
        entry = self.conversations.get("prefixes", {}).get(prefix_name)
        if entry is None:
            raise KeyError(f"{self.name}: conversations.json has no conversation for prefix {prefix_name!r}")
        tools = entry.get("tools")
        if tools is True:
            tools = self.conversations.get("tools")
        return json.loads(json.dumps({
            "chat_template": entry.get("chat_template", "chat_template.jinja"),
            "messages": entry["messages"],
            "tools": tools or None,
            "kwargs": entry.get("kwargs", {}),
            "special_tokens_map": self.conversations.get("special_tokens_map", {}),
        }))

    def suite_cases(self) -> list[dict]:
        """The transcripts as test cases in the format of `parsing.doctor.suites` (``python -m parsing check``), a
        starting suite for a template derived from this family's.

        One case dict per transcript, named by its id, with the prompt prefix as text. Its expected outcome is the
        transcript's `Transcript.outcome`: the hand-written message or error, or the recorded ``actual`` one where
        the template language cannot give it (a known limit: the case then checks that the template still gives
        what its NOTES describe). A message is ``expected``; an error is ``expected_error`` (an exception class
        name, e.g. a tool call cut off inside its JSON must raise ``ValueError``).
        """
        cases = []
        for t in self.transcripts:
            case = {"name": t.id, "prefix": t.prefix, "output": t.output}
            if t.tools:
                case["tools"] = t.tools
            outcome = t.outcome
            if "message" in outcome:
                case["expected"] = outcome["message"]
            else:
                case["expected_error"] = outcome["error"]
            cases.append(case)
        return cases

    def transcript(self, transcript_id: str) -> Transcript:
        """Return the transcript with this id; KeyError if there is none."""
        for t in self.transcripts:
            if t.id == transcript_id:
                return t
        raise KeyError(f"{self.name}: no transcript {transcript_id!r}")


def probe_scores() -> dict:
    """Each family's probe results (``python -m parsing probe`` with its prefixes), as stored in
    ``examples/probe_scores.json`` by ``scripts/probe_table.py --update`` (a test keeps it current):
    family -> ``{"passed": int, "run": int, "failed": int, "limits": [probe ids], "classes": {class: status}}``.
    ``{}`` when the file is missing."""
    path = FAMILIES_DIR.parent / "probe_scores.json"
    try:
        return _read_json(path)
    except (OSError, ValueError):
        return {}


def list_families() -> list[str]:
    """Names of all families in the library, sorted (directory names under ``examples/families``)."""
    return sorted(
        p.name for p in FAMILIES_DIR.iterdir() if p.is_dir() and (p / "template.json").is_file()
    )


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _load_family_cached(name: str) -> Family:
    directory = FAMILIES_DIR / name
    meta = _read_json(directory / "family.json")
    template = _read_json(directory / "template.json")
    prefixes = _read_json(directory / "prefixes.json")
    notes = (directory / "NOTES.md").read_text(encoding="utf-8")
    transcripts = []
    seen = set()
    with open(directory / "transcripts.jsonl", encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            raw = json.loads(line)
            where = f"{name}/transcripts.jsonl:{line_no}"
            tid = raw["id"]
            if tid in seen:
                raise ValueError(f"{where}: duplicate transcript id {tid!r}")
            seen.add(tid)
            if raw["prefix"] not in prefixes:
                raise ValueError(f"{where}: unknown prefix {raw['prefix']!r}")
            unknown = set(raw.get("covers", ())) - COVER_TAGS
            if unknown:
                raise ValueError(f"{where}: unknown covers tags {sorted(unknown)}")
            chunks = raw.get("chunks")
            if chunks is not None and "".join(chunks) != raw["output"]:
                raise ValueError(f"{where}: chunks do not join to output")
            if (raw.get("expected") is None) == (raw.get("expected_error") is None):
                raise ValueError(f"{where}: exactly one of expected / expected_error is required")
            transcripts.append(
                Transcript(
                    id=tid,
                    title=raw.get("title", ""),
                    covers=tuple(raw.get("covers", ())),
                    prefix_name=raw["prefix"],
                    prefix=prefixes[raw["prefix"]],
                    tools=raw.get("tools") or [],
                    output=raw["output"],
                    chunks=tuple(chunks) if chunks is not None else None,
                    expected=raw.get("expected"),
                    expected_error=raw.get("expected_error"),
                    actual=raw.get("actual"),
                    why=raw.get("why", ""),
                )
            )
    chat_templates = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(directory.glob("chat_template*.jinja"), key=lambda p: (p.name != "chat_template.jinja", p.name))
    }
    conversations_path = directory / "conversations.json"
    conversations = _read_json(conversations_path) if conversations_path.is_file() else {}
    return Family(
        name=name,
        title=meta.get("title", name),
        template=template,
        notes=notes,
        prefixes=prefixes,
        transcripts=transcripts,
        meta=meta,
        special_tokens=tuple(meta.get("special_tokens", ())),
        chat_templates=chat_templates,
        conversations=conversations,
    )


def load_family(name: str) -> Family:
    """Load one family by name (see :func:`list_families`).

    Returns a :class:`Family`. The template is returned as a fresh dict on every call, so callers
    may edit it. Raises KeyError for an unknown name and ValueError for a malformed transcript file
    (duplicate id, unknown prefix name, chunks that do not join to the output, ...).
    """
    if name not in list_families():
        raise KeyError(f"unknown family {name!r}; known: {', '.join(list_families())}")
    fam = _load_family_cached(name)
    return Family(
        name=fam.name,
        title=fam.title,
        template=json.loads(json.dumps(fam.template)),
        notes=fam.notes,
        prefixes=dict(fam.prefixes),
        transcripts=list(fam.transcripts),
        meta=fam.meta,
        special_tokens=fam.special_tokens,
        chat_templates=dict(fam.chat_templates),
        conversations=fam.conversations,
    )


#: The family whose template is the project's default: ChatML turns, ``<think>`` reasoning and Hermes-style
#: ``<tool_call>`` JSON (Qwen3, SmolLM3, Hermes 3 and the built-in model speak it).
DEFAULT_FAMILY = "qwen3"


def default_template() -> dict:
    """The default response template, a fresh dict: ``DEFAULT_FAMILY``'s ``template.json``.

    The one source for every ChatML default: the playground's skeleton, the tiny test model, the built-in
    model and the benchmarks take theirs from here. It passes the project's lint without a warning
    (``content`` repeats and joins, so text after a tool call cannot overwrite the answer).
    """
    return load_family(DEFAULT_FAMILY).template


def literal_chatml_template() -> dict:
    """The ChatML template with literal delimiters only, a fresh dict: ``<think>``/``</think>`` reasoning,
    repeated Hermes ``<tool_call>`` JSON regions (transformed to ``{"type": "function", "function": ...}``) and
    content up to ``<|im_end|>``.

    Not a default (it lacks the library's hardening against real outputs): the speed baseline of the
    benchmarks ("literal-only") and the fixture of tests that assert what plain tags do (delimiter records,
    held bytes, one event per token-sized chunk).
    """
    return {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                           "transform": {"type": "function", "function": "{content}"}},
            "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
        },
    }


# ---------------------------------------------------------------------------------------------
# Picking a template for a tokenizer


@dataclass(frozen=True)
class TemplateMatch:
    """Result of :func:`best_template_for`.

    Attributes:
        family: the family name, or None when nothing in the tokenizer points at any family.
        confidence: 0..1. 1.0 means every signature of the family was found (model type, all its
            special tokens, all its chat-template markers) and no other family explains the
            tokenizer as well; it drops with missing evidence and when a rival scores close.
        reasons: human-readable evidence, e.g. ``"special token <think> in vocabulary"``.
        score: the raw evidence score used for ranking.
    """

    family: str | None
    confidence: float
    reasons: tuple = ()
    score: float = 0.0

    @property
    def template(self) -> dict | None:
        """The matched family's response template (a fresh dict), or None."""
        return load_family(self.family).template if self.family else None


# Evidence weights: a model type names an architecture (a strong but not exclusive hint: Hermes 3
# and Llama 3.1 are both "llama"); each special token and each chat-template marker is weaker
# alone but decisive together.
_W_MODEL_TYPE = 3.0
_W_TOKEN = 1.0
_W_MARKER = 1.0
# A missing signature counts against a family, so that a superset family (Qwen3 = Hermes +
# <think>) does not beat the exact one on a tokenizer that lacks the extra tokens.
_MISSING_PENALTY = 0.5


def _tokenizer_evidence(tokenizer: Any, model_type: str | None) -> tuple[set, str, str | None]:
    vocab: set = set()
    if tokenizer is not None:
        get_vocab = getattr(tokenizer, "get_vocab", None)
        if callable(get_vocab):
            vocab.update(get_vocab().keys())
        added = getattr(tokenizer, "added_tokens_decoder", None)
        if isinstance(added, dict):
            vocab.update(str(t) for t in added.values())
        for tok in getattr(tokenizer, "all_special_tokens", None) or ():
            vocab.add(str(tok))
    chat_template = getattr(tokenizer, "chat_template", None) if tokenizer is not None else None
    if isinstance(chat_template, dict):
        chat_template = "\n".join(str(v) for v in chat_template.values())
    elif isinstance(chat_template, list):
        chat_template = "\n".join(str(v.get("template", "")) for v in chat_template if isinstance(v, dict))
    if model_type is None and tokenizer is not None:
        model_type = getattr(tokenizer, "model_type", None)
        if model_type is None:
            path = getattr(tokenizer, "name_or_path", None)
            config = Path(path) / "config.json" if path else None
            if config is not None and config.is_file():
                try:
                    model_type = _read_json(config).get("model_type")
                except (OSError, ValueError):
                    model_type = None
    return vocab, chat_template or "", model_type


def rank_templates_for(tokenizer: Any = None, *, model_type: str | None = None) -> list[TemplateMatch]:
    """Score every family against a tokenizer; best first. See :func:`best_template_for`.

    Returns one :class:`TemplateMatch` per family with any positive evidence (possibly empty).
    """
    vocab, chat_template, mtype = _tokenizer_evidence(tokenizer, model_type)
    rows = []
    for name in list_families():
        meta = _load_family_cached(name).meta
        got = 0.0
        possible = 0.0
        missing = 0.0
        reasons = []
        types = meta.get("model_types", [])
        if types:
            possible += _W_MODEL_TYPE
            if mtype is not None and mtype in types:
                got += _W_MODEL_TYPE
                reasons.append(f"model_type {mtype!r}")
        for tok in meta.get("special_tokens", []):
            possible += _W_TOKEN
            if tok in vocab:
                got += _W_TOKEN
                reasons.append(f"special token {tok} in vocabulary")
            elif vocab:  # no vocabulary at all (no tokenizer) is no evidence either way
                missing += _W_TOKEN
        for marker in meta.get("markers", []):
            possible += _W_MARKER
            if chat_template and marker in chat_template:
                got += _W_MARKER
                reasons.append(f"chat template contains {marker!r}")
            elif chat_template:
                missing += _W_MARKER
        if got <= 0:
            continue
        score = got - _MISSING_PENALTY * missing
        rows.append((score, got / possible if possible else 0.0, name, tuple(reasons)))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    out = []
    for i, (score, coverage, name, reasons) in enumerate(rows):
        rival = rows[1][0] if i == 0 and len(rows) > 1 else (rows[0][0] if i > 0 else None)
        if rival is None or score <= 0:
            separation = 1.0 if score > 0 else 0.0
        else:
            # 1.0 once the lead is at least two pieces of evidence; 0.5 on a tie.
            separation = max(0.0, min(1.0, 0.5 + (score - rival) / 4.0))
        confidence = round(max(0.0, min(1.0, coverage * separation)), 3)
        out.append(TemplateMatch(family=name, confidence=confidence, reasons=reasons, score=score))
    return out


def best_template_for(tokenizer: Any = None, *, model_type: str | None = None) -> TemplateMatch:
    """Pick the library family whose response template fits a tokenizer best.

    Evidence, from strongest to weakest:

    - the model type: ``model_type=`` if given, else ``tokenizer.model_type`` if set, else the
      ``model_type`` of a ``config.json`` next to the tokenizer (``tokenizer.name_or_path``);
    - the family's special tokens present in the vocabulary (``get_vocab()``,
      ``added_tokens_decoder``, ``all_special_tokens``);
    - the family's markers found in the text of ``tokenizer.chat_template`` (a string, or a dict /
      list of named templates).

    Families share tokens (ChatML is used by Hermes, Qwen3, SmolLM3, ERNIE...), so a family is also
    penalised for each of its signatures the tokenizer lacks; the most specific family that is fully
    present wins. ``tokenizer`` may be any object with some of those attributes (or None when only
    ``model_type`` is known).

    Returns a :class:`TemplateMatch`; ``family`` is None and ``confidence`` 0.0 when nothing matched.
    """
    ranked = rank_templates_for(tokenizer, model_type=model_type)
    if not ranked or ranked[0].score <= 0:
        reasons = ("no model type, special token or chat-template marker of any family found",)
        return TemplateMatch(family=None, confidence=0.0, reasons=reasons, score=0.0)
    return ranked[0]

