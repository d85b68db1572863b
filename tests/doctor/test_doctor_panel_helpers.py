"""The Doctor panel's pure parts: HTML renderers (escaping, ids the browser tests rely on) and suite helpers."""

import json
import os

import pytest

from parsing.doctor import run_checks, run_suite
from parsing.doctor.lint import lint
from parsing.doctor.suites import Case, loads_suite
from playground.doctor_panel import append_case_text, case_from_run, checks_html, export_files, lint_html, suite_html
from playground.session import Run

from doctor_templates import CHATML_PROMPT, CLEAN, GUIDE

RAW = 'A <b>bold</b> answer.<tool_call>{"name": "f", "arguments": {}}</tool_call>\n'


def test_lint_html_escapes_and_marks_codes():
    spec = json.loads(json.dumps(GUIDE))
    spec["fields"]["<script>"] = {"open": "<x>", "close": "</x>"}
    out = lint_html(lint(spec))
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "data-code='field-overwrite'" in out and "data-target='vllm'" in out


def test_doctor_html_shows_bidi_controls_as_visible_markers():
    """The panel escapes with the page's one rule (`playground.render.escape`): a right-to-left override in
    model text or a field name is shown as a marker, never applied to the page."""
    raw = "Answer \u202eevil\u202c.<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n"
    out = checks_html(run_checks(GUIDE, CHATML_PROMPT, raw))
    assert "\u202e" not in out and "⟨U+202E⟩" in out
    spec = json.loads(json.dumps(GUIDE))
    spec["fields"]["x\u2067y"] = {"open": "<x>", "close": "</x>"}
    out = lint_html(lint(spec))
    assert "\u2067" not in out and "⟨U+2067⟩" in out


def test_checks_html_shows_both_overwritten_values():
    out = checks_html(run_checks(GUIDE, CHATML_PROMPT, RAW))
    assert "data-code='overwrite'" in out
    assert "A &lt;b&gt;bold&lt;/b&gt; answer." in out and "doctor-previous" in out and "<b>bold" not in out
    assert "doctor-note-pass" in checks_html(run_checks(CLEAN, CHATML_PROMPT, "Hi<|im_end|>"))


def test_case_from_run_uses_typed_or_parsed_expected():
    run = Run(prefix=CHATML_PROMPT, chunks=("A <b>bold</b> answer.", RAW[21:]), template_text="", tools=None)
    parsed = case_from_run(run, json.dumps(GUIDE))
    assert parsed["output"] == RAW and "content" not in parsed["expected"] and "tools" not in parsed
    typed = case_from_run(run, json.dumps(GUIDE), '{"role": "assistant", "content": "x"}', " mine ")
    assert typed["expected"] == {"role": "assistant", "content": "x"} and typed["name"] == "mine"
    with pytest.raises(ValueError, match="not JSON"):
        case_from_run(run, json.dumps(GUIDE), "{oops")
    with pytest.raises(ValueError, match="JSON object"):
        case_from_run(run, json.dumps(GUIDE), "[1]")
    bad = Run(prefix="", chunks=("<tool_call>{",), template_text="")
    with pytest.raises(ValueError, match="does not parse"):
        case_from_run(bad, json.dumps(GUIDE))


def test_append_and_export(tmp_path):
    case = Case("", "Hi<|im_end|>", {"role": "assistant", "content": "Hi"}).to_json()
    text = append_case_text("", case)
    text = append_case_text(text.rstrip("\n"), case)
    assert len(loads_suite(text)) == 2 and text.endswith("\n")
    tpath, cpath = export_files(json.dumps(CLEAN), text, "smol")
    assert os.path.dirname(tpath) == os.path.dirname(cpath)
    assert tpath.endswith("smol.json") and cpath.endswith("smol.cases.jsonl")
    with pytest.raises(ValueError, match="plain file name"):
        export_files(json.dumps(CLEAN), text, "../x")
    with pytest.raises(ValueError):
        export_files('{"fields": {}}', text, "x")
    # A 300-character name made the OS refuse it, and the message named the server's export folder; a NUL byte
    # gave "embedded null byte". Every such name gets the same readable refusal before any file is written.
    for name in ("x" * 300, "名前" * 50, "a\x00b", "a:b", "a\nb", ".hidden", "..", "a\\b"):
        with pytest.raises(ValueError, match="plain file name") as info:
            export_files(json.dumps(CLEAN), text, name)
        assert "/" not in str(info.value).replace("(no folders)", "")
    assert export_files(json.dumps(CLEAN), text, "名前 v2.final")[0].endswith("名前 v2.final.json")


def test_panel_problems_never_name_a_server_path_on_a_public_server():
    from playground import guard
    from playground.doctor_panel import _problem
    from playground.limits import Limits

    exc = OSError(36, "File name too long", "/tmp/response-template-playground-exports/doctor-export-x/aaa.json")
    guard.configure(Limits.public_space())
    try:
        shown = _problem(exc)
    finally:
        guard.configure(Limits.private())
    assert "File name too long" in shown and "/tmp/" not in shown and "doctor-export" not in shown


def test_suite_html_marks_pass_and_fail():
    cases = [Case(CHATML_PROMPT, "Hi<|im_end|>", {"role": "assistant", "content": "Hi"}, name="ok"),
             Case(CHATML_PROMPT, "Hi<|im_end|>", {"role": "assistant", "content": "<i>Ho</i>"}, name="bad")]
    out = suite_html(run_suite(CLEAN, cases, chunkings_per_case=1))
    assert out.count("doctor-suite-pass") == 1 and out.count("doctor-suite-fail") == 1
    assert "&lt;i&gt;Ho&lt;/i&gt;" in out and "2 cases: 1 passed, 1 failed" in out


def test_suite_html_says_what_an_error_case_expected():
    cut = '<tool_call>{"name": "f", "argu'
    cases = [Case(CHATML_PROMPT, cut, None, expected_error="ValueError", name="cut"),
             Case(CHATML_PROMPT, "<b>Hi</b><|im_end|>", None, expected_error="ValueError", error_contains="<x>",
                  name="parses")]
    out = suite_html(run_suite(CLEAN, cases, chunkings_per_case=1))
    assert out.count("doctor-suite-pass") == 1 and out.count("doctor-suite-fail") == 1
    assert "Expected ValueError containing &#x27;&lt;x&gt;&#x27;, got the message" in out or \
        "Expected ValueError containing '&lt;x&gt;', got the message" in out
    assert "&lt;b&gt;Hi&lt;/b&gt;" in out and "<b>Hi" not in out
