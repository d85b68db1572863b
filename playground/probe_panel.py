"""The Doctor tab's probe section: `parsing.doctor.probe` on the template in the editor.

`build_probe_panel(ctx)` is called by `playground.doctor_panel` inside the Doctor tab with the same
`playground.ui.PanelContext`. The probe writes model outputs from the editor's template for each way real
outputs break parsers and reports, per class, what passed, what failed (with the output, expected vs got and a
template change checked by re-running the probe) and what is a known limit of the language. Prompt prefixes
come from a library family (the one whose template is in the editor, or the one picked) and from the current
run's prompt; without them the probe writes its own from the start anchor. The probe runs in a worker under
the request's time budget (`playground.offload`). `probe_html` is a pure function.

Element ids (for tests): ``doctor-probe-prefixes``, ``doctor-probe-btn``, ``doctor-probe``.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

import examples
import parsing
from parsing.doctor.probe import ERROR, NO_CALL, ProbeReport

from . import offload
from .jsonsize import json_head
from .render import escape, stamped

__all__ = ["AUTO", "NONE", "build_probe_panel", "family_choices", "prefixes_for", "probe_html", "reference_html",
           "reference_only", "score_label"]

AUTO = "(auto: the family whose template is in the editor)"
NONE = "(none: written from the start anchor)"
MAX_SHOWN = 600  # characters of an output or value shown before it is cut

_COLORS = {"pass": ("#065f46", "#d1fae5"), "fail": ("#991b1b", "#fee2e2"), "limit": ("#92400e", "#fef3c7"),
           "n/a": ("#374151", "#e5e7eb")}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _show(value: Any) -> str:
    if value == ERROR:
        return "<i>a raised error</i>"
    if value == NO_CALL:
        return "<i>no tool call (an error or a message without calls)</i>"
    try:  # only what is shown: a template's transform can make a value gigabytes as JSON (`json_head`)
        text, whole = json_head(value, MAX_SHOWN, default=None)
        text = text if whole else text + "…"
    except (TypeError, ValueError):
        text = repr(value)
    return f"<code>{escape(_cut(text))}</code>"


def _badge(status: str) -> str:
    fg, bg = _COLORS.get(status, ("#111", "#eee"))
    label = {"limit": "KNOWN LIMIT", "n/a": "N/A"}.get(status, status.upper())
    return (f'<span class="probe-badge probe-{escape(status.replace("/", ""))}" style="color:{fg};background:{bg};'
            f'padding:1px 6px;border-radius:4px;font-weight:600;font-size:0.85em">{label}</span>')


_CELL = 'style="border-top:1px solid var(--border-color-primary);padding:4px 6px;vertical-align:top;text-align:left"'


def probe_html(report: ProbeReport) -> str:
    """The report as HTML: a summary, one row per class, then every probe that did not pass with its prompt,
    output, expected vs got (and the chunking), and the suggested change or the known limit. All text from the
    template and the outputs is escaped."""
    head = _badge("pass" if report.passed else "fail") + f" <b>{escape(report.summary())}</b>"
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    rows = []
    skipped = any(c.status == "n/a" for c in report.classes)  # a "why not run" column only when one was not run
    for c in report.classes:
        passed = sum(r.status == "pass" for r in c.results)
        count = f"{passed}/{len(c.results)}" if c.results else "—"
        why = f"<td {_CELL}>{escape(c.reason) if c.status == 'n/a' else ''}</td>" if skipped else ""
        rows.append(f"<tr class='probe-class' data-class='{escape(c.cls)}'><td {_CELL}><b>{escape(c.cls)}</b></td>"
                    f"<td {_CELL}>{escape(c.title)}</td><td {_CELL}>{_badge(c.status)}</td><td {_CELL}>{count}</td>"
                    f"{why}</tr>")
    table = ("<table class='probe-classes' style='border-collapse:collapse;width:100%;font-size:0.9em'>"
             f"<tr><th {_CELL}>class</th><th {_CELL}>what</th><th {_CELL}>result</th><th {_CELL}>probes</th>"
             f"{f'<th {_CELL}>why not run</th>' if skipped else ''}</tr>{''.join(rows)}</table>")
    details = []
    for r in report.results:
        if r.status == "pass":
            continue
        c = r.case
        accept = "".join(f"<br>or {_show(a)}" for a in c.accept)
        if r.status == "limit":
            advice = f"<div><b>Known limit of the template language:</b> {escape(c.limit)}</div>"
        else:
            mark = "probe-checked" if r.fix_verified else "probe-unchecked"
            checked = f" <span class='{mark}'>({escape(r.checked)})</span>" if r.checked else ""
            advice = f"<div><b>Suggested change:</b> <code>{escape(r.suggestion)}</code>{checked}</div>" \
                if r.suggestion else ""
        extra = f"<div>{escape(r.detail)}</div>" if r.detail else ""
        details.append(
            f"<details class='probe-result probe-{escape(r.status.replace('/', ''))}' data-probe='{escape(c.id)}'"
            f"{' open' if r.status == 'fail' else ''}>"
            f"<summary>{_badge(r.status)} <code>{escape(c.id)}</code>: {escape(c.title)}</summary>"
            f"<div>prompt: <code>{escape(c.prefix_name)}</code></div>"
            f"<div>output: <pre style='white-space:pre-wrap;margin:2px 0'>{escape(_cut(c.output))}</pre></div>"
            f"<div>expected: {_show(c.expected)}{accept}</div>"
            f"<div>got ({escape(r.chunking or '')}): {_show(r.got)}</div>{extra}{advice}</details>")
    notes_html = f"<ul class='probe-notes'>{notes}</ul>" if notes else ""
    return f"<div class='probe-report'><div>{head}</div>{notes_html}{table}{''.join(details)}</div>"


def reference_only(result: Any) -> bool:
    """Whether a probe failed only in transformers' parser (our engine parsed it right)."""
    flag = getattr(result, "reference_only", None)
    if flag is not None:
        return bool(flag)
    return result.status == "fail" and (result.chunking or "").startswith("transformers reference")


def reference_html(report: ProbeReport) -> str:
    """The verdict on transformers' own parser for a report made with ``reference=True``: how many probes only it
    fails (our engine passes them), which consumers that stream with it will get wrong; or that it agrees."""
    failed = [r for r in report.results if reference_only(r)]
    if not failed:
        return ("<div class='probe-reference probe-reference-ok'>" + _badge("pass") + " transformers' parser gets "
                "every probe our engine passes right, in one shot and streamed.</div>")
    streamed = sum("chunk" in (r.chunking or "") or "cut" in (r.chunking or "") for r in failed)
    ids = ", ".join(r.case.id for r in failed[:6]) + (f" and {len(failed) - 6} more" if len(failed) > 6 else "")
    return ("<div class='probe-reference probe-reference-fail'>" + _badge("fail") + f" <b>{len(failed)} probe"
            f"{'s' if len(failed) != 1 else ''} fail only in transformers' parser</b> ({streamed} of them only when "
            f"streamed; our engine passes them all): {escape(ids)}. Consumers that parse with transformers (its "
            "streaming parser fed a tokenizer's chunks) get these wrong although the playground's runs agree, as "
            "Paste and Replay keep every tag in one chunk. Each is marked \u201ctransformers reference\u201d below; "
            "Lint names a delimiter pattern with an optional tail, the usual cause.</div>")


# ------------------------------------------------------------------------------------------ prefixes


def family_choices() -> list[str]:
    """The prefix sources the panel offers: auto, none, then every library family."""
    return [AUTO, NONE, *examples.list_families()]


def _family_of(template_text: str) -> str | None:
    """The library family whose template equals the editor's (compared as JSON), or None."""
    try:
        spec = json.loads(template_text)
    except ValueError:  # not JSON yet: no family
        return None
    return next((name for name in examples.list_families() if examples.load_family(name).template == spec), None)


def prefixes_for(choice: str, template_text: str, run_prefix: str | None) -> tuple[dict | None, str]:
    """(prefixes for `probe`, a sentence saying where they come from).

    ``choice`` is one of `family_choices`; the current run's prompt (``run_prefix``) is added as
    ``"current run"`` when there is one."""
    family = _family_of(template_text) if choice == AUTO else (None if choice in (AUTO, NONE) else choice)
    prefixes: dict = {}
    where = []
    if family:
        prefixes.update(examples.load_family(family).prefixes)
        where.append(f"the {family} family's prompts")
    if run_prefix:
        prefixes["current run"] = run_prefix
        where.append("the current run's prompt")
    if not prefixes:
        return None, "Prompts written from the start anchor (pick a family to use its chat template's prompts)."
    return prefixes, "Prompts: " + " and ".join(where) + "."


def score_label(name: str, score: dict | None) -> str:
    """The library picker's label for a family: ``"qwen3 — probes 34/38, 4 known limits"``."""
    if not score:
        return name
    limits = len(score.get("limits", []))
    text = f"{name} — probes {score['passed']}/{score['run']}"
    if score.get("failed"):
        text += f", {score['failed']} failing"
    if limits:
        text += f", {limits} known limit{'s' if limits != 1 else ''}"
    return text


# ------------------------------------------------------------------------------------------ the panel


def build_probe_panel(ctx: Any) -> None:
    """Build the probe section inside the current Blocks context (the Doctor tab); see the module docstring."""
    with gr.Accordion("Probes: outputs that break deployed parsers", open=True):
        gr.Markdown("Model outputs written from the editor's template for each way real outputs go wrong "
                    "(cut by the token limit, a close tag inside a JSON string, `<think>` named in the answer, "
                    "whitespace around calls, chunks split at every position...), parsed in one shot and "
                    "chunked. Same as `python -m parsing probe TEMPLATE.json --prefixes PREFIXES.json`.")
        with gr.Row():
            source = gr.Dropdown(family_choices(), value=AUTO, label="Prompt prefixes from",
                                 elem_id="doctor-probe-prefixes", scale=3)
            probe_btn = gr.Button("Run probes", elem_id="doctor-probe-btn", variant="primary", scale=1)
        # On by default: Paste/Replay keep tags whole, so only the probes (markers split at every position) show
        # where transformers' own streaming parser breaks a template; it roughly triples the probes' time.
        with_reference = gr.Checkbox(True, label="Also parse every probe with transformers' parser (one shot and "
                                                 "streamed, as consumers of the template will)",
                                     elem_id="doctor-probe-reference")
        probe_out = gr.HTML("", elem_id="doctor-probe")

    def do_probe(tpl_text, choice, reference, sess):
        try:
            parsing.loads_template(tpl_text)  # a template error shows where it is, before any work
            run = getattr(sess, "run", None)
            prefixes, where = prefixes_for(choice, tpl_text, getattr(run, "prefix", None) if run else None)
            report = offload.bounded(offload.probe_job, tpl_text, prefixes, bool(reference), what="The probes",
                                     local="python -m parsing probe template.json --prefixes prefixes.json"
                                           + (" --reference" if reference else ""))
            return stamped(f"<div class='probe-source'>{escape(where)}</div>"
                           + (reference_html(report) if reference else "") + probe_html(report), tpl_text)
        except Exception as exc:  # noqa: BLE001 - a broken template is a message
            from .doctor_panel import _problem
            return stamped(_problem(exc), tpl_text)

    probe_btn.click(do_probe, [ctx.template, source, with_reference, ctx.session], [probe_out])
    from .doctor_panel import _error_note
    ctx.messages[probe_out] = _error_note  # a refused input is said in the panel, not a pop-up
