"""Compatibility: would transformers and vLLM's ``response_template`` parser accept a template?

Part of the doctor's lint report (`parsing.doctor.lint.lint` calls `compatibility`). transformers' verdict
comes from its own loader when transformers is imported (or asked for), else from `parsing`, which rejects
exactly what transformers 5.23 rejects, with the same messages; vLLM's from the checks its ``response_template``
parser makes when it loads a template (read from vLLM's source, cited at `VLLM_FIELDS`).
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from typing import Any

from ..template import load_template
from .chat_template import REASONING_KEY

__all__ = ["Compatibility", "VLLM_FIELDS", "VLLM_REASONING_KEY", "compatibility"]

# vLLM's rule, as its source states it: vllm/parser/response_template.py (vllm-project/vllm, commit 4ee83d19),
# `validate_response_template_for_serving`, run when `--reasoning-parser/--tool-call-parser response_template`
# loads the tokenizer's template: the template must load (vllm/parser/chat_parsing/response_templates.py, its copy
# of transformers' loader); its fields must be among `_SUPPORTED_FIELDS` = thinking, content, tool_calls (vLLM
# streams `thinking` as the reasoning delta: THINKING_FIELD); `defaults` may only set `role`; `thinking` and
# `content` must have `content` "text", no `transform` and no `join` (`repeats` and `content_args` are allowed).
# The tool-call field must give {"function": {"name", "arguments"}} values (response_template_event_engine.py
# drops others at run time, so that is no load check).
#: The only field names vLLM's ``response_template`` parser accepts; it reads reasoning from ``thinking``.
VLLM_FIELDS = ("thinking", "content", "tool_calls")
VLLM_REASONING_KEY = "thinking"
_VLLM_TEXT_FIELDS = ("thinking", "content")
_VLLM_TEXT_FORBIDS = ("transform", "join")  # on thinking/content; a non-text `content` is refused too
_VLLM_SOURCE = "vllm/parser/response_template.py"


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
_VLLM_BASIS = (f"vLLM's response_template parser ({_VLLM_SOURCE}): fields thinking, content, tool_calls only; "
               "thinking/content text without transform or join; defaults only role")


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
        refusal and its ``basis``. vLLM (its ``response_template`` parser's load checks, see the comment at
        `VLLM_FIELDS`): only the fields ``thinking`` (its reasoning), ``content`` and ``tool_calls``; ``defaults``
        only ``role``; ``thinking`` and ``content`` with ``content: "text"``, no ``transform`` and no ``join``
        (``repeats`` is allowed); a template that does not load is refused too. Never raises for a bad template.
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
            hint = (f" (vLLM reads reasoning from a field named '{VLLM_REASONING_KEY}'; the message key is then "
                    f"'{VLLM_REASONING_KEY}' for transformers too)") if name == REASONING_KEY else ""
            reasons.append(f"field '{name}' is not one of {', '.join(VLLM_FIELDS)}{hint}")
        elif name in _VLLM_TEXT_FIELDS:
            bad = []
            if fspec.get("content", "text") != "text":
                bad.append(f"content {fspec['content']!r}")
            bad += [key for key in _VLLM_TEXT_FORBIDS if fspec.get(key) is not None]
            if bad:
                hint = (" (vLLM joins the streamed pieces itself: keep repeats, drop join; transformers then returns "
                        "a list of pieces)") if bad == ["join"] else ""
                reasons.append(f"field '{name}' must be plain text without transform or join, but it sets "
                               f"{', '.join(bad)}{hint}")
    extra_defaults = sorted(set(spec.get("defaults") or {}) - {"role"})
    if extra_defaults:
        reasons.append(f"defaults may only set role, not {', '.join(extra_defaults)}")
    return [transformers_c, Compatibility("vllm", not reasons, tuple(reasons), _VLLM_BASIS)]
