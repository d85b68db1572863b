"""The Doctor tab: lint, run checks, round trip and test suites for the template in the editor.

`build_doctor_panel(ctx)` is called by `playground.ui` inside the "Doctor" tab
with a `playground.ui.PanelContext` (template editor, session state with the
current Run, model box, status line). All logic is in `parsing.doctor`; this
module renders its reports as HTML (pure functions, unit-testable) and wires
the buttons. Handlers never raise: problems become messages in the panel.

Element ids (for tests): ``doctor-lint-btn``/``doctor-lint``, ``doctor-checks-btn``/
``doctor-checks``, ``doctor-roundtrip-btn``/``doctor-roundtrip``, ``doctor-expected``,
``doctor-fill-expected``, ``doctor-case-name``, ``doctor-save-case``, ``doctor-suite``,
``doctor-suite-upload``, ``doctor-run-suite``/``doctor-suite-report``,
``doctor-export-name``, ``doctor-export``/``doctor-export-files``, ``doctor-note``; the probe section
(`playground.probe_panel`): ``doctor-probe-prefixes``, ``doctor-probe-btn``/``doctor-probe``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import gradio as gr

import parsing
from parsing.doctor import ChecksReport, LintReport, RoundTripReport, SuiteReport
from parsing.doctor import suites as doctor_suites
from parsing.doctor.chat_template import generation_prompt
from parsing.doctor.roundtrip import roundtrip
from parsing.streams import parse_stream

from . import offload, probe_panel
from .export import fresh_export_dir
from .jsonsize import json_head
from .limits import SERVER_HINT
from .render import escape, escape_text, run_digest, stamped
from .state import model_in_use

SUITE_COMMAND = "python -m parsing check template.json cases.jsonl"  # the Doctor's checks and suites, locally

__all__ = ["build_doctor_panel", "lint_html", "checks_html", "roundtrip_html", "suite_html", "case_from_run",
           "append_case_text", "export_files"]

_BADGE = {
    "warning": ("#92400e", "#fef3c7"), "info": ("#1e3a8a", "#dbeafe"), "error": ("#991b1b", "#fee2e2"),
    "pass": ("#065f46", "#d1fae5"), "fail": ("#991b1b", "#fee2e2"),
}
MAX_SHOWN = 400  # characters of a value shown inline before it is cut


def _json(value: Any) -> str:
    try:  # only what is shown: a template's transform can make a value gigabytes as JSON (`json_head`)
        text, whole = json_head(value, MAX_SHOWN - 1, default=None)
    except (TypeError, ValueError):
        text = repr(value)
        text, whole = text[:MAX_SHOWN - 1], len(text) < MAX_SHOWN
    if not whole:
        text += "…"
    return f"<code>{escape(text)}</code>"


def _badge(kind: str, text: str | None = None) -> str:
    fg, bg = _BADGE.get(kind, ("#111", "#eee"))
    return (f'<span class="doctor-badge doctor-{escape(kind)}" style="color:{fg};background:{bg};padding:1px 6px;'
            f'border-radius:4px;font-weight:600;font-size:0.85em">{escape(text or kind.upper())}</span>')


def _note(text: str, kind: str = "info") -> str:
    return f'<div class="doctor-note doctor-note-{escape(kind)}">{_badge(kind, kind.upper())} {escape_text(text)}</div>'


def _error_note(message: str) -> str:
    """A failure said in a Doctor panel (the guard's message for a handler that failed before it ran)."""
    return _note(message, "error")


def _no_run_yet(sess: Any, then: str, need_output: bool = False) -> str | None:
    """Why the current run cannot be used yet (a stream still going, or none at all), ``then`` naming what the
    user does after; None when a finished run is there (with ``need_output``, one that has output)."""
    if getattr(sess, "running", False):
        return f"A run is still streaming: wait for it to finish (or press Stop), then {then}."
    run = getattr(sess, "run", None)
    if run is None or (need_output and not run.chunks):
        return f"No run yet: chat with the model, paste an output or replay an example first, then {then}."
    return None


# An export name: one plain file name (the suffixes .json / .cases.jsonl are added).
_PLAIN_NAME = re.compile(r"[^\W.][\w. -]*")
_TABLE = 'style="border-collapse:collapse;width:100%;font-size:0.9em"'
_CELL = 'style="border-top:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left"'


def _diff_table(entries: list[dict], left: str = "expected", right: str = "actual") -> str:
    rows = "".join(
        f"<tr class='doctor-diff-row'><td {_CELL}><code>{escape(d['path'] or '(message)')}</code></td>"
        f"<td {_CELL}>{escape(d['kind'])}</td>"
        f"<td {_CELL}>{_json(d['expected']) if 'expected' in d else '—'}</td>"
        f"<td {_CELL}>{_json(d['actual']) if 'actual' in d else '—'}</td></tr>" for d in entries)
    return (f"<table class='doctor-diff' {_TABLE}><tr><th {_CELL}>path</th><th {_CELL}>kind</th>"
            f"<th {_CELL}>{escape(left)}</th><th {_CELL}>{escape(right)}</th></tr>{rows}</table>")


# ------------------------------------------------------------------------------------------ renderers


def lint_html(report: LintReport) -> str:
    """The lint report: one row per warning (severity, code, JSON path, message, fix), then compatibility."""
    if report.warnings:
        rows = "".join(
            f"<tr class='doctor-warning' data-code='{escape(w.code)}'><td {_CELL}>{_badge(w.severity)}</td>"
            f"<td {_CELL}><b>{escape(w.code)}</b><br><code class='doctor-path'>{escape(w.path or '(template)')}</code></td>"
            f"<td {_CELL}>{escape(w.message)}<br><i>Fix:</i> {escape(w.fix)}</td></tr>" for w in report.warnings)
        body = f"<table {_TABLE}>{rows}</table>"
    else:
        body = _note("No lint warnings.", "pass")
    compat = "".join(
        f"<li class='doctor-compat' data-target='{escape(c.target)}'>{_badge('pass' if c.accepted else 'fail', 'OK' if c.accepted else 'NO')} "
        f"<b>{escape(c.target)}</b>: {'accepts this template' if c.accepted else 'would not accept it'}"
        f" <small class='doctor-basis'>(per {escape(c.basis)})</small>"
        + ("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in c.reasons) + "</ul>" if c.reasons else "") + "</li>"
        for c in report.compatibility)
    return (f"<div class='doctor-lint-report'><h4>Lint ({len(report.warnings)} finding(s))</h4>{body}"
            f"<h4>Compatibility</h4><ul style='list-style:none;padding-left:0'>{compat}</ul></div>")


def checks_html(report: ChecksReport) -> str:
    """The run checks: all-clear, or one block per finding (overwrites show both values, chunking the diff)."""
    if report.ok:
        return (f"<div class='doctor-checks-report'>{_note(f'No problems in this run: one-shot and {report.chunkings_tried} chunkings agree, nothing overwritten, nothing left open.', 'pass')}</div>")
    parts = []
    for f in report.findings:
        d = f.details
        extra = ""
        if f.code == "overwrite":
            extra = (f"<table {_TABLE}><tr><th {_CELL}>first value</th><th {_CELL}>replaced by</th></tr>"
                     f"<tr><td {_CELL} class='doctor-previous'>{_json(d['previous'])}</td>"
                     f"<td {_CELL} class='doctor-value'>{_json(d['value'])}</td></tr></table>")
        elif f.code == "open-at-end":
            extra = f"<div>Body so far: {_json(d['body'])}</div>"
        elif f.code == "chunking":
            extra = (f"<div>Chunk boundaries (offsets in the output): <code>{escape(d['cuts'])}</code></div>"
                     + _diff_table(d["diff"], "one-shot", "chunked"))
        elif f.code == "region-error":
            extra = f"<div>Raw body: {_json(d['raw'])}</div>"
        parts.append(f"<div class='doctor-finding' data-code='{escape(f.code)}' style='margin:6px 0'>"
                     f"{_badge(f.severity)} <b>{escape(f.code)}</b> {escape(f.message)}{extra}</div>")
    return f"<div class='doctor-checks-report'>{''.join(parts)}</div>"


def roundtrip_html(report: RoundTripReport) -> str:
    """One row per sample: PASS/FAIL, then (for failures, or on demand) diff, error, notes and the parsed text."""
    rows = []
    for c in report.cases:
        inner = ""
        if c.error:
            inner += f"<div class='doctor-error'>Error: {escape(c.error)}</div>"
        if c.diff:
            inner += _diff_table([d.to_dict() for d in c.diff], "original", "parsed")
        inner += "".join(f"<div class='doctor-rt-note'>Note: {escape(n)}</div>" for n in c.notes)
        inner += (f"<div>Generation parsed (after the generation prompt):</div>"
                  f"<pre style='white-space:pre-wrap;max-height:10em;overflow:auto'>{escape(c.generation)}</pre>"
                  f"<div>Parsed: {_json(c.parsed)}</div>")
        state = "pass" if c.passed else "fail"
        rows.append(f"<details class='doctor-rt-case doctor-rt-{state}' data-case='{escape(c.name)}'"
                    f"{'' if c.passed else ' open'}><summary>{_badge(state)} {escape(c.name)}</summary>{inner}</details>")
    verdict = _note("All samples round-trip.", "pass") if report.passed else ""
    return f"<div class='doctor-roundtrip-report'>{verdict}{''.join(rows)}</div>"


def suite_html(report: SuiteReport) -> str:
    """The suite report: summary line, then one row per case with the first failing run's diff or error."""
    rows = []
    for res in report.results:
        state = "pass" if res.passed else "fail"
        inner = ""
        run = res.first_failure
        if run is not None:
            how = "one-shot" if run.mode == "one-shot" else f"chunked at {run.cuts}"
            inner = f"<div>{escape(how)}</div>"
            if res.case.expected_error is not None:  # an error case: say what was expected and what came
                got = (f"error {run.error}" if run.error is not None else
                       f"the message {json_head(run.message, MAX_SHOWN)[0]}")
                inner += (f"<div class='doctor-error'>Expected {escape(res.case.expected_outcome)}, got "
                          f"{escape(got)}</div>")
            elif run.error:
                inner += f"<div class='doctor-error'>Error: {escape(run.error)}</div>"
            else:
                inner += _diff_table([d.to_dict() for d in run.diff], "expected", "parsed")
        rows.append(f"<details class='doctor-suite-case doctor-suite-{state}'{'' if res.passed else ' open'}>"
                    f"<summary>{_badge(state)} #{res.index + 1} {escape(res.case.label)} "
                    f"({len(res.runs)} runs)</summary>{inner}</details>")
    kind = "pass" if report.passed else "fail"
    return (f"<div class='doctor-suite-result'><div class='doctor-summary'>{_badge(kind)} {escape(report.summary())}"
            f"</div>{''.join(rows)}</div>")


# ------------------------------------------------------------------------------------------ helpers


def case_from_run(run: Any, template_text: str, expected_text: str = "", name: str = "") -> dict:
    """A suite case (dict in the JSONL format) from a `playground.session.Run`.

    ``expected`` is `expected_text` (a JSON message object) when given, else what the current template parses
    the run to. Raises ValueError with a readable message for a bad expected text or a run that does not parse.
    """
    if expected_text and expected_text.strip():
        try:
            expected = json.loads(expected_text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"The expected message is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        if not isinstance(expected, dict):
            raise ValueError("The expected message must be a JSON object.")
    else:
        outcome = parse_stream(template_text, run.prefix, [run.text], tools=list(run.tools) if run.tools else None)
        if outcome.error:
            raise ValueError(f"The run does not parse with this template ({outcome.error}); write the expected "
                             f"message by hand.")
        expected = outcome.message
    case = {"prefix": run.prefix, "output": run.text, "expected": expected}
    if run.tools:
        case["tools"] = list(run.tools)
    if name and name.strip():
        case["name"] = name.strip()
    return doctor_suites.parse_case(case).to_json()


def append_case_text(suite_text: str, case: dict) -> str:
    """`suite_text` (JSONL) with `case` appended as one more line."""
    text = (suite_text or "").rstrip("\n")
    line = doctor_suites.dumps_case(case)
    return (text + "\n" + line if text else line) + "\n"


def served_name(name: str) -> str:
    """The file stem a download named ``name`` gets: Gradio serves files under names that also work on Windows
    (``con`` becomes ``_con``: a Windows device name), so the export uses that name itself and says it."""
    from gradio_client.utils import strip_invalid_filename_characters

    served = strip_invalid_filename_characters(name + ".json")
    return served[:-len(".json")] if served.endswith(".json") else name


def export_message(asked: str, paths: list[str]) -> str:
    """What the page says after `export_files` wrote ``paths`` for the name the user typed (``asked``): the files'
    names, and why they differ from it when they do."""
    files = " and ".join(os.path.basename(p) for p in paths)
    asked = (asked or "").strip()
    stem = os.path.basename(paths[0])[:-len(".json")] if paths else asked
    why = (f" ('{asked}' is not a valid file name on Windows, so the files are named '{stem}')"
           if asked and stem != asked else "")
    return f"Exported {files}{why}: download both files below."


def export_files(template_text: str, suite_text: str, name: str) -> list[str]:
    """Write ``<name>.json`` and ``<name>.cases.jsonl`` into a new temporary folder; returns both paths.

    Raises ValueError (readable) for an invalid template or suite, or a name that is not a plain file name.
    """
    name = (name or "").strip() or "response_template"
    if not _PLAIN_NAME.fullmatch(name) or len(name.encode()) > 120:
        raise ValueError("The export name must be a plain file name (no folders): letters, digits, spaces, '-', "
                         "'_' and '.', starting with a letter, a digit or '_' (not '-' or '.'), at most 120 bytes.")
    name = served_name(name)
    parsing.loads_template(template_text)  # editor text, never a path; TemplateError is a ValueError
    cases = doctor_suites.loads_suite(suite_text or "")
    folder = fresh_export_dir("doctor-export-")  # removed after an hour, like every export
    tpath, cpath = doctor_suites.export_suite(template_text, cases, folder, name=name)
    return [str(tpath), str(cpath)]


def _tokenizer(ctx: Any, model_name: str) -> Any:
    lm = ctx.load_model(model_name)
    return lm.tokenizer


def load_uploaded_suite(file: Any) -> tuple[Any, str]:
    """An uploaded ``.jsonl`` suite (a path, or an object with ``.name``, as Gradio's File gives): (the suite as
    text for the editor box, a note). Faults name the file by its own name, not Gradio's upload folder (which a
    public server hides as ``<path>``)."""
    if file is None:
        return gr.skip(), ""
    try:
        path = file if isinstance(file, str) else getattr(file, "name", file)
        try:
            cases = doctor_suites.load_suite(path)
        except doctor_suites.SuiteFormatError as exc:
            raise doctor_suites.SuiteFormatError(exc.message, exc.line, os.path.basename(str(path))) from None
        return doctor_suites.dumps_suite(cases), _note(f"Loaded {len(cases)} case(s).", "pass")
    except Exception as exc:  # noqa: BLE001
        return gr.skip(), _problem(exc)


def _problem(exc: BaseException) -> str:
    if isinstance(exc, parsing.TemplateError):
        return _note(exc.describe(), "error")
    if isinstance(exc, offload.Cut):
        return _note(str(exc), "error")
    from . import guard

    return _note(guard.message_for(exc), "error")  # paths scrubbed on a public server, length bounded


# ------------------------------------------------------------------------------------------ the panel


def build_doctor_panel(ctx: Any) -> None:
    """Build the Doctor panel inside the current Blocks context (the "Doctor" tab).

    Args:
        ctx: a `playground.ui.PanelContext`: uses ``template`` (editor), ``session`` (state with ``.run``),
            ``model_box`` (model id/folder; its tokenizer is used for the anchor check and the round trip,
            through ``load_model``) and ``status`` (its changes re-run the run checks after every parse).
    """
    gr.Markdown("Checks for the template in the editor: **lint** it, **check** the current run, "
                "**round-trip** sample messages through the model's chat template, keep a **test suite** "
                "(JSONL) that `python -m parsing check TEMPLATE CASES.jsonl` runs in CI, and **probe** it with "
                "outputs that break deployed parsers.")
    with gr.Accordion("Lint", open=True):
        with gr.Row():
            lint_btn = gr.Button("Lint template", elem_id="doctor-lint-btn", variant="primary", scale=1)
            use_tok = gr.Checkbox(value=True, label="Check the start anchor against the model's chat template",
                                  elem_id="doctor-use-tokenizer", scale=3)
        lint_out = gr.HTML("", elem_id="doctor-lint")
    with gr.Accordion("Run checks (after every parse)", open=True):
        with gr.Row():
            checks_btn = gr.Button("Check current run", elem_id="doctor-checks-btn", scale=1)
            n_chunk = gr.Number(value=3, precision=0, minimum=0, maximum=50, label="Random chunkings",
                                elem_id="doctor-chunkings", scale=1)
        checks_out = gr.HTML("", elem_id="doctor-checks")
    with gr.Accordion("Round trip through the chat template", open=True):
        rt_btn = gr.Button("Round trip", elem_id="doctor-roundtrip-btn")
        rt_out = gr.HTML("", elem_id="doctor-roundtrip")
    with gr.Accordion("Test suite", open=True):
        with gr.Row():
            case_name = gr.Textbox(label="Case name (optional)", elem_id="doctor-case-name", scale=2)
            fill_btn = gr.Button("Fill expected from current parse", elem_id="doctor-fill-expected", scale=1)
            save_btn = gr.Button("Save current run as a case", elem_id="doctor-save-case", variant="primary",
                                 scale=1)
        expected = gr.Textbox(label="Expected message (JSON; empty: what the template parses now)", lines=4,
                              elem_id="doctor-expected")
        suite = gr.Textbox(label="Suite (JSONL: one {prefix, output, tools?, expected} per line)", lines=6,
                           max_lines=30, elem_id="doctor-suite")
        # an upload is capped at 2 MB; the text an API call sends is capped the same, in characters (trial 10 sent 6 MB)
        ctx.sizes[suite] = ("The Doctor suite", "max_suite_chars",
                            f"To run it without limits, use `{SUITE_COMMAND}` or {SERVER_HINT}.")
        with gr.Row():
            upload = gr.File(label="Load a .jsonl suite", file_types=[".jsonl"], elem_id="doctor-suite-upload",
                             scale=2, height=120)
            run_btn = gr.Button("Run suite (one-shot + random chunkings)", elem_id="doctor-run-suite", scale=1)
        suite_out = gr.HTML("", elem_id="doctor-suite-report")
        with gr.Row():
            export_name = gr.Textbox(value="response_template", label="Export name", elem_id="doctor-export-name",
                                     scale=2)
            export_btn = gr.Button("Export template + suite", elem_id="doctor-export", scale=1)
        export_out = gr.File(label="Template and suite, side by side", file_count="multiple",
                             elem_id="doctor-export-files", interactive=False, height=120)
    probe_panel.build_probe_panel(ctx)
    note = gr.HTML("", elem_id="doctor-note")
    for out in (lint_out, checks_out, rt_out, suite_out):  # a refused input is said in its panel, not a pop-up
        ctx.messages[out] = _error_note

    # ---------------------------------------------------------------------------------- handlers

    def do_lint(tpl_text, check_anchor, sess, model_box):
        model_name = model_in_use(sess, model_box)
        try:
            tok_note = ""
            prompt = None
            parsing.loads_template(tpl_text)  # a template error shows where it is, before any work
            if check_anchor and (model_name or "").strip():
                try:
                    prompt = generation_prompt(_tokenizer(ctx, model_name))
                except Exception as exc:  # noqa: BLE001 - the model may not load; lint still runs
                    tok_note = _note(f"Start anchor not checked: {model_name}: {exc}", "info")
            # In a worker under the request's time budget: lint compares every pair of delimiters.
            report = offload.bounded(offload.lint_job, tpl_text, prompt, what="Lint",
                                     local="python -m parsing lint template.json")
            return stamped(tok_note + lint_html(report), tpl_text)
        except Exception as exc:  # noqa: BLE001 - a broken template is a message
            return stamped(_problem(exc), tpl_text)

    def do_checks(tpl_text, sess, chunkings):
        # (a report about the run as well as the template: marked stale when either changes)
        waiting = _no_run_yet(sess, "check it", need_output=True)
        if waiting:
            return stamped(_note(waiting), tpl_text, run=run_digest(getattr(sess, "run", None)))
        run = sess.run
        try:
            n = max(0, min(50, int(chunkings or 0)))
            parsing.loads_template(tpl_text)
            chunks = run.chunks
            report = offload.bounded(offload.checks_job, tpl_text, run.prefix, chunks.text, list(chunks.ends),
                                     list(run.tools) if run.tools else None, n, what="The run checks",
                                     local=SUITE_COMMAND)
            return stamped(checks_html(report), tpl_text, run=run_digest(run))
        except Exception as exc:  # noqa: BLE001
            return stamped(_problem(exc), tpl_text, run=run_digest(run))

    def do_roundtrip(tpl_text, sess, model_box):
        model_name = model_in_use(sess, model_box)
        try:
            if not (model_name or "").strip():
                return _note("Load a model first: the round trip uses its chat template.", "error")
            tokenizer = _tokenizer(ctx, model_name)
            if not getattr(tokenizer, "chat_template", None):
                return _note(f"{model_name} has no chat template to render samples with.", "error")
            return stamped(roundtrip_html(roundtrip(parsing.loads_template(tpl_text), tokenizer)), tpl_text)
        except Exception as exc:  # noqa: BLE001
            return stamped(_problem(exc), tpl_text)

    def do_fill(tpl_text, sess):
        waiting = _no_run_yet(sess, "fill in its message")
        if waiting:
            return gr.skip(), _note(waiting, "error")
        run = sess.run
        try:
            case = case_from_run(run, tpl_text)
            return json.dumps(case["expected"], ensure_ascii=False, indent=2), ""
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), _problem(exc)

    def do_save(tpl_text, sess, expected_text, name, suite_text):
        waiting = _no_run_yet(sess, "save it")
        if waiting:
            return gr.skip(), _note(waiting, "error")
        run = sess.run
        try:
            case = case_from_run(run, tpl_text, expected_text, name)
            text = append_case_text(suite_text, case)
            count = len(doctor_suites.loads_suite(text))
            return text, _note(f"Saved as case {count}.", "pass")
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), _problem(exc)

    def do_upload(file):
        return load_uploaded_suite(file)

    def do_run_suite(tpl_text, suite_text, chunkings):
        try:
            cases = doctor_suites.loads_suite(suite_text or "")
            if not cases:
                return _note("The suite is empty: save a run as a case or load a .jsonl file.", "error")
            n = max(0, min(50, int(chunkings or 0)))
            parsing.loads_template(tpl_text)
            return stamped(suite_html(offload.bounded(offload.suite_job, tpl_text, suite_text, n, what="The suite",
                                                      local=SUITE_COMMAND)), tpl_text)
        except Exception as exc:  # noqa: BLE001
            return stamped(_problem(exc), tpl_text)

    def do_export(tpl_text, suite_text, name):
        try:
            paths = export_files(tpl_text, suite_text, name)
            return paths, stamped(_note(export_message(name, paths), "pass"), tpl_text,
                                  download="#doctor-export-files")
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), _problem(exc)

    lint_btn.click(do_lint, [ctx.template, use_tok, ctx.session, ctx.model_box], [lint_out])
    check_inputs = [ctx.template, ctx.session, n_chunk]
    checks_btn.click(do_checks, check_inputs, [checks_out])
    # "On every parse": every parse in the playground (chat, paste, replay, template edit) ends by updating the
    # status line, so re-check then; always_last drops stale runs while edits keep coming.
    ctx.status.change(do_checks, check_inputs, [checks_out], trigger_mode="always_last", show_progress="hidden")
    ctx.template.change(do_checks, check_inputs, [checks_out], trigger_mode="always_last", show_progress="hidden")
    rt_btn.click(do_roundtrip, [ctx.template, ctx.session, ctx.model_box], [rt_out])
    fill_btn.click(do_fill, [ctx.template, ctx.session], [expected, note])
    save_btn.click(do_save, [ctx.template, ctx.session, expected, case_name, suite], [suite, note])
    upload.upload(do_upload, [upload], [suite, note])
    run_btn.click(do_run_suite, [ctx.template, suite, n_chunk], [suite_out])
    export_btn.click(do_export, [ctx.template, suite, export_name], [export_out, note])
