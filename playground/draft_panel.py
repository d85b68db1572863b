""""Draft from the chat template": the drafter (`parsing.doctor.draft`) in the playground, beside the library picker.

The button opens a panel holding the chat template of the loaded tokenizer (or any pasted one). "Draft"
runs `parsing.doctor.draft.draft_template` in a killable worker (`playground.offload`, under the request's
time budget) and shows the draft with its evidence: for every marker, the two renderings compared, with
the revealing difference highlighted; the confidence per field; the sample turns parsed back; notes.
Nothing changes the editor until "Use this draft".

`playground.ui` calls `draft_button()` in the library picker's row, `draft_layout(button)` below it, and
`wire_draft_panel(parts, ctx)` with its `PanelContext`. The HTML is built by pure functions
(`draft_html`), unit-testable without Gradio. Handlers never raise: problems become messages.

Element ids (for tests): ``draft-open`` (the button), ``draft-panel``, ``draft-chat-template``, ``draft-run``,
``draft-report``, ``draft-template``, ``draft-use``, ``draft-close``, ``draft-note``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from . import offload
from .icons import icon
from .render import escape, escape_text
from .state import model_in_use

__all__ = ["DraftParts", "draft_button", "draft_layout", "wire_draft_panel", "draft_html", "excerpt_html",
           "chat_template_of"]

WINDOW = 160  # characters of a rendering shown on each side of a highlighted difference

_CSS = """
<style>
#draft-report .draft-sec{margin:.6em 0 .3em;font-weight:600}
#draft-report .draft-ev{border:1px solid var(--border-color-primary,#d0d0d0);border-radius:6px;padding:.45em .6em;
  margin:.35em 0}
#draft-report .draft-ev pre{white-space:pre-wrap;word-break:break-all;margin:.2em 0;padding:.3em .4em;
  background:var(--background-fill-secondary,rgba(127,127,127,.08));border-radius:4px;font-size:12px}
#draft-report mark.draft-diff{background:color-mix(in srgb,var(--warn-color) 30%,var(--background-fill-primary));
  color:var(--body-text-color);outline:1px solid var(--warn-color);border-radius:2px}
#draft-report .draft-pass{color:var(--ok-color)}#draft-report .draft-fail{color:var(--bad-color)}
#draft-report .draft-conf{display:inline-block;margin:0 .5em .2em 0;padding:1px 6px;border-radius:4px;
  background:rgba(59,130,246,.15)}
#draft-report .draft-label{color:var(--tl-muted);font-size:12px}
#draft-report code{white-space:pre-wrap;word-break:break-all}
</style>
"""


def _visible(text: str) -> str:
    """Whitespace made visible (a newline shows as ⏎ then breaks), escaped."""
    return escape(text).replace("\n", "⏎\n").replace("\t", "⇥")


def excerpt_html(text: str, span: tuple | list | None) -> str:
    """A window of ``text`` around ``span`` = (start, end), the span wrapped in ``<mark class="draft-diff">``.

    Without a usable span the end of the text is shown. Everything is HTML-escaped; cut ends show "…".
    """
    n = len(text)
    if span and len(span) == 2 and 0 <= span[0] <= span[1] <= n and span[1] > span[0]:
        a, b = int(span[0]), int(span[1])
        lo, hi = max(0, a - WINDOW), min(n, b + WINDOW)
        body = _visible(text[lo:a]) + '<mark class="draft-diff">' + _visible(text[a:b]) + "</mark>" + _visible(text[b:hi])
    else:
        lo, hi = max(0, n - 2 * WINDOW), n
        body = _visible(text[lo:hi])
    return ("…" if lo > 0 else "") + body + ("…" if hi < n else "")


def _differing(left: str, right: str) -> tuple[int, int] | None:
    """The span of ``left`` that differs from ``right`` (between their common prefix and common suffix)."""
    a = 0
    n = min(len(left), len(right))
    while a < n and left[a] == right[a]:
        a += 1
    b = 0
    while b < n - a and left[len(left) - 1 - b] == right[len(right) - 1 - b]:
        b += 1
    end = len(left) - b
    return (a, end) if end > a else None


def draft_html(draft: Any) -> str:
    """The draft (a `parsing.doctor.draft.Draft` or its ``to_dict()``) as HTML: summary, confidence, notes, every
    marker with the two renderings compared and the revealing difference highlighted, and the sample checks."""
    d = draft.to_dict() if hasattr(draft, "to_dict") else draft
    out = [_CSS]
    fmt = d.get("format", {})
    anchor = fmt.get("start_anchor")
    rows = [("start anchor", anchor), ("end of turn", fmt.get("end_of_turn")),
            ("reasoning", fmt.get("reasoning")), ("tool calls", fmt.get("tool_calls")),
            ("parallel calls", fmt.get("parallel_calls")), ("thinking switch", fmt.get("thinking_switch"))]
    out.append('<div class="draft-sec">What the chat template shows</div><ul>')
    for name, value in rows:
        out.append(f"<li>{escape(name)}: <code>{escape(json.dumps(value, ensure_ascii=False))}</code></li>")
    out.append("</ul>")
    out.append('<div class="draft-sec">Confidence per field</div><div>')
    for field, score in (d.get("confidence") or {}).items():
        out.append(f'<span class="draft-conf">{escape(field)}: {float(score):.2f}</span>')
    out.append("</div>")
    if d.get("notes"):
        out.append('<div class="draft-sec">Notes</div><ul>')
        out.extend(f"<li>{escape(n)}</li>" for n in d["notes"])
        out.append("</ul>")
    renderings = d.get("renderings") or {}
    out.append('<div class="draft-sec">Evidence: how each marker was found</div>')
    for ev in d.get("evidence") or []:
        right = renderings.get(ev.get("right"), {})
        left = renderings.get(ev.get("left"), {}) if ev.get("left") else {}
        out.append('<div class="draft-ev">')
        out.append(f"<b>{escape(ev.get('marker'))}</b>: <code>{escape(ev.get('value'))}</code><br>{escape(ev.get('note'))}")
        if right.get("text"):
            out.append(f'<div class="draft-label">rendering “{escape(ev.get("right"))}”: {escape(right.get("description", ""))}'
                       f"</div><pre>{excerpt_html(right['text'], ev.get('span'))}</pre>")
        if left.get("text") and ev.get("left") != ev.get("right"):
            out.append(f'<div class="draft-label">compared with “{escape(ev.get("left"))}”: '
                       f"{escape(left.get('description', ''))}</div><pre>{excerpt_html(left['text'], _differing(left['text'], right.get('text', '')))}</pre>")
        out.append("</div>")
    checks = d.get("checks") or []
    if checks:
        out.append('<div class="draft-sec">Sample turns rendered by the chat template, parsed back with the draft</div>'
                   "<table><tr><th>sample</th><th>result</th><th>generated text</th><th>parsed</th></tr>")
        for c in checks:
            mark = (f'<span class="draft-pass">{icon("ok")} pass</span>' if c.get("passed")
                    else f'<span class="draft-fail">{icon("error")} fail</span>')
            got = c.get("error") or json.dumps(c.get("got"), ensure_ascii=False)
            out.append(f"<tr><td>{escape(c.get('label'))}</td><td>{mark}</td><td><code>{_visible(c.get('output', ''))}"
                       f"</code></td><td><code>{escape(got)}</code></td></tr>")
        out.append("</table>")
    return "".join(out)


def chat_template_of(tokenizer: Any) -> str:
    """A tokenizer's chat template as text ('' when it has none; the ``default`` one of a named set)."""
    ct = getattr(tokenizer, "chat_template", None)
    if isinstance(ct, dict):
        ct = ct.get("default") or next(iter(ct.values()), None)
    return ct if isinstance(ct, str) else ""


def _special_tokens_of(tokenizer: Any) -> dict:
    out: dict[str, Any] = {}
    try:
        out.update({k: str(v) for k, v in (getattr(tokenizer, "special_tokens_map", None) or {}).items()
                    if isinstance(v, str)})
        out["additional_special_tokens"] = [str(t) for t in (getattr(tokenizer, "all_special_tokens", None) or [])]
        decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
        out["additional_special_tokens"] += [str(t) for t in decoder.values()]
    except Exception:  # noqa: BLE001 - a tokenizer without these attributes gives no special tokens
        pass
    return out


@dataclass
class DraftParts:
    """The components `draft_layout` made (wired by `wire_draft_panel`)."""

    open_btn: Any
    panel: Any
    chat_template: Any
    run_btn: Any
    use_btn: Any
    close_btn: Any
    note: Any
    report: Any
    drafted: Any


def draft_button() -> Any:
    """The "Draft from the chat template" button; call it where it should sit (beside the library picker)."""
    return gr.Button("Draft from the chat template", size="sm", scale=1, min_width=120, elem_id="draft-open")


def draft_layout(open_btn: Any) -> DraftParts:
    """The hidden panel the button opens. Call inside a Gradio layout block, below the button's row."""
    with gr.Column(visible=False, elem_id="draft-panel", variant="panel") as panel:
        gr.Markdown("**Draft a response template from the chat template.** The chat template is rendered with "
                    "conversations that differ in one respect; each marker in the draft is a difference between "
                    "two renderings, shown below. The editor is not changed until you use the draft.")
        chat_template = gr.Code(value="", language="jinja2", lines=8, max_lines=16, elem_id="draft-chat-template",
                                label="Chat template (the loaded tokenizer's; paste another to draft from it)")
        with gr.Row():
            run_btn = gr.Button("Draft", variant="primary", size="sm", elem_id="draft-run")
            use_btn = gr.Button("Use this draft", size="sm", interactive=False, elem_id="draft-use")
            close_btn = gr.Button("Close", size="sm", elem_id="draft-close")
        note = gr.HTML("", elem_id="draft-note")
        drafted = gr.Code(value="", language="json", lines=10, max_lines=24, interactive=False,
                          label="Drafted template", elem_id="draft-template")
        report = gr.HTML("", elem_id="draft-report")
    return DraftParts(open_btn, panel, chat_template, run_btn, use_btn, close_btn, note, report, drafted)


def _note(text: str, kind: str = "info") -> str:
    return f'<div class="draft-note draft-note-{escape(kind)}">{escape_text(text)}</div>'


def wire_draft_panel(parts: DraftParts, ctx: Any) -> None:
    """Wire the panel's events. ``ctx`` is the page's `playground.ui.PanelContext`."""
    state_special = gr.State({})

    def on_open(model_box: str, sess: Any):
        model_name = model_in_use(sess, model_box)
        try:
            lm = ctx.load_model(model_name)
            text = chat_template_of(lm.tokenizer)
            special = _special_tokens_of(lm.tokenizer)
            msg = (f"The chat template of {model_name}. Press Draft." if text else
                   f"{model_name} has no chat template: paste one to draft from it.")
        except Exception as e:  # noqa: BLE001 - no model: the user can paste a chat template
            text, special = "", {}
            msg = f"No model's chat template available ({e}); paste a chat template to draft from it."
        return gr.update(visible=True), text, special, _note(msg)

    def on_draft(chat_template: str, special: dict):
        if not (chat_template or "").strip():
            return _note("Paste a chat template first.", "error"), gr.skip(), gr.skip(), gr.update(interactive=False)
        try:
            from . import guard

            budget = guard.limits().request_budget or 30.0
            d = offload.bounded(offload.draft_job, chat_template, special or None, max(1.0, min(30.0, budget * 0.8)),
                                what="The draft", local="python -m parsing draft CHAT_TEMPLATE.jinja --report")
        except (offload.Cut, ValueError) as e:
            message = str(e).replace("DraftError: ", "")
            return (_note(f"The chat template cannot be drafted from: {message}", "error"), "", "",
                    gr.update(interactive=False))
        passed = sum(1 for c in d.get("checks", []) if c.get("passed"))
        total = len(d.get("checks", []))
        text = json.dumps(d["template"], ensure_ascii=False, indent=2)
        return (_note(f"Drafted: {total and f'{passed} of {total} sample turns parse back exactly' or 'no samples'}."
                      " Review the evidence, then use the draft.", "ok"),
                draft_html(d), text, gr.update(interactive=True))

    def on_use(drafted: str):
        # Used: the panel (evidence some thousand pixels tall) closes, so the editor it fills is in view again.
        if not (drafted or "").strip():
            return gr.skip(), _note("Draft first.", "error"), gr.skip()
        if ctx.template_offer is None:
            return drafted, _note("The draft is in the editor.", "ok"), gr.update(visible=False)
        offer = {"text": drafted, "kind": "draft", "name": "", "label": "the drafted template"}
        return (offer, _note("The draft goes in the editor (if you have edits there, the page asks first).", "ok"),
                gr.update(visible=False))

    parts.open_btn.click(on_open, [ctx.model_box, ctx.session], [parts.panel, parts.chat_template, state_special,
                                                                 parts.note])
    parts.run_btn.click(on_draft, [parts.chat_template, state_special],
                        [parts.note, parts.report, parts.drafted, parts.use_btn])
    use = parts.use_btn.click(on_use, [parts.drafted], [ctx.template_offer or ctx.template, parts.note,
                                                       parts.panel])
    if ctx.after_offer is not None:
        ctx.after_offer(use)  # the page offers it to the editor: applied, or a confirmation when edits would go
    parts.close_btn.click(lambda: gr.update(visible=False), None, [parts.panel])
