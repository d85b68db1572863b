"""Compatibility: would transformers and vLLM's ``response_template`` parser accept a template?

Part of the doctor's lint report (`parsing.doctor.lint.lint` calls `compatibility`). transformers' verdict
comes from its own loader when transformers is imported (or asked for), else from `parsing`, which rejects
exactly what transformers 5.23 rejects, with the same messages; vLLM's from its documented field rule.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any

from ..template import load_template
from .chat_template import REASONING_KEY

__all__ = ["Compatibility", "VLLM_FIELDS", "compatibility"]

#: The only field names vLLM's ``response_template`` parser accepts (the issue's
#: statement of it); ``thinking`` and ``content`` must be plain text there.
VLLM_FIELDS = ("thinking", "content", "tool_calls")
_VLLM_TEXT_FIELDS = ("thinking", "content")


@dataclass(frozen=True)
class Compatibility:
    """Whether one consumer would accept the template.

    Attributes:
        target: ``"transformers"`` or ``"vllm"``.
        accepted: True if the consumer would load and use the template.
        reasons: why not (empty when accepted), one sentence each.
        basis: what the verdict rests on (the installed transformers' own loader, `parsing`, or the rule).
    """

    target: str
    accepted: bool
    reasons: tuple[str, ...] = ()
    basis: str = ""

    def to_dict(self) -> dict:
        """``{"target", "accepted", "reasons": [...], "basis"}``."""
        return {"target": self.target, "accepted": self.accepted, "reasons": list(self.reasons),
                "basis": self.basis}


_PARSING_BASIS = "our parser (`parsing`), which validates exactly like transformers 5.23"
_VLLM_BASIS = "vLLM's rule: only thinking, content (both plain text) and tool_calls"


def _reference_verdict(spec: Any) -> tuple[str, str | None]:
    """``(basis, error or None)`` from the installed transformers' own template loader (imported here: heavy)."""
    import transformers
    from transformers.utils.chat_parsing.response_templates import load_response_template

    basis = f"transformers {transformers.__version__} (its own loader)"
    try:
        load_response_template(copy.deepcopy(spec))
    except Exception as exc:  # noqa: BLE001 - the reference raises ValueError/TypeError/regex errors
        return basis, f"{type(exc).__name__}: {exc}"
    return basis, None


def compatibility(template: Any, *, reference: bool | None = None) -> list[Compatibility]:
    """Say whether transformers and vLLM's ``response_template`` parser would accept `template`.

    Args:
        template: anything `parsing.load_template` takes (a dict, JSON text, a path, a compiled template).
        reference: ask the installed transformers' own loader for the transformers verdict: True (imports
            transformers), False (never), None (default: only if transformers is already imported, so a light
            caller stays light). Otherwise `parsing` decides (it validates exactly like transformers 5.23).

    Returns:
        ``[Compatibility("transformers", ...), Compatibility("vllm", ...)]``, each with the reasons for a
        refusal and its ``basis``. vLLM: the parser accepts only the fields ``thinking``, ``content`` and
        ``tool_calls``, with ``thinking`` and ``content`` plain text (``content: "text"``, no transform, no
        repeats, no content_args), as issue #6 describes it; a template that does not load is refused too.
        Never raises for a bad template.
    """
    spec: Any = None
    load_error = None
    try:
        spec = load_template(template).spec
    except (ValueError, OSError) as exc:  # TemplateError is a ValueError; str() is the reference's text
        load_error = str(exc)
    use_reference = ("transformers" in sys.modules) if reference is None else reference
    verdict = None
    if use_reference:
        raw = spec
        if raw is None and isinstance(template, dict):
            raw = template
        verdict = _reference_verdict(raw) if raw is not None else None
    if verdict is not None:
        basis, ref_error = verdict
        transformers_c = Compatibility("transformers", ref_error is None, (ref_error,) if ref_error else (), basis)
    else:
        transformers_c = Compatibility("transformers", load_error is None,
                                       (load_error,) if load_error else (), _PARSING_BASIS)
    if spec is None:
        return [transformers_c, Compatibility("vllm", False, ("the template does not load: " + load_error,),
                                              _VLLM_BASIS)]
    reasons = []
    for name, fspec in spec["fields"].items():
        if name not in VLLM_FIELDS:
            hint = " (vLLM calls reasoning 'thinking')" if name == REASONING_KEY else ""
            reasons.append(f"field '{name}' is not one of {', '.join(VLLM_FIELDS)}{hint}")
        elif name in _VLLM_TEXT_FIELDS:
            bad = []
            if fspec.get("content", "text") != "text":
                bad.append(f"content {fspec['content']!r}")
            for key in ("transform", "transform_each", "repeats", "join", "content_args"):
                if key in fspec and fspec[key] not in (False, None, {}):
                    bad.append(key)
            if bad:
                reasons.append(f"field '{name}' must be plain text, but it sets {', '.join(bad)}")
    return [transformers_c, Compatibility("vllm", not reasons, tuple(reasons), _VLLM_BASIS)]
