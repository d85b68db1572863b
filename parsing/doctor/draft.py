"""Draft a response template from a chat template, by differential rendering.

A model's chat template already says, in code, how an assistant turn is written into the conversation:
where the turn starts, how reasoning is wrapped, how a tool call frames its name and arguments, how the
turn ends. `draft_template` reads that off the chat template the way llama.cpp's auto-parser does
(``docs/autoparser.md`` there): it renders pairs of conversations that differ in one respect (a
reasoning block or not, a tool call or not, one call or two, thinking on or off) and compares the
renderings; every marker in the draft is a difference between two renderings, recorded as evidence.
The only guessing is in the tool-call arguments, where each candidate reading (a JSON object with the
name inside, a name followed by JSON arguments, key/value tags, unquoted-key objects, Python calls) is
tried and kept only if the drafted template parses the rendered calls back to the calls that were
rendered. Nothing in this module knows any model family.

Rendering goes through transformers' own sandboxed chat-template machinery (`parsing.doctor.chat_render`,
as ``apply_chat_template`` does), under a time budget; nothing else is executed.

The draft is checked before it is returned: every sample turn (content only; reasoning and content; one
call; two calls; content and a call; reasoning and a call) is rendered, cut where generation would stop,
and parsed with the drafted template by this package's engine; a field's confidence is the share of the
samples that exercise it and parse back exactly, scaled down where its markers were derived rather than
seen.

Public names: `draft_template`, `Draft`, `Evidence`, `Rendering`, `SampleCheck`, `DraftError`.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

import regex

from ..errors import BudgetExceededError
from ..parser import parse_response
from ..template import load_template
from .chat_render import RenderError, RenderTimeout, render_chat, special_tokens_map
from .textdiff import (common_prefix, common_suffix, first_marker, is_marker, last_marker, pair_of, safe_cut,
                       tokens)

__all__ = ["Draft", "DraftError", "Evidence", "Rendering", "SampleCheck", "draft_template", "DEFAULT_TIME_BUDGET"]

#: Seconds `draft_template` may spend rendering and checking, by default.
DEFAULT_TIME_BUDGET = 20.0

# Sentinel texts: plain letters and digits, so that no chat template trims, escapes or splits them.
_SYSTEM = "systemNoteQz7"
_USER = "userAskQx1"
_USER2 = "userAskQx2"
_CONTENT = "answerTextKw7"
_REASONING = "reasonTextMv3"
_RESULT = "toolResultVn5"
_NAME_A, _NAME_B = "lookup_alpha", "lookup_beta"
_ID_A, _ID_B = "kq3x9zt2w", "mb7v4np8r"  # nine letters and digits: some templates insist on that shape
_VALUE_A, _VALUE_B = "valueOneKp", "valueTwoRq"

_TOOLS = [
    {"type": "function", "function": {
        "name": _NAME_A, "description": "Look something up (alpha).",
        "parameters": {"type": "object", "properties": {"arg_one": {"type": "string"}, "arg_two": {"type": "integer"}},
                       "required": ["arg_one"]}}},
    {"type": "function", "function": {
        "name": _NAME_B, "description": "Look something up (beta).",
        "parameters": {"type": "object", "properties": {"arg_one": {"type": "string"}, "arg_two": {"type": "integer"}},
                       "required": ["arg_one"]}}},
]
_ARGS_A = {"arg_one": _VALUE_A, "arg_two": 42}
_ARGS_B = {"arg_one": _VALUE_B, "arg_two": 7}

# Template variables that switch thinking on and off in published chat templates.
_THINKING_SWITCHES = ("enable_thinking", "thinking")


class DraftError(ValueError):
    """The chat template cannot be analysed; ``str(exc)`` says why in plain words (one paragraph)."""


@dataclass(frozen=True)
class Rendering:
    """One rendering the drafter made.

    Attributes:
        label: short name (``"content"``, ``"reasoning+content"``, ``"one call"``, ...).
        description: what the conversation holds, in words.
        messages: the conversation rendered (role/content dicts).
        kwargs: extra template variables (``{"enable_thinking": False}``); ``add_generation_prompt`` included.
        text: the rendered text, or ``""`` when rendering failed.
        error: the rendering error, or ``""``.
    """

    label: str
    description: str
    messages: list
    kwargs: dict
    text: str
    error: str = ""


@dataclass(frozen=True)
class Evidence:
    """The comparison that revealed one marker.

    Attributes:
        marker: what was found (``"start anchor"``, ``"reasoning close"``, ``"tool-call open"`` ...).
        value: the marker text as found.
        left: label of the rendering compared against (`Rendering.label`), or ``""``.
        right: label of the rendering that shows the marker.
        span: ``(start, end)`` character offsets in the right rendering's text of the revealing difference.
        note: one sentence saying how the marker was read off the difference.
    """

    marker: str
    value: str
    left: str
    right: str
    span: tuple
    note: str


@dataclass(frozen=True)
class SampleCheck:
    """A sample assistant turn rendered by the chat template and parsed back with the draft.

    ``expected`` is the message that was rendered (empty values dropped); ``got`` the parse, or None
    with ``error`` set; ``output`` the rendered turn as generation would produce it (cut after the
    end-of-turn marker).
    """

    label: str
    prefix_label: str
    output: str
    expected: dict
    got: dict | None
    error: str
    passed: bool
    fields: tuple


@dataclass
class Draft:
    """The result of `draft_template`.

    Attributes:
        template: the drafted response template (a dict that ``parsing.load_template`` and transformers'
            ``load_response_template`` both accept).
        confidence: field name (and ``"start_anchor"``) -> 0..1.
        evidence: how each marker was found (`Evidence`).
        renderings: label -> `Rendering`, every rendering the evidence and checks refer to.
        checks: the sample turns parsed back (`SampleCheck`).
        notes: findings in words (thinking switch, parallel calls, what the template does not render,
            limits of the draft).
        format: a summary of what was found: ``{"reasoning": ..., "tool_calls": ..., "arguments": ...,
            "parallel_calls": bool, "content_with_calls": bool, "thinking_switch": ...}``.
    """

    template: dict
    confidence: dict
    evidence: list
    renderings: dict
    checks: list
    notes: list
    format: dict

    def to_dict(self) -> dict:
        """Plain JSON-able dict of the whole draft."""
        return {
            "template": self.template,
            "confidence": self.confidence,
            "format": self.format,
            "notes": list(self.notes),
            "evidence": [asdict(e) for e in self.evidence],
            "checks": [asdict(c) for c in self.checks],
            "renderings": {k: asdict(v) for k, v in self.renderings.items()},
        }


# ---------------------------------------------------------------------------------------------------------
# Small builders


def _esc(text: str) -> str:
    """A regex for ``text`` in which every whitespace run may be any whitespace (or none)."""
    out = []
    for piece in regex.split(r"(\s+)", text):
        if piece:
            out.append(r"\s*" if piece.isspace() else regex.escape(piece))
    return "".join(out)


def _esc_exact_ws(text: str) -> str:
    """A regex for ``text`` in which each whitespace run is optional but otherwise exact."""
    out = []
    for piece in regex.split(r"(\s+)", text):
        if not piece:
            continue
        out.append("(?:" + regex.escape(piece) + ")?" if piece.isspace() else regex.escape(piece))
    return "".join(out)


_ID_RE = r"[^\s\[\]<>{}()\"',:=]*"  # a call id the model writes (echoed by the template from the message)


def _esc_index(text: str) -> str:
    """As `_esc`, with every run of digits allowed to be any number (call indexes: ``:0``, ``"0"``), and the sample
    calls' opaque ids (which the template echoes from the message) allowed to be any id."""
    parts = regex.split("(" + _ID_A + "|" + _ID_B + ")", text)
    if len(parts) > 1:
        out = ""
        for i in range(0, len(parts) - 1, 2):
            # the marker that introduces the id, and the id, are optional: a model may leave the id out
            pieces = tokens(parts[i])
            while pieces and not pieces[-1].strip():
                pieces.pop()
            if pieces and is_marker(pieces[-1]):
                lead = "".join(pieces[:-1])
                out += _esc_index(lead) + "(?:" + _esc_index(parts[i][len(lead):]) + _ID_RE + ")?"
            else:
                out += _esc_index(parts[i]) + _ID_RE
        return out + _esc_index(parts[-1])
    return regex.sub(r"\d+", lambda m: "\x00", _esc(regex.sub(r"\d+", "0", text))).replace("\x00", r"\d+") \
        if regex.search(r"\d", text) else _esc(text)


def _lookahead(markers: Iterable[str]) -> str:
    markers = [m for m in markers if m]
    return "(?=" + "|".join(regex.escape(m) for m in markers) + ")" if markers else ""


def _call(name: str, args: Any, call_id: str | None) -> dict:
    out = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id is not None:
        out = {"id": call_id, **out}
    return out


# ---------------------------------------------------------------------------------------------------------
# The analysis


class _Analysis:
    """One drafting run: renders on demand (cached), collects evidence, builds and checks the template."""

    def __init__(self, chat_template: str, special_tokens: Any, tools: list | None, deadline: float):
        if not isinstance(chat_template, str) or not chat_template.strip():
            raise DraftError("The chat template is empty.")
        self.chat_template = chat_template
        self.special_map, self.special = _read_special_tokens(special_tokens)
        self.deadline = deadline
        self.renderings: dict[str, Rendering] = {}
        self.evidence: list[Evidence] = []
        self.notes: list[str] = []
        self.format: dict[str, Any] = {}
        self.tools = copy.deepcopy(tools) if tools else _TOOLS
        self.section_close = ""
        self.second_call = None
        self.call_wrappers: list[str] = []
        self.call_style: dict[str, Any] = {}   # how calls render: content key, argument encoding, id shape
        self.system_ok = True

    # -- rendering ------------------------------------------------------------------------------------
    def render(self, label: str, description: str, messages: list, *, gen: bool = False, tools: Any = None,
               **kwargs: Any) -> Rendering:
        if label in self.renderings:
            return self.renderings[label]
        shown = {"add_generation_prompt": gen, **kwargs}
        if tools:
            shown["tools"] = [t["function"]["name"] for t in tools]
        try:
            text = render_chat(self.chat_template, messages, tools=tools, add_generation_prompt=gen,
                               special_tokens=self.special_map, deadline=self.deadline, **kwargs)
            result = Rendering(label, description, copy.deepcopy(messages), shown, text)
        except RenderTimeout as exc:
            raise DraftError(f"Stopped at the time budget: {exc}. The chat template renders too slowly to be "
                             "analysed (or loops); try a larger time_budget.") from None
        except RenderError as exc:
            result = Rendering(label, description, copy.deepcopy(messages), shown, "", str(exc))
        self.renderings[label] = result
        return result

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise DraftError("Stopped at the time budget before the analysis was complete; try a larger time_budget.")

    def parse_back(self, output: str, compiled: Any, prefix: str) -> dict:
        """``parse_response(output, compiled, prefix=prefix)`` with the sample tools, bounded by the draft's deadline.

        No per-search regex budget (``regex_timeout=None``): with one, a candidate whose patterns happened to run
        past it on a slow or loaded machine would be silently passed over, and the reading chosen would depend on
        the machine's speed. The draft's deadline still bounds a pattern that backtracks without end; reaching it
        stops the whole draft with an error instead of choosing differently.

        Raises:
            DraftError: the deadline passed (before or during the parse).
            Whatever `parse_response` raises for a candidate that does not read ``output``.
        """
        self.check_time()
        left = self.deadline - time.monotonic()
        try:
            return parse_response(output, compiled, prefix=prefix, tools=self.tools, regex_timeout=None,
                                  time_budget=left)
        except BudgetExceededError:
            raise DraftError("Stopped at the time budget while parsing the sample turns back with a drafted "
                             "template (one of its patterns backtracks too long on them); try a larger "
                             "time_budget.") from None

    def cut(self, text: str, pos: int) -> int:
        return safe_cut(text, pos, self.special)

    def add(self, marker: str, value: str, left: str, right: str, span: tuple, note: str) -> None:
        self.evidence.append(Evidence(marker, value, left, right, tuple(span), note))

    # -- 1. the prompt and the assistant turn ----------------------------------------------------------
    def base(self) -> None:
        lead_sys = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER}]
        lead_user = [{"role": "user", "content": _USER}]
        problem = ""
        for lead in (lead_sys, lead_user):
            self.system_ok = lead is lead_sys
            suffix = "" if self.system_ok else " (no system message)"
            try:
                self._base_for(lead, suffix)
                return
            except DraftError as exc:
                problem = str(exc)
                for label in [k for k in self.renderings if k.endswith(suffix) or not suffix]:
                    if not suffix:
                        self.renderings.pop(label, None)
                self.evidence.clear()
        raise DraftError(problem)

    def _base_for(self, lead: list, suffix: str) -> None:
        who = "system + user message" if self.system_ok else "user message"
        prompt = self.render("prompt" + suffix, f"{who}, generation prompt added", lead, gen=True)
        if prompt.error:
            raise DraftError(f"The chat template cannot render a plain user message: {prompt.error}")
        if _USER not in prompt.text:
            raise DraftError("The chat template does not render the user's message, so the assistant turn cannot be "
                             "located.")
        self.lead = lead
        bare = self.render("prompt without generation prompt" + suffix,
                           "the same conversation without the generation prompt", lead, gen=False)
        answer = self.render("content" + suffix, "the conversation plus an assistant answer",
                             lead + [{"role": "assistant", "content": _CONTENT}], gen=False)
        if answer.error:
            raise DraftError(f"The chat template cannot render an assistant answer: {answer.error}")
        if _CONTENT not in answer.text:
            raise DraftError("The chat template does not render the assistant's content.")
        P, F = prompt.text, answer.text
        L = self.cut(P, common_prefix(P, F))
        L = self.cut(F, L)
        user_end = P.rfind(_USER) + len(_USER)
        if user_end > L:
            raise DraftError("The assistant's answer is not rendered after the user's message (the conversation "
                             "before the answer renders differently once an answer follows).")
        if suffix:
            # keep the plain labels for the rest of the analysis
            for old in ("prompt", "prompt without generation prompt", "content"):
                self.renderings[old] = self.renderings.pop(old + suffix)
        self.P, self.L = P, L
        self.prefill = P[L:]
        self.turn_content = F[L:]
        # The generation prompt: what add_generation_prompt adds.
        G_start = self.cut(P, common_prefix(P, bare.text)) if not bare.error else len(P)
        G_start = max(G_start, user_end)
        header = P[G_start:L]
        how = "the text the generation prompt adds, up to where the rendered answer departs from it"
        left = "prompt without generation prompt"
        if not header.strip():
            # The template writes the assistant header itself (no separate generation prompt): take the text
            # between the user's message and the answer, less the user turn's end marker.
            between = P[user_end:L]
            header, offset = self._header_after_user(between)
            G_start = user_end + offset
            how = "the text between the user's message and the answer, less the user turn's end marker"
            left = "content"
        if not header.strip():
            raise DraftError("Could not find where the assistant turn starts: the rendered answer follows the user's "
                             "message with no marker in between.")
        self.anchor = header
        self.anchor_span = (G_start, L)
        self.add("start anchor", header, left, "prompt", (G_start, L), f"Found as {how}.")
        if self.prefill.strip():
            self.add("prompt pre-fill", self.prefill, "content", "prompt", (L, len(P)),
                     "The generation prompt goes on past where the rendered answer departs from it: this text is "
                     "in the prompt, before anything the model writes.")
        if not self.system_ok:
            self.notes.append("A system message changes how the conversation renders once an answer follows; the "
                              "analysis uses conversations without one.")

    def tools_base(self) -> None:
        """The prompt and turn start when tools are offered (the tool list changes the prompt)."""
        prompt = self.render("prompt with tools", "the prompt with the tools offered", self.lead, gen=True,
                             tools=self.tools)
        answer = self.render("content with tools", "an assistant answer, tools offered",
                             self.lead + [{"role": "assistant", "content": _CONTENT}], gen=False, tools=self.tools)
        if prompt.error or answer.error or _CONTENT not in answer.text:
            self.Pt, self.Lt = self.P, self.L
            return
        P, F = prompt.text, answer.text
        L = self.cut(F, self.cut(P, common_prefix(P, F)))
        self.Pt, self.Lt = P, L

    def _header_after_user(self, between: str) -> tuple[str, int]:
        """Split the text between a user message and the answer into (assistant header, its offset)."""
        if self.system_ok:
            P = self.renderings["prompt"].text
            s_end = P.find(_SYSTEM) + len(_SYSTEM)
            after_system = P[s_end:P.find(_USER)] if P.find(_SYSTEM) >= 0 else ""
            shared = common_prefix(after_system, between)
            # keep the shared part only up to its last marker boundary
            pieces = tokens(between[:shared], self.special)
            cut = 0
            pos = 0
            for piece in pieces:
                pos += len(piece)
                if is_marker(piece, self.special) or piece.isspace():
                    cut = pos
            if cut < len(between) and between[cut:].strip():
                return between[cut:], cut
        return between, 0

    # -- 2. end of turn and content wrapping ----------------------------------------------------------
    def content_framing(self) -> None:
        turn = self.turn_content
        i = turn.find(_CONTENT)
        self.content_before = turn[:i]
        after = turn[i + len(_CONTENT):]
        history = self.render("content then user", "an assistant answer followed by another user message",
                              self.lead + [{"role": "assistant", "content": _CONTENT}, {"role": "user", "content": _USER2}],
                              gen=True)
        after_hist = ""
        if not history.error and _CONTENT in history.text and _USER2 in history.text:
            h = history.text
            after_hist = h[h.find(_CONTENT) + len(_CONTENT):h.find(_USER2)]
        self.content_open = ""
        self.content_close = ""
        ends: list[str] = []
        before_tokens = [p for p in tokens(self.content_before, self.special) if p.strip()]
        after_tokens = [p for p in tokens(after, self.special) if p.strip()]
        if before_tokens and not self._looks_like_empty_block(self.content_before):
            self.content_open = self.content_before.strip()
            if after_tokens and after_tokens[0] in pair_of(before_tokens[-1]):
                self.content_close = after_tokens[0]
                after_tokens = after_tokens[1:]
        end = after_tokens[0] if after_tokens else ""
        if end and not self.content_close and end in pair_of(self.content_open or "\0"):
            self.content_close = end
            end = after_tokens[1] if len(after_tokens) > 1 else ""
        self.stops = [end] if end else []
        self.turn_has_end = bool(end)
        if end:
            ends.append(end)
            s = self.L + i + len(_CONTENT) + after.find(end)
            self.add("end of turn", end, "", "content", (s, s + len(end)),
                     "The first marker after the answer in the rendered turn.")
        hist_tokens = [p for p in tokens(after_hist, self.special) if p.strip()]
        if self.content_close and hist_tokens and hist_tokens[0] == self.content_close:
            hist_tokens = hist_tokens[1:]
        if hist_tokens and hist_tokens[0] not in ends:
            h = history.text
            s = h.find(_CONTENT) + len(_CONTENT) + after_hist.find(hist_tokens[0])
            ends.append(hist_tokens[0])
            note = ("The answer's turn has no end marker of its own; the next message's header ends it."
                    if not end else "An answer followed by another message ends with a different marker.")
            self.add("end of turn", hist_tokens[0], "content", "content then user", (s, s + len(hist_tokens[0])), note)
        eos = self.special_map.get("eos_token")
        if eos and eos not in ends and (eos in after or eos in after_hist):
            ends.append(eos)
        if not ends:
            self.notes.append("No end-of-turn marker was found: the answer runs to the end of the generation.")
        self.ends = ends
        if not self.stops:
            self.stops = list(ends)
        if self.content_open:
            s = self.L + turn.find(self.content_open)
            self.add("content open", self.content_open, "", "content", (s, s + len(self.content_open)),
                     "Written before the answer in every rendered turn: the answer is wrapped.")
        if self.content_close:
            s = self.L + i + len(_CONTENT) + after.find(self.content_close)
            self.add("content close", self.content_close, "", "content", (s, s + len(self.content_close)),
                     "The partner of the content open, right after the answer.")

    def _looks_like_empty_block(self, text: str) -> bool:
        return bool(self._empty_block(text))

    def _empty_block(self, text: str) -> tuple[str, str] | None:
        """(open, close) when ``text`` is an empty block: a tag, maybe a word (``<|channel>thought``), its partner."""
        toks = [p for p in tokens(text, self.special) if p.strip()]
        if len(toks) >= 2 and toks[-1] in pair_of(toks[0]) and len(toks) <= 3:
            return text.strip()[:len(text.strip()) - len(toks[-1])].strip(), toks[-1]
        return None

    # -- 3. reasoning ------------------------------------------------------------------------------------
    def reasoning(self) -> None:
        self.r_open = self.r_close = ""
        self.r_mode = "none"   # "tagged" | "forced" (the prompt opens it) | "implicit" (no opener at all)
        self.r_label = ""
        found = self._reasoning_from("reasoning+content", "an assistant answer with reasoning_content",
                                     {"role": "assistant", "content": _CONTENT, "reasoning_content": _REASONING})
        if not found:
            found = self._reasoning_from("thinking chunk+content",
                                         "an assistant answer whose content starts with a thinking chunk",
                                         {"role": "assistant", "content": [{"type": "thinking", "thinking": _REASONING},
                                                                            {"type": "text", "text": _CONTENT}]})
        self.thinking_switch()
        if not self.r_open and not self.r_close:
            self._reasoning_from_prefill()
        if not self.r_open and not self.r_close:
            self._reasoning_from_literals()
        if self.r_open and self.prefill.strip().startswith(self.r_open) and self.r_close not in self.prefill:
            self.r_mode = "forced"  # the generation prompt opens the reasoning: the model starts inside it
        if self.r_open or self.r_close:
            self.format["reasoning"] = {"open": self.r_open, "close": self.r_close, "mode": self.r_mode}
        else:
            self.format["reasoning"] = None
            self.notes.append("No reasoning markers: the chat template renders no reasoning and pre-fills none.")

    def _reasoning_from(self, label: str, description: str, message: dict) -> bool:
        r = self.render(label, description, self.lead + [message], gen=False)
        if r.error or _REASONING not in r.text or _CONTENT not in r.text:
            return False
        if "'type'" in r.text or '"type": "thinking"' in r.text:
            return False  # the content list was printed as data, not understood
        if r.text[:self.L] != self.P[:self.L]:
            return False
        turn = r.text[self.L:]
        i, j = turn.find(_REASONING), turn.find(_CONTENT)
        if j < i:
            self.notes.append("The chat template renders the reasoning after the answer; it is not drafted.")
            return False
        before, between = turn[:i], turn[i + len(_REASONING):j]
        if self.content_open and between.strip() == self.content_open:
            # what looked like a content wrapper is the reasoning close (an answer-only turn shows it alone)
            self.notes.append(f"{self.content_open!r} comes before every answer because it closes the reasoning; "
                              "it is not a content wrapper.")
            self.evidence = [e for e in self.evidence if e.marker not in ("content open", "content close")]
            self.content_open = self.content_close = ""
        elif self.content_open and between.rstrip().endswith(self.content_open):
            between = between.rstrip()[:-len(self.content_open)]
        close = between.strip()
        opener = before.strip()
        base = self.L
        self.r_label = label
        if opener:
            self.r_open, self.r_mode = opener, "tagged"
            s = base + turn.find(opener)
            self.add("reasoning open", opener, "content", label, (s, s + len(opener)),
                     "Written before the reasoning when the message has reasoning_content.")
        else:
            # Nothing before the reasoning in the turn: the prompt opens it, or there is no opener at all.
            opener = ""
            close_token = (tokens(close, self.special) or [""])[0] if close else ""
            for candidate in pair_of(close_token) if close_token else ():
                at = self.P.rfind(candidate, self.anchor_span[0])
                if at >= 0:
                    opener = candidate
                    self.r_open, self.r_mode = candidate, "forced"
                    self._split_anchor_at(at)
                    self.add("reasoning open", candidate, "content", "prompt", (at, at + len(candidate)),
                             "The reasoning starts right at the turn; its opener is the partner of the close and is "
                             "already in the generation prompt.")
                    break
            if not opener:
                self.r_mode = "implicit"
                self.notes.append("The reasoning is rendered with no opening marker: the model is expected to start "
                                  "reasoning at once, and the draft opens the reasoning at the start of the output.")
        if close:
            self.r_close = close
            s = base + i + len(_REASONING) + turn[i + len(_REASONING):].find(close)
            self.add("reasoning close", close, "content", label, (s, s + len(close)),
                     "Written between the reasoning and the answer.")
        return True

    def _move_anchor_tail(self, n: int) -> None:
        """Move the anchor's last ``n`` characters into the pre-fill, and read the answer's framing again."""
        g0, g1 = self.anchor_span
        self.anchor = self.anchor[:-n]
        self.anchor_span = (g0, g1 - n)
        self.L -= n
        self.Lt -= n
        self.prefill = self.P[self.L:]
        self.turn_content = self.renderings["content"].text[self.L:]
        for k, e in enumerate(self.evidence):
            if e.marker == "start anchor":
                self.evidence[k] = Evidence(e.marker, self.anchor, e.left, e.right, self.anchor_span, e.note)
        self.evidence = [e for e in self.evidence if e.marker not in ("content open", "content close", "end of turn")]
        self.content_framing()

    def _literal_markers(self) -> list[str]:
        """Marker tokens written in the chat template's string literals (read with Jinja's lexer, not executed)."""
        try:
            import jinja2
            found: list[str] = []
            for _, kind, value in jinja2.Environment().lex(self.chat_template):
                if kind != "string":
                    continue
                text = value[1:-1].encode("utf-8", "backslashreplace").decode("unicode_escape", "ignore") \
                    if "\\" in value else value[1:-1]
                for piece in tokens(text, self.special):
                    if is_marker(piece, self.special) and piece not in found:
                        found.append(piece)
            return found[:80]
        except Exception:  # noqa: BLE001 - a template the lexer cannot read simply offers no candidates
            return []

    def _reasoning_from_literals(self) -> None:
        """A template that renders no reasoning may still cut it off an answer: when the answer's content holds
        "reasoning + MARKER + answer" and only the answer is rendered, MARKER closes the reasoning. The candidates
        are the marker tokens in the template's own string literals; each is confirmed by a rendering."""
        control = self.render("content with reasoning text", "an answer whose content is reasoning text then the "
                              "answer, no marker", self.lead + [{"role": "assistant", "content": _REASONING + _CONTENT}])
        if control.error or _REASONING not in control.text:
            return
        for marker in self._literal_markers():
            self.check_time()
            label = f"content with inline reasoning closed by {marker}"
            r = self.render(label, f"an answer whose content is reasoning, {marker!r}, then the answer",
                            self.lead + [{"role": "assistant", "content": _REASONING + marker + _CONTENT}])
            if r.error or _CONTENT not in r.text or _REASONING in r.text:
                continue
            partners = pair_of(marker)
            opener = partners[0] if partners else ""
            self.r_open, self.r_close, self.r_mode = opener, marker, "tagged" if opener else "implicit"
            i = r.text.find(_CONTENT)
            self.add("reasoning close", marker, control.label, label, (i, i + len(_CONTENT)),
                     "A marker from the template's own text: an answer whose content holds reasoning and this marker "
                     "is rendered with the reasoning cut away (the template drops earlier reasoning).")
            if opener:
                self.add("reasoning open", opener, "", label, (0, 0), "Derived from the close by spelling.")
            self.notes.append(f"The chat template renders no reasoning, but cuts it off at {marker!r}; the reasoning "
                              + (f"open {opener!r} is derived from it by spelling." if opener else "has no opener."))
            return

    def _split_anchor_at(self, at: int) -> None:
        """The generation prompt holds the reasoning opener: the anchor must end before it."""
        g0, _ = self.anchor_span
        if g0 <= at <= len(self.P):
            self.anchor = self.P[g0:at]
            self.anchor_span = (g0, at)
            self.prefill = self.P[at:]
            for k, e in enumerate(self.evidence):
                if e.marker == "start anchor":
                    self.evidence[k] = Evidence(e.marker, self.anchor, e.left, e.right, (g0, at),
                                                e.note + " It ends before the reasoning opener the prompt pre-fills.")

    def thinking_switch(self) -> None:
        self.switch: dict[str, Any] = {}
        for var in _THINKING_SWITCHES:
            on = self.render(f"prompt, {var}=True", f"the prompt with {var}=True", self.lead, gen=True, **{var: True})
            off = self.render(f"prompt, {var}=False", f"the prompt with {var}=False", self.lead, gen=True, **{var: False})
            if on.error or off.error or on.text == off.text:
                continue
            # The start anchor must not hold what the switch changes: end it where the two prompts part.
            part = safe_cut(on.text, common_prefix(on.text, off.text), self.special)
            g0, g1 = self.anchor_span
            if self.P in (on.text, off.text) and g0 < part < g1:
                self._split_anchor_at(part)
            tail_on, tail_off = self._gen_tail(on.text), self._gen_tail(off.text)
            self.switch = {"variable": var, "on": tail_on, "off": tail_off}
            self.format["thinking_switch"] = dict(self.switch)
            self.notes.append(f"Thinking is switched by the template variable {var!r}: the generation prompt ends "
                              f"{tail_on!r} when on and {tail_off!r} when off.")
            for tail, label, state in ((tail_on, on.label, "on"), (tail_off, off.label, "off")):
                toks = [p for p in tokens(tail, self.special) if p.strip()]
                text = on.text if state == "on" else off.text
                block = self._empty_block(tail)
                if block:
                    if not self.r_open:
                        self.r_open, self.r_close = block
                        self.r_mode = self.r_mode if self.r_mode != "none" else "tagged"
                    s = text.rfind(block[0])
                    self.add("empty reasoning block", tail.strip(), f"prompt, {var}={'False' if state == 'on' else 'True'}",
                             label, (s, len(text)), f"With thinking {state}, the prompt pre-fills an empty reasoning "
                             "block.")
                elif len(toks) == 1:
                    tok = toks[0]
                    s = text.rfind(tok)
                    partners = pair_of(tok)
                    if self.r_close and tok == self.r_close or (not self.r_close and self.r_open in partners):
                        self.r_close = self.r_close or tok
                        self.add("pre-filled reasoning close", tok, "prompt", label, (s, s + len(tok)),
                                 f"With thinking {state}, the prompt ends with the reasoning close alone.")
                    elif self.r_open and tok == self.r_open or (not self.r_open and self.r_close in partners):
                        self.r_open = self.r_open or tok
                        self.add("pre-filled reasoning open", tok, "prompt", label, (s, s + len(tok)),
                                 f"With thinking {state}, the prompt ends with the reasoning open.")
                    elif not self.r_open and not self.r_close and partners:
                        # a lone marker with a partner: which one it is comes from the spelling
                        opener = tok if not tok.startswith(("</", "<|/", "[/")) and "END" not in tok else partners[0]
                        self.r_open, self.r_close = opener, pair_of(opener)[0]
                        self.r_mode = "tagged"
                        self.add("pre-filled reasoning marker", tok, "prompt", label, (s, s + len(tok)),
                                 f"With thinking {state}, the prompt ends with {tok!r}; its partner is derived by "
                                 "spelling.")
            break

    def _gen_tail(self, prompt: str) -> str:
        """What follows the start anchor at the end of a prompt."""
        at = prompt.rfind(self.anchor)
        return prompt[at + len(self.anchor):] if at >= 0 else ""

    def _reasoning_from_prefill(self) -> None:
        block = self._empty_block(self.prefill)
        if block:
            at = self.P.rfind(block[0])
            self.r_open, self.r_close, self.r_mode = block[0], block[1], "tagged"
            self.add("empty reasoning block", self.prefill.strip(), "content", "prompt", (at, len(self.P)),
                     "The generation prompt pre-fills an empty reasoning block (thinking off).")
            return
        toks = [p for p in tokens(self.prefill, self.special) if p.strip()]
        if len(toks) != 1:
            return
        opener = toks[0]
        partners = pair_of(opener)
        if not partners:
            return
        close = partners[0]
        # Confirm: an answer whose content carries "reasoning + close + answer" is cut at the close.
        r = self.render("content with inline reasoning", "an assistant answer whose content holds reasoning, the "
                        "derived close and the answer", self.lead + [
                            {"role": "assistant", "content": _REASONING + close + _CONTENT}], gen=False)
        confirmed = not r.error and _CONTENT in r.text and _REASONING not in r.text
        at = self.P.rfind(opener)
        self.r_open, self.r_close, self.r_mode = opener, close, "forced"
        self._split_anchor_at(at)
        self.add("reasoning open", opener, "content", "prompt", (at, at + len(opener)),
                 "The generation prompt pre-fills it; the rendered answer does not have it.")
        if confirmed:
            i = r.text.find(_CONTENT)
            self.add("reasoning close", close, "content", r.label, (i, i + len(_CONTENT)),
                     "Derived from the opener by spelling, and confirmed: an answer whose content holds reasoning "
                     "and this close is rendered with the reasoning cut away.")
        else:
            self.add("reasoning close", close, "", "prompt", (at, at + len(opener)),
                     "Derived from the opener by spelling only (the template gives no rendering that shows it).")
            self.notes.append(f"The reasoning close {close!r} is derived from the pre-filled opener by spelling, "
                              "not seen in a rendering.")

    # -- 4. tool calls ---------------------------------------------------------------------------------
    def tool_calls(self) -> None:
        self.tc_field: dict | None = None
        self.format.update({"tool_calls": None, "parallel_calls": False, "content_with_calls": False})
        self.tools_base()
        empty = self._assistant_turn("empty answer", "an assistant message with empty content, tools offered",
                                     {"role": "assistant", "content": ""})
        one = self._call_turn("one call", "an assistant message with one tool call", [(_NAME_A, _ARGS_A, _ID_A)])
        if one is None:
            self.notes.append("No tool calls: the chat template does not render an assistant message's tool_calls "
                              "(tried arguments as an object and as a JSON string, content empty and absent, opaque "
                              "and namespaced call ids).")
            return
        label1, turn1, name_a = one
        if not self.r_open and not self.r_close:
            self._reasoning_from_call(label1, turn1)
        two = self._call_turn("two calls", "an assistant message with two tool calls",
                              [(_NAME_A, _ARGS_A, _ID_A), (_NAME_B, _ARGS_B, _ID_B)], like=label1)
        base_turn = empty[1] if empty else ""
        p = self.cut(turn1, common_prefix(turn1, base_turn))
        s = common_suffix(turn1[p:], base_turn[p:])
        end = len(turn1) - s
        # never let the shared suffix eat into the call
        last_arg = max(turn1.rfind(_VALUE_A), turn1.rfind("42"), turn1.find(name_a) + len(name_a))
        end = max(end, last_arg)
        end = self._cut_forward(turn1, end)
        block1 = turn1[p:end]
        self.block_offset = (label1, self.Lt + p)
        parallel = None
        if two is not None:
            label2, turn2, _ = two
            name_b = _NAME_B
            if name_b in turn2 and turn2.count(name_a) >= 1:
                block2 = turn2[p:len(turn2) - (len(turn1) - end)]
                parallel = (label2, block2, name_b)
        fields = self._tool_candidates(label1, block1, name_a, parallel)
        for spec, kind, explain, wrappers in fields:
            self.tc_field, self.format["arguments"] = spec, kind
            self.call_wrappers = list(wrappers)
            if self._calls_parse_back(parallel is not None):
                self.format["tool_calls"] = kind
                self.notes.append(explain)
                break
        else:
            self.tc_field = None
            self.format["arguments"] = None
            self.notes.append("Tool calls are rendered, but no reading of their framing parses the rendered calls back; "
                              "the draft has no tool_calls field. The rendered call: " + repr(block1[:200]))
            return
        self.format["parallel_calls"] = parallel is not None
        if parallel is None:
            self.notes.append("Only one call per message: the chat template renders a single call (or rejects two).")

    def _reasoning_from_call(self, label1: str, turn1: str) -> None:
        """Some templates render reasoning only in front of tool calls: compare a call with and without it."""
        content, args_json, ids = self.call_style[label1]
        call = _call(_NAME_A, json.dumps(_ARGS_A) if args_json else copy.deepcopy(_ARGS_A),
                     _ID_A if ids == "opaque" else f"functions.{_NAME_A}:0")
        message = {"role": "assistant", "tool_calls": [call], "reasoning_content": _REASONING}
        if content is not None:
            message["content"] = content
        r = self.render("reasoning+call", "an assistant message with reasoning_content and one tool call",
                        self.lead + [message], gen=False, tools=self.tools)
        turn = self.tool_turn(r)
        if turn is None or _REASONING not in turn:
            return
        i = turn.find(_REASONING)
        if turn[:i] + turn[i + len(_REASONING):] != turn1:
            return
        opener, close = last_marker(turn[:i], self.special), first_marker(turn[i + len(_REASONING):], self.special)
        if not opener or not close or not is_marker(opener, self.special) or not is_marker(close, self.special):
            return
        self.r_open, self.r_close, self.r_mode, self.r_label = opener, close, "tagged", ""
        base = self.Lt
        self.add("reasoning open", opener, label1, r.label, (base + i - len(opener), base + i),
                 "Written before the reasoning, which the template renders only in front of tool calls.")
        self.add("reasoning close", close, label1, r.label, (base + i + len(_REASONING), base + i + len(_REASONING) + len(close)),
                 "Written after the reasoning: the reasoning was inserted between these two markers.")
        self.notes.append("The chat template renders reasoning only in messages with tool calls (an answer's reasoning "
                          "is dropped); the markers come from those.")
        self.format["reasoning"] = {"open": opener, "close": close, "mode": "tagged"}

    def _assistant_turn(self, label: str, description: str, message: dict) -> tuple[str, str] | None:
        r = self.render(label, description, self.lead + [message], gen=False, tools=self.tools)
        turn = self.tool_turn(r)
        return None if turn is None else (label, turn)

    def tool_turn(self, r: Rendering) -> str | None:
        """The assistant turn of a rendering made with tools offered (None if it does not follow the prompt)."""
        if r.error or r.text[:self.Lt] != self.Pt[:self.Lt]:
            return None
        return r.text[self.Lt:]

    def _call_turn(self, label: str, description: str, calls: list, like: str | None = None):
        """Render an assistant message with calls, trying the message shapes templates accept."""
        shapes = [(content, args_json, ids) for ids in ("opaque", "namespaced") for args_json in (False, True)
                  for content in ("", None)]
        if like is not None and like in self.call_style:
            shapes = [self.call_style[like]] + shapes
        for k, (content, args_json, ids) in enumerate(shapes):
            built = []
            for idx, (name, args, call_id) in enumerate(calls):
                cid = call_id if ids == "opaque" else f"functions.{name}:{idx}"
                built.append(_call(name, json.dumps(args) if args_json else copy.deepcopy(args), cid))
            message = {"role": "assistant", "tool_calls": built}
            if content is not None:
                message["content"] = content
            shape = f"{label} [{'content empty' if content == '' else 'no content'}, arguments as "\
                    f"{'a JSON string' if args_json else 'an object'}, {ids} ids]"
            r = self.render(shape, description, self.lead + [message], gen=False, tools=self.tools)
            names = [c[0] for c in calls]
            turn = self.tool_turn(r)
            if turn is None or not all(n in turn for n in names):
                continue
            self.call_style[shape] = (content, args_json, ids)
            self.call_style[label] = (content, args_json, ids)
            self.renderings[label] = r
            return shape, turn, calls[0][0]
        return None

    def _cut_forward(self, text: str, pos: int) -> int:
        """Move ``pos`` forward to the end of the marker token containing it."""
        for piece_start, piece in _iter_tokens(text, self.special):
            if piece_start < pos < piece_start + len(piece) and is_marker(piece, self.special):
                return piece_start + len(piece)
        return pos

    def _tool_candidates(self, label: str, block: str, name: str, parallel) -> list:
        """Candidate tool_calls field specs for a rendered call block, most specific first."""
        out = []
        # Empty reasoning block some templates write before calls: not part of the calls.
        lead_block = ""
        if self.r_open and self.r_close:
            m = regex.match(r"\s*" + regex.escape(self.r_open) + r"\s*" + regex.escape(self.r_close) + r"\s*", block)
            if m:
                lead_block, block = block[:m.end()], block[m.end():]
        n1 = block.find(name)
        pre1, post1 = block[:n1], block[n1 + len(name):]
        head, section_open, sep = pre1, "", ""
        self.second_call = None
        if parallel is not None:
            label2, block2, name_b = parallel
            if lead_block and block2.startswith(lead_block):
                block2 = block2[len(lead_block):]
            k = self.cut(block2, common_prefix(block, block2))
            inserted_len = len(block2) - len(block)
            k = min(k, len(block))
            inserted = block2[k:k + inserted_len] if inserted_len > 0 else ""
            if inserted and block2[k + inserted_len:] == block[k:] and name_b in inserted:
                n2 = inserted.find(name_b)
                pre2, post2 = inserted[:n2], inserted[n2 + len(name_b):]
                h = common_suffix(pre1, pre2)
                head = pre1[len(pre1) - h:]
                section_open, sep = pre1[:len(pre1) - h], pre2[:len(pre2) - h]
                if not head.strip() and not section_open.strip() and sep.strip() and self.anchor.endswith(sep):
                    # The first call's head is already in the generation prompt: the prompt ends with what
                    # starts every call (and the answer). Move it out of the start anchor.
                    self._move_anchor_tail(len(sep))
                    block, pre1, head, sep = sep + block, sep, sep, ""
                    self.add("call head in the prompt", head, "one call", "two calls", (0, 0),
                             "The second call starts with the text the generation prompt ends with: the prompt "
                             "pre-fills the first call's (and the answer's) opening, so the start anchor ends before it.")
                self.second_call = post2
            else:
                parallel = None
                self.notes.append("Two calls do not render as the first call plus an inserted second one; parallel "
                                  "calls are drafted as repeated single calls.")
        # H1: a JSON object holding the name (per call, or a JSON list of them)
        # H2..H5: the name outside, then the arguments
        for builder in (self._json_native, self._name_then_json, self._name_then_tags, self._name_then_object,
                        self._name_then_python):
            self.call_wrappers = []
            spec = builder(block, name, head, section_open, sep, post1, parallel is not None)
            if spec:
                out.append((*spec, list(self.call_wrappers)))
        self.call_wrappers = []
        return out

    # Argument readings ----------------------------------------------------------------------------------
    def _json_native(self, block, name, head, section_open, sep, post1, parallel):
        # Find the JSON object that holds the name as a value.
        n1 = block.find(name)
        for start in [i for i in range(n1, -1, -1) if block[i:i + 1] == "{"]:
            try:
                obj, end = json.JSONDecoder().raw_decode(block, start)
            except ValueError:
                continue
            if not isinstance(obj, dict) or name not in obj.values():
                continue
            name_key = next(k for k, v in obj.items() if v == name)
            args_key = next((k for k, v in obj.items() if _same_args(v, _ARGS_A)), None)
            if args_key is None:
                return None
            # an id the template writes itself (numbering calls) is part of the format; the message's own id
            # (echoed back) is not something a model writes
            id_key = next((k for k, v in obj.items() if k not in (args_key, name_key) and isinstance(v, (str, int))
                           and str(v) not in (_ID_A, _ID_B) and "functions." not in str(v)), None)
            before, after = block[:start], block[end:]
            mapping = {"name": f"{{{name_key}}}", "arguments": f"{{{args_key}}}"}
            is_list = before.rstrip().endswith("[") and (not parallel or sep.strip().startswith(","))
            close_text = after
            if is_list:
                open_text = before.rstrip()[:-1]
                close_text = after.lstrip()
                close_text = close_text[1:] if close_text.startswith("]") else close_text
                transform = {"type": "function", "function": mapping}
                if id_key:
                    transform = {"type": "function", "id": f"{{{id_key}}}", "function": mapping}
                spec = {"content": "json", "transform_each": True, "transform": transform}
                kind = "a JSON list of {%s, %s} objects" % (json.dumps(name_key), json.dumps(args_key))
                explain = (f"Tool calls: one JSON list of calls, each an object with the name under {name_key!r} and "
                           f"the arguments under {args_key!r}.")
                open_marker, close_marker = open_text.strip(), close_text.strip()
                spec.update(self._open_close(open_marker, close_marker, list_json=True))
            else:
                transform_fn = "{content}" if (name_key, args_key) == ("name", "arguments") and len(obj) == 2 else {
                    "name": f"{{content.{name_key}}}", "arguments": f"{{content.{args_key}}}"}
                transform = {"type": "function", "function": transform_fn}
                spec = {"content": "json", "repeats": True, "transform": transform}
                open_marker = before[len(section_open):].strip() if section_open and before.startswith(section_open) \
                    else before.strip()
                close_marker = after.strip()
                if parallel and sep.strip() and close_marker.endswith(sep.strip()):
                    close_marker = close_marker[:-len(sep.strip())].strip()
                close_marker = first_marker(close_marker, self.special) if close_marker else ""
                kind = "a JSON object {%s, %s} per call" % (json.dumps(name_key), json.dumps(args_key))
                explain = (f"Tool calls: a JSON object per call, the name under {name_key!r} and the arguments under "
                           f"{args_key!r}" + (f", wrapped in {open_marker!r} ... {close_marker!r}." if open_marker else
                                              ", with no wrapper."))
                spec.update(self._open_close(open_marker, close_marker, json_object=True, name_key=name_key))
            self._record_call_markers(spec, open_marker, close_marker, section_open, sep)
            return spec, kind, explain
        return None

    def _open_close(self, open_marker: str, close_marker: str, *, list_json: bool = False, json_object: bool = False,
                    name_key: str = "name") -> dict:
        out: dict[str, Any] = {}
        body_start = r"\[" if list_json else r"\{"
        if open_marker:
            out["open_pattern"] = _esc(open_marker) + r"(?=\s*" + body_start + ")"
        else:
            # a bare JSON call: only at the start of the output, so that JSON in an answer stays content
            out["open_pattern"] = r"^\s*(?=" + body_start + (r"\s*\"" + regex.escape(name_key) + '"' if json_object else "") + ")"
        lookahead = _lookahead(self.ends)
        if close_marker:
            close = _esc(close_marker)
            if json_object or list_json:
                # a close that can appear inside a JSON string only counts outside strings
                opener = r"\[" if list_json else r"\{"
                close = (r"(?<=" + opener + r'(?:[^"\\]|"(?:[^"\\]|\\.)*")*)' + close)
            out["close_pattern"] = close + r"\s*" + ("|" + lookahead if lookahead else "")
        elif lookahead:
            # No close of its own: the call ends with the turn; a special token right after the closing bracket
            # (an end token other than the one the template writes) also ends it, and is consumed.
            opener, closing = (r"\[", r"\]") if list_json else (r"\{", r"\}")
            out["close_pattern"] = (lookahead + r"|(?<=" + opener + r'(?:[^"\\]|"(?:[^"\\]|\\.)*")*' + closing
                                    + r")\s*<\|\w+\|>")
        return out

    def _record_call_markers(self, spec, open_marker, close_marker, section_open, sep) -> None:
        label, offset = self.block_offset
        text = self.renderings[label].text
        if open_marker:
            s = max(0, text.find(open_marker, offset))
            self.add("tool-call open", open_marker, "empty answer", label, (s, s + len(open_marker)),
                     "Written before the call: the difference between an empty answer and one call.")
        if close_marker:
            s = max(0, text.find(close_marker, offset))
            self.add("tool-call close", close_marker, "empty answer", label, (s, s + len(close_marker)),
                     "Written after the call.")
        if section_open.strip():
            s = max(0, text.find(section_open.strip(), offset))
            self.add("tool section open", section_open.strip(), "one call", "two calls", (s, s + len(section_open.strip())),
                     "Written once before all calls: shared by one and two calls, not repeated per call.")
        if sep.strip():
            self.add("call separator", sep.strip(), "one call", "two calls", (0, 0),
                     "Written between two calls.")

    def _name_parts(self, block, name, head, section_open, parallel):
        """(call head, name group) for a name written outside the arguments.

        A head made of several whitespace-separated markers (``<tool_call>\n<function=``) opens the call with its
        last one; the earlier ones are wrappers (consumed as closes of the answer), so that two calls written in
        one wrapper still parse."""
        call_head = head.strip() if parallel else block[:block.find(name)].strip()
        if parallel and section_open.strip() and not head.strip():
            call_head = ""
        name_group = r"(?P<name>[^\s<>\[\]{}()\"'=:,]+)"
        return call_head, name_group

    def _name_then_json(self, block, name, head, section_open, sep, post1, parallel):
        args_at = -1
        for i in [m.start() for m in regex.finditer(r"[{\"]", post1)]:
            try:
                obj, end = json.JSONDecoder().raw_decode(post1, i)
            except ValueError:
                continue
            if isinstance(obj, str):
                try:
                    obj = json.loads(obj)
                except ValueError:
                    continue
                quoted = True
            else:
                quoted = False
            if _same_args(obj, _ARGS_A):
                args_at, args_end = i, end
                break
        if args_at < 0:
            return None
        if quoted:
            return None  # arguments rendered as a quoted JSON string: not a readable framing
        call_head, name_group = self._name_parts(block, name, head, section_open, parallel)
        between = post1[:args_at]
        after = post1[args_end:]
        close_marker = self._call_close(after, sep, parallel)
        call_head, name_re, between, with_id = self._name_or_id(call_head, self._name_regex(name_group, between), between)
        open_pattern = (self._head_re(call_head) if call_head else "") + name_re + _esc_index(between)
        if not call_head:
            open_pattern = r"^\s*" + open_pattern
        function = {"name": "{name}", "arguments": "{content}"}
        transform = {"type": "function", "id": "{id}", "function": function} if with_id else {
            "type": "function", "function": function}
        spec = {"open_pattern": open_pattern, "repeats": True, "content": "json", "transform": transform}
        lookahead = _lookahead(self.ends)
        if close_marker:
            # outside the arguments' strings; a model that drops the close ends the call at the next marker
            spec["close_pattern"] = (r'(?<=\{(?:[^"\\]|"(?:[^"\\]|\\.)*")*)' + _esc(close_marker) + r"\s*"
                                     + ("|" + lookahead if lookahead else "")
                                     + r'|(?<=\{(?:[^"\\]|"(?:[^"\\]|\\.)*")*\})(?!\s*' + _esc(close_marker)
                                     + r")(?=\s*<[^\s<>]{1,40}>)")
        else:
            # the next call's head ends this call, but not inside one of its JSON strings
            nxt = (r'(?<=\{(?:[^"\\]|"(?:[^"\\]|\\.)*")*)(?=' + _esc(call_head) + ")") if call_head else ""
            spec["close_pattern"] = "|".join(x for x in (nxt, lookahead) if x) or None
            if spec["close_pattern"] is None:
                del spec["close_pattern"]
        self._record_call_markers(spec, call_head, close_marker, section_open, sep)
        kind = "the name, then the arguments as a JSON object"
        explain = (f"Tool calls: {call_head!r} + NAME + {between!r}, then the arguments as a JSON object"
                   + (f", closed by {close_marker!r}." if close_marker else ", closed by the next call or the end."))
        return spec, kind, explain

    def _name_or_id(self, call_head: str, name_re: str, between: str) -> tuple[str, str, str, bool]:
        """Where the template writes the call's id instead of its name, capture the id and the name inside it.

        The sample calls carry ids of the form ``functions.NAME:INDEX`` when the opaque ones are not rendered with
        the name; if that id is what the call starts with, the drafted pattern captures it whole as ``id`` and the
        name inside it (the namespace optional, the index any number).
        Returns (call head, name regex, text after the name, whether an id is captured).
        """
        style = self.call_style.get("one call")
        if not style or style[2] != "namespaced":
            return call_head, name_re, between, False
        prefix, suffix = "functions.", ":0"
        if call_head.endswith(prefix) and between.startswith(suffix):
            group = r"(?P<id>(?:" + regex.escape(prefix) + r")?" + name_re + r":\d+)"
            self.notes.append("The call is written with its id (functions.NAME:INDEX), not its name: the draft "
                              "captures the id and reads the name from it.")
            return call_head[:-len(prefix)], group, between[len(suffix):], True
        return call_head, name_re, between, False

    def _head_re(self, call_head: str) -> str:
        """The call head as a regex; where the answer's own opener starts the same way (``>>>all`` against a call's
        ``>>>``), a negative lookahead keeps the answer from being read as a call."""
        out = _esc(call_head)
        if self.content_open and self.content_open.startswith(call_head) and self.content_open != call_head:
            out += "(?!" + _esc(self.content_open[len(call_head):]) + ")"
        return out

    def _name_regex(self, name_group: str, between: str) -> str:
        # a name directly followed by digits (an index in the call id) keeps them out of the name
        if between[:1].isdigit() or between[:1] == ":":
            return name_group.replace("=:,", "=,")
        return name_group

    def _call_close(self, after: str, sep: str, parallel: bool) -> str:
        """The text that closes a call, from what follows its arguments (``after``).

        With two calls rendered, the close is the longest text that both ends the second call and starts what
        follows the first call's arguments; the rest (after the last call) is the tool section's close.
        """
        if parallel and self.second_call is not None:
            post2 = self.second_call
            size = 0
            for n in range(min(len(after), len(post2)), 0, -1):
                if post2.endswith(after[:n]):
                    size = n
                    break
            tail, rest = after[:size], after[size:]
            section_close = first_marker(rest, self.special)
            if section_close and is_marker(section_close, self.special) and section_close not in self.ends:
                self.section_close = section_close
            return self._split_tail(tail.strip())
        return first_marker(after, self.special) if after.strip() else ""

    def _split_tail(self, tail: str) -> str:
        return tail

    def _optional_wrappers(self, call_head: str, close_marker: str) -> tuple[str, str, list[str], list[str]]:
        """Split a multi-marker head (``<tool_call>\n<function=``) and close (``</function>\n</tool_call>``) into the
        call's own marker and the wrappers around it, so that the drafted patterns accept the wrappers as optional
        (a model may write two calls in one wrapper, or drop the inner close).

        Returns (head, close, wrappers before, wrappers after)."""
        before, after = [], []
        pieces = call_head.split()
        if len(pieces) > 1 and all(is_marker(p, self.special) for p in pieces[:-1]):
            before, call_head = pieces[:-1], pieces[-1]
        pieces = close_marker.split()
        if len(pieces) > 1 and all(is_marker(p, self.special) for p in pieces[1:]):
            close_marker, after = pieces[0], pieces[1:]
        return call_head, close_marker, before, after

    def _name_then_tags(self, block, name, head, section_open, sep, post1, parallel):
        k1, k2 = "arg_one", "arg_two"
        i1 = post1.find(k1)
        if i1 < 0:
            return None
        v1 = post1.find(_VALUE_A, i1)
        i2 = post1.find(k2, v1 if v1 >= 0 else i1)
        v2 = post1.find("42", i2) if i2 >= 0 else -1
        if min(v1, i2, v2) < 0:
            return None
        kv1, kv2 = post1[i1 + len(k1):v1], post1[i2 + len(k2):v2]
        mid = post1[v1 + len(_VALUE_A):i2]          # value suffix + key prefix
        rest = post1[v2 + 2:]                        # value suffix + call tail
        if kv1 != kv2 or not kv1.strip() and not mid.strip():
            return None
        vs_len = safe_cut(mid, common_prefix(mid, rest), self.special)
        value_suffix = mid[:vs_len]
        key_prefix_2 = mid[vs_len:]
        between_name_and_args = post1[:i1]
        # the key prefix: the part of the text before the first key that repeats before the second
        kp = common_suffix(between_name_and_args, key_prefix_2)
        key_prefix = key_prefix_2[len(key_prefix_2) - kp:]
        name_suffix = between_name_and_args[:len(between_name_and_args) - kp]
        if regex.search(r"[{}\[\]]", key_prefix + kv1) and not regex.search(r"[<>=]", key_prefix + kv1):
            return None  # an object syntax, not tags
        if "(" in name_suffix:
            return None  # Python call syntax
        tail = rest[len(value_suffix):]
        call_head, name_group = self._name_parts(block, name, head, section_open, parallel)
        close_marker = self._call_close(tail, sep, parallel)
        call_head, close_marker, wrap_before, wrap_after = self._optional_wrappers(call_head, close_marker)
        key_re = r"(?P<key>[^\s<>=\"']+?)" if not key_prefix.strip().endswith('"') else r'(?P<key>[^"]+?)'
        # A value ends only where the next argument or the call's close follows: the value's own end tag
        # written inside a value (code that prints "</parameter>") does not cut it.
        follows = [_esc(key_prefix.strip())] if key_prefix.strip() else []
        follows += [_esc(m) for m in [close_marker] + wrap_after if m]
        follows.append("$")
        tag_pattern = (_esc_exact_ws(key_prefix.lstrip()) + key_re + _esc_exact_ws(kv1) + r"(?P<value>.*?)"
                       + _esc_exact_ws(value_suffix.rstrip()) + r"(?=\s*(?:" + "|".join(follows) + "))")
        wrappers_re = "".join(r"(?:" + _esc(w) + r"\s*)?" for w in wrap_before)
        open_pattern = (wrappers_re + (self._head_re(call_head) if call_head else r"^\s*") + name_group
                        + _esc_index(name_suffix.rstrip() or ""))
        # a call needs a body: an argument or its close right after the name (a tag named in prose is not a call)
        body = [_esc(key_prefix.strip())] if key_prefix.strip() else []
        body += [_esc(m) for m in [close_marker] + wrap_after if m]
        if body:
            open_pattern += r"(?=\s*(?:" + "|".join(body) + "))"
        spec = {"open_pattern": open_pattern, "repeats": True, "content": "xml-inline",
                "content_args": {"tag_pattern": tag_pattern},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}
        lookahead = _lookahead(self.ends)
        if close_marker:
            # the call closes only after a complete argument (or right after the name): not inside a value;
            # its wrapper close may follow, or stand alone when the model drops the call's own close
            behind = [_esc(value_suffix.strip())] if value_suffix.strip() else []
            behind.append(regex.sub(r"\(\?P<\w+>", "(?:", open_pattern.split("(?=")[0]).lstrip("^"))
            closing = _esc(close_marker) + "".join(r"(?:\s*" + _esc(w) + ")?" for w in wrap_after)
            if wrap_after:
                closing = "(?:" + closing + "|" + _esc(wrap_after[0]) + ")"
            if self.section_close and self.section_close not in wrap_after:
                # a model that drops the call's close still ends it with the tool section
                closing = "(?:" + closing + "|(?=" + _esc(self.section_close) + "))"
            spec["close_pattern"] = ("(?<=(?:" + "|".join(behind) + r")\s*)" + closing + r"\s*"
                                     + ("|" + lookahead if lookahead else ""))
        elif lookahead:
            spec["close_pattern"] = lookahead
        self._record_call_markers(spec, call_head, close_marker, section_open, sep)
        kind = "the name, then one tag pair per argument (raw-text values)"
        explain = (f"Tool calls: {call_head!r} + NAME + {name_suffix!r}, then per argument {key_prefix!r} KEY {kv1!r} "
                   f"VALUE {value_suffix!r}; values are raw text, typed by the tools' schemas when tools= is given.")
        return spec, kind, explain

    def _name_then_object(self, block, name, head, section_open, sep, post1, parallel):
        m = regex.search(r"\{", post1)
        if not m:
            return None
        i1 = post1.find("arg_one", m.start())
        v1 = post1.find(_VALUE_A, i1)
        if i1 < 0 or v1 < 0:
            return None
        colon = post1[i1 + len("arg_one"):v1]
        if not colon.startswith(":"):
            return None
        d_open = colon[1:]
        end_v = v1 + len(_VALUE_A)
        after_v = post1[end_v:]
        stop = regex.search(r"[,}]", after_v)
        if not stop:
            return None
        d_close = after_v[:stop.start()]
        args = {"unquoted_keys": True}
        if d_open or d_close:
            if not d_open or not d_close:
                return None
            args["string_delims"] = [[d_open, d_close]]
        depth, j = 0, m.start()
        while j < len(post1):
            if post1.startswith(d_open, j) and d_open:
                k = post1.find(d_close, j + len(d_open))
                j = (k + len(d_close)) if k >= 0 else len(post1)
                continue
            if post1[j] == "{":
                depth += 1
            elif post1[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        obj_end = j + 1
        between = post1[:m.start()]
        call_head, name_group = self._name_parts(block, name, head, section_open, parallel)
        tail = post1[obj_end:]
        close_marker = self._call_close(tail, sep, parallel)
        open_pattern = (self._head_re(call_head) if call_head else r"^\s*") + name_group + _esc_index(between) + r"(?=\{)"
        spec = {"open_pattern": open_pattern, "repeats": True, "content": "json", "content_args": args,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}
        lookahead = _lookahead(self.ends)
        if close_marker:
            # the close counts only outside the delimited strings of the arguments
            outside = ""
            if d_open and d_close:
                o, c = regex.escape(d_open), regex.escape(d_close)
                outside = r"(?<=\{(?:(?!" + o + ").|" + o + r"(?:(?!" + c + ").)*" + c + ")*)"
            spec["close_pattern"] = outside + _esc(close_marker) + r"\s*" + ("|" + lookahead if lookahead else "")
        elif lookahead:
            spec["close_pattern"] = lookahead
        self._record_call_markers(spec, call_head, close_marker, section_open, sep)
        kind = "the name, then an object with unquoted keys" + (" and delimited strings" if d_open else "")
        explain = (f"Tool calls: {call_head!r} + NAME, then the arguments as an object with bare keys"
                   + (f" and strings between {d_open!r} and {d_close!r}" if d_open else "") + ".")
        return spec, kind, explain

    def _name_then_python(self, block, name, head, section_open, sep, post1, parallel):
        m = regex.match(r"\(\s*arg_one\s*=\s*", post1)
        if not m:
            return None
        call_head, name_group = self._name_parts(block, name, head, section_open, parallel)
        lead = section_open.strip() or call_head
        first = r"^\s*" + _esc(lead) if lead else r"^\s*"
        nxt = _esc(sep.strip()) if sep.strip() else r","
        open_pattern = r"(?:" + first + "|" + nxt + r"\s*)" + r"(?P<name>[A-Za-z_][\w.-]*)\("
        tag = (r'(?P<key>[A-Za-z_]\w*)\s*=\s*(?:"(?P<value>(?:[^"\\]|\\.)*)"|\'(?P<value>(?:[^\'\\]|\\.)*)\''
               r'|(?P<value>[^,()\s]+))')
        close_text = section_open and self._close_of_section(section_open)
        close_pattern = r'(?<=\((?:[^"\'()]|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')*)\)'
        if close_text:
            close_pattern += r"(?:\s*" + _esc(close_text) + ")?"
        spec = {"open_pattern": open_pattern, "close_pattern": close_pattern, "repeats": True, "content": "xml-inline",
                "content_args": {"tag_pattern": tag},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}
        kind = "Python call syntax: NAME(key=value, ...)"
        explain = ("Tool calls: Python call syntax, NAME(key=value, ...); read with an xml-inline key=value pattern "
                   "(string values unquoted, other values as text, typed by the tools' schemas when tools= is given).")
        self._record_call_markers(spec, lead, close_text or "", "", sep)
        return spec, kind, explain

    def _close_of_section(self, section_open: str) -> str:
        opener = section_open.strip()[-1:]
        return {"[": "]", "(": ")", "{": "}"}.get(opener, "")

    # -- 5. the template and the checks ----------------------------------------------------------------------
    def build(self) -> dict:
        fields: dict[str, Any] = {}
        lookahead = _lookahead(self.ends)
        if self.r_open or self.r_close or self.r_mode == "implicit":
            spec: dict[str, Any] = {}
            if self.r_mode == "implicit":
                # at the very start, unless the output starts with the answer's opener or a call
                others = [r"\s*" + _esc(self.content_open)] if self.content_open else []
                if self.tc_field and "open_pattern" in self.tc_field:
                    others.append(r"\s*" + self.tc_field["open_pattern"].lstrip("^"))
                spec["open_pattern"] = "^" + ("(?!" + "|".join(others) + ")" if others else "")
            elif self.r_open:
                spec["open_pattern"] = r"^\s*" + regex.escape(self.r_open)
                if self.switch and self.r_close and any(self.switch[k].strip() == self.r_close for k in ("on", "off")):
                    # the prompt may end with the reasoning close alone (thinking switched off): at the start it
                    # opens (and at once closes) an empty reasoning block, so it is consumed, not shown as text;
                    # later in the answer it stays text
                    spec["open_pattern"] = (r"^\s*(?:" + regex.escape(self.r_open) + "|(?=" + regex.escape(self.r_close)
                                            + "))")
            if self.r_close:
                spec["close_pattern"] = regex.escape(self.r_close) + r"\s*" + ("|" + lookahead if lookahead else "")
            elif lookahead:
                spec["close_pattern"] = lookahead
            if "open_pattern" in spec:
                fields["reasoning_content"] = spec
        if self.tc_field:
            fields["tool_calls"] = copy.deepcopy(self.tc_field)
        closes = list(self.ends)
        for extra in (self.content_open, self.content_close):
            if extra and extra not in closes:
                closes.append(extra)
        for extra in self._call_wrappers():
            if extra and extra not in closes:
                closes.append(extra)
        content: dict[str, Any] = {}
        wrappers = [c for c in closes if c not in self.ends]
        if wrappers:
            # wrapper tokens are consumed with the blanks after them (no whitespace-only answer between blocks);
            # the end of the turn is consumed alone
            content["close_pattern"] = "|".join([regex.escape(w) + r"\s*" for w in wrappers]
                                                + [regex.escape(e) for e in self.ends])
        elif closes:
            content["close"] = closes if len(closes) > 1 else closes[0]
        content.update({"repeats": True, "join": ""})
        fields["content"] = content
        for name, spec in fields.items():
            close = spec.get("close_pattern") if name != "content" else None
            if close and "|" in close:
                # every way of closing swallows the whitespace after it (nothing blank is streamed as content)
                spec["close_pattern"] = "(?:" + close + r")\s*"
        anchors = [self.anchor] + [a for a in getattr(self, "extra_anchors", []) if a != self.anchor]
        return {"defaults": {"role": "assistant"}, "start_anchor": anchors if len(anchors) > 1 else anchors[0],
                "fields": fields}

    def _call_wrappers(self) -> list[str]:
        out = []
        for e in self.evidence:
            if e.marker in ("tool section open", "call separator") and e.value and is_marker(e.value, self.special):
                out.append(e.value)
        sec_close = getattr(self, "section_close", "")
        if sec_close:
            out.append(sec_close)
        out.extend(w for w in self.call_wrappers if w not in out)
        return out

    def after_tool_anchor(self) -> None:
        """The prompt after a tool result: does the start anchor still mark where generation starts?"""
        self.extra_anchors: list[str] = []
        if not self.tc_field:
            return
        style = self.call_style.get("one call")
        if style is None:
            return
        content, args_json, ids = style
        call = _call(_NAME_A, json.dumps(_ARGS_A) if args_json else copy.deepcopy(_ARGS_A),
                     _ID_A if ids == "opaque" else f"functions.{_NAME_A}:0")
        message = {"role": "assistant", "tool_calls": [call]}
        if content is not None:
            message["content"] = content
        result = {"role": "tool", "tool_call_id": call["id"], "name": _NAME_A, "content": _RESULT}
        r = self.render("after tool result", "a call, its tool result, generation prompt added",
                        self.lead + [message, result], gen=True, tools=self.tools)
        if r.error or _RESULT not in r.text:
            self.notes.append("The prompt after a tool result could not be rendered"
                              + (f" ({r.error})" if r.error else "") + "; the start anchor is not checked there.")
            return
        text = r.text
        one = self.renderings.get("one call")
        if one is not None and not one.error and text.startswith(one.text):
            after_call = text[len(one.text):text.rfind(_RESULT)]
            one_turn = self.tool_turn(one) or ""
            marker = first_marker(after_call, self.special)
            anchor_head = first_marker(self.anchor, self.special)
            if marker and is_marker(marker, self.special) and marker not in self.ends and marker != anchor_head \
                    and not any(e in one_turn for e in self.ends):
                self.ends.append(marker)
                self.stops.append(marker)
                s = len(one.text) + after_call.find(marker)
                self.add("end of a tool-calling turn", marker, "one call", r.label, (s, s + len(marker)),
                         "A turn that makes a call has no end marker of its own; the tool result's header follows "
                         "it, and the model stops there.")
        at = text.rfind(self.anchor)
        res_end = text.rfind(_RESULT) + len(_RESULT)
        tail_after_anchor = text[at + len(self.anchor):] if at >= res_end else None
        if tail_after_anchor is not None and (not tail_after_anchor.strip() or tail_after_anchor.strip() in (
                self.prefill.strip(), self.r_open, self.switch.get("on", "").strip() if self.switch else "")):
            return
        marker = last_marker(text[res_end:], self.special)
        if not marker:
            return
        self.extra_anchors.append(marker)
        s = text.rfind(marker)
        self.add("start anchor after a tool result", marker, "prompt", r.label, (s, s + len(marker)),
                 "After a tool result the generation prompt is not written again; generation starts after the "
                 "tool result's last marker.")
        self.notes.append(f"After a tool result, generation starts after {marker!r} (the usual generation prompt is "
                          "not written again): the start anchor lists both.")

    def samples(self) -> list[tuple[str, str, str, dict, tuple]]:
        """(label, prefix label, output, expected message, fields) for every sample the template renders."""
        out = []

        def add(label, message, fields):
            output = self.output_of(self.renderings.get(label), False)
            if output is None:
                return
            expected = {k: v for k, v in message.items() if v not in (None, "", [], {})}
            out.append((label, "prompt", output, expected, fields))
        add("content", {"role": "assistant", "content": _CONTENT}, ("content",))
        if self.r_label:
            add(self.r_label, {"role": "assistant", "content": _CONTENT, "reasoning_content": _REASONING},
                ("content", "reasoning_content"))
        if self.tc_field:
            style = self.call_style.get("one call")
            for label, calls, extra in (("one call", [(_NAME_A, _ARGS_A)], {}),
                                        ("two calls", [(_NAME_A, _ARGS_A), (_NAME_B, _ARGS_B)], {}),
                                        ("content+call", [(_NAME_A, _ARGS_A)], {"content": _CONTENT}),
                                        ("reasoning+call", [(_NAME_A, _ARGS_A)], {"reasoning_content": _REASONING})):
                if label == "two calls" and not self.format.get("parallel_calls"):
                    continue
                r = self.renderings.get(label)
                if r is None and style is not None:
                    content, args_json, ids = style
                    built = [_call(n, json.dumps(a) if args_json else copy.deepcopy(a),
                                   ([_ID_A, _ID_B][i] if ids == "opaque" else f"functions.{n}:{i}"))
                             for i, (n, a) in enumerate(calls)]
                    message = {"role": "assistant", "tool_calls": built, **extra}
                    if "content" not in extra and content is not None:
                        message["content"] = content
                    r = self.render(label, f"an assistant message: {label}", self.lead + [message], gen=False,
                                    tools=self.tools)
                if r is None or r.error:
                    continue
                want = {"role": "assistant",
                        "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]}
                want.update({k: v for k, v in extra.items() if v})
                turn = self.tool_turn(r)
                output = self.output_of(r, True)
                if turn is None or output is None:
                    continue
                rendered_fields = ["tool_calls"] + [k for k in extra if extra[k] and (
                    (_CONTENT if k == "content" else _REASONING) in turn)]
                for k in list(extra):
                    if k not in rendered_fields:
                        want.pop(k, None)
                out.append((label, "prompt with tools", output, want, tuple(rendered_fields)))
        return out

    def output_of(self, r: Rendering, with_tools: bool) -> str | None:
        """What a model would generate after the prompt for the turn rendered in ``r`` (None if unusable).

        The rendered turn after the full prompt (when the rendering continues the prompt verbatim), else after the
        point where the two part; when the prompt opens the reasoning and the turn never closes it (a turn
        rendered without reasoning), the close is put first, as a model given that prompt writes it; cut after the
        end-of-turn marker, where generation stops.
        """
        P, L = (self.Pt, self.Lt) if with_tools else (self.P, self.L)
        if r is None or r.error or r.text[:L] != P[:L]:
            return None
        text = r.text[len(P):] if r.text.startswith(P) else r.text[L:]
        tail = P[P.rfind(self.anchor) + len(self.anchor):] if self.anchor in P else ""
        if self.r_open and self.r_close and tail.strip().startswith(self.r_open) and self.r_close not in tail \
                and self.r_close not in text:
            text = self.r_close + text
        return self._generation(text)

    def _generation(self, turn: str) -> str:
        """A rendered turn cut where generation would stop: after the first end-of-turn marker."""
        best = None
        for end in self.stops:
            i = turn.find(end)
            if i >= 0 and (best is None or i + len(end) < best):
                best = i + len(end)
        return turn[:best] if best is not None else turn

    def _calls_parse_back(self, parallel: bool) -> bool:
        template = self.build()
        try:
            compiled = load_template(template)
        except Exception:  # noqa: BLE001 - a candidate that does not load is simply not the reading
            return False
        labels = [("one call", [(_NAME_A, _ARGS_A)])]
        if parallel:
            labels.append(("two calls", [(_NAME_A, _ARGS_A), (_NAME_B, _ARGS_B)]))
        for label, calls in labels:
            output = self.output_of(self.renderings.get(label), True)
            if output is None:
                return False
            try:
                got = self.parse_back(output, compiled, self.Pt)
            except DraftError:
                raise
            except Exception:  # noqa: BLE001 - a candidate that fails on the rendered calls is not the reading
                return False
            want = [{"name": n, "arguments": a} for n, a in calls]
            have = [c.get("function") for c in got.get("tool_calls") or [] if isinstance(c, dict)]
            if any(set(c) - {"type", "function", "id"} for c in got.get("tool_calls") or [] if isinstance(c, dict)):
                return False
            if have != want:
                return False
        return True

    def run_checks(self, template: dict) -> list[SampleCheck]:
        compiled = load_template(template)
        checks = []
        for label, prefix_label, output, expected, fields in self.samples():
            prefix = self.Pt if prefix_label == "prompt with tools" else self.P
            try:
                got = self.parse_back(output, compiled, prefix)
                error = ""
            except DraftError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported as a failed check
                got, error = None, f"{type(exc).__name__}: {exc}"
            passed = _without_ids(got) == expected
            checks.append(SampleCheck(label, prefix_label, output, expected, got, error, passed, fields))
        return checks


def _without_ids(message: dict | None) -> dict | None:
    """The message with the ids of its tool calls dropped (checks compare names and arguments)."""
    if not message or not message.get("tool_calls"):
        return message
    out = dict(message)
    out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} if isinstance(c, dict) else c
                         for c in message["tool_calls"]]
    return out


def _iter_tokens(text: str, special: tuple[str, ...]):
    pos = 0
    for piece in tokens(text, special):
        yield pos, piece
        pos += len(piece)


def _same_args(value: Any, args: dict) -> bool:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return False
    return value == args


def _read_special_tokens(special_tokens: Any) -> tuple[dict, tuple]:
    """(special-tokens map for rendering, tuple of special token strings for marker boundaries)."""
    if special_tokens is None:
        return {}, ()
    if isinstance(special_tokens, Mapping):
        mapping = special_tokens_map(special_tokens)
        strings = set(mapping.values())
        for key in ("additional_special_tokens", "extra_special_tokens", "tokens"):
            for item in special_tokens.get(key) or ():
                if isinstance(item, dict):
                    item = item.get("content")
                if isinstance(item, str) and item:
                    strings.add(item)
        decoder = special_tokens.get("added_tokens_decoder")
        if isinstance(decoder, Mapping):
            for item in decoder.values():
                content = item.get("content") if isinstance(item, Mapping) else getattr(item, "content", item)
                if isinstance(content, str) and content:
                    strings.add(content)
        return mapping, tuple(sorted(s for s in strings if s.strip()))
    strings = tuple(sorted(str(s) for s in special_tokens if str(s).strip()))
    return {}, strings


def draft_template(chat_template: str, *, special_tokens: Any = None, tools: list | None = None,
                   time_budget: float = DEFAULT_TIME_BUDGET) -> Draft:
    """Draft a response template from a chat template, by rendering pairs of conversations and comparing them.

    Args:
        chat_template: the Jinja source (``tokenizer.chat_template``, a ``chat_template.jinja`` file).
        special_tokens: the tokenizer's special tokens: a special-tokens map (``{"bos_token": "<s>",
            "eos_token": "</s>", "additional_special_tokens": [...]}``, or a ``tokenizer_config.json`` dict with
            ``added_tokens_decoder``), or a plain list of token strings. ``bos_token`` / ``eos_token`` are passed
            to the template as ``apply_chat_template`` does; all of them help cut renderings at token boundaries.
        tools: tool schemas (``apply_chat_template`` format) to render calls with; default two synthetic tools.
            Only names and arguments of the sample calls come from here when given.
        time_budget: seconds for all renderings and checks (`DEFAULT_TIME_BUDGET` by default).

    Returns:
        A `Draft`: the template, per-field confidence, the evidence for every marker (which two renderings,
        where the difference is), the sample checks, and notes.

    Raises:
        DraftError: the chat template cannot be analysed (it does not render a user message or an assistant
            answer, raises on them, does not render the answer after the user, or ran past the time budget);
            the message says which and why.
    """
    deadline = time.monotonic() + max(0.1, float(time_budget))
    analysis = _Analysis(chat_template, special_tokens, tools, deadline)
    if tools:
        analysis.tools = _TOOLS  # sample calls always use the synthetic names; user tools only document intent
        analysis.notes.append("Sample calls use two synthetic tools; the tools given are not called.")
    analysis.base()
    analysis.content_framing()
    analysis.check_time()
    analysis.reasoning()
    analysis.check_time()
    analysis.tool_calls()
    analysis.check_time()
    analysis.after_tool_anchor()
    template = analysis.build()
    checks = analysis.run_checks(template)
    confidence = _confidence(analysis, template, checks)
    fmt = dict(analysis.format)
    fmt["start_anchor"] = template["start_anchor"]
    fmt["end_of_turn"] = list(analysis.ends)
    return Draft(template=template, confidence=confidence, evidence=analysis.evidence,
                 renderings=dict(analysis.renderings), checks=checks, notes=analysis.notes, format=fmt)


def _confidence(analysis: _Analysis, template: dict, checks: list[SampleCheck]) -> dict:
    out: dict[str, float] = {}
    for name in template["fields"]:
        relevant = [c for c in checks if name in c.fields]
        share = sum(c.passed for c in relevant) / len(relevant) if relevant else 0.5
        derived = any(e.marker.startswith(("reasoning", "pre-filled")) and "spelling" in e.note
                      for e in analysis.evidence) if name == "reasoning_content" else False
        if name == "reasoning_content" and analysis.r_mode == "implicit":
            derived = True
        out[name] = round(share * (0.6 if derived else 1.0), 2)
    anchor_checks = [c for c in checks]
    out["start_anchor"] = round(sum(c.passed for c in anchor_checks) / len(anchor_checks), 2) if anchor_checks else 0.5
    return out
