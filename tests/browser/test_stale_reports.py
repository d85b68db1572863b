"""Reports made from an earlier template or run say so (trial 13, F2 and F3), in both colour schemes.

The Export tab kept "Saved and reloaded: ... round-trips" and its "Download zip" after the template was edited, and
the zip held the old template; the Doctor kept "PASS No lint warnings" next to a template that warns, and "Check
current run" kept its verdict after another run was parsed. Now each report carries digests of what it was made
from (`playground.render.stamped`) and the page's script flags it once the editor or the run differs, hides an
export's download of another template, and unflags it when the text comes back (an undone edit).
"""

from __future__ import annotations

import json

from contrast import assert_readable
from pagekit import PLAIN, PREFIX, code_text, paste_and_parse, set_code, tab, wait_text

# Same fields as PLAIN, another close: a different template (the anchor and the field stay, so runs still parse).
OTHER = {**PLAIN, "fields": {"content": {"close": "<|endoftext|>", "repeats": True, "join": ""}}}
TEMPLATE_NOTE = "Made from an earlier version of the template"
RUN_NOTE = "Made from an earlier run"
DOWNLOAD_NOTE = "Exported from an earlier version of the template"


def _template_is(page, template: dict) -> None:
    """Put ``template`` into the editor and wait until the server took it (its status names the same digest)."""
    before = page.get_attribute("#editor-set", "data-template")
    set_code(page, "template", json.dumps(template, indent=2))
    page.wait_for_function("b => { const m = document.querySelector('#editor-set');"
                           " return m && m.dataset.template !== b; }", arg=before, timeout=30000)


def _stale(page, selector: str) -> bool:
    page.wait_for_function("() => new Promise(d => requestAnimationFrame(() => requestAnimationFrame(() => d(1))))")
    return page.locator(f"{selector} .report.report-stale").count() == 1


def test_an_export_after_an_edit_is_flagged_and_its_old_zip_hidden(scheme_page):
    page = scheme_page
    _template_is(page, PLAIN)
    original = code_text(page, "template")
    tab(page, "Export")
    page.click("#export")
    page.wait_for_selector("#export-status .report #export-result", timeout=60000)
    page.wait_for_selector("#download", state="visible", timeout=30000)
    assert not _stale(page, "#export-status")

    _template_is(page, OTHER)
    assert _stale(page, "#export-status")
    wait_text(page, "#export-status .stale-note", DOWNLOAD_NOTE)
    assert not page.is_visible("#download")  # the zip holds PLAIN, not the editor's template
    assert "round-trips" in page.inner_text("#export-result")  # what was done is still said, under the note
    assert_readable(page, ["#export-status"], min_checked=2)

    # back to the exported text: current again, the download back
    set_code(page, "template", original)
    page.wait_for_function("() => !document.querySelector('#export-status .report-stale')", timeout=30000)
    page.wait_for_selector("#download", state="visible", timeout=30000)
    assert page.locator("#export-status .stale-note").count() == 0


def test_doctor_lint_is_flagged_after_an_edit_and_checks_after_another_run(scheme_page):
    page = scheme_page
    _template_is(page, PLAIN)
    paste_and_parse(page, "Hello.<|im_end|>", PREFIX)
    tab(page, "Doctor")
    page.click("#doctor-lint-btn")
    page.wait_for_selector("#doctor-lint .report", timeout=60000)
    page.click("#doctor-checks-btn")
    wait_text(page, "#doctor-checks .report", "PASS")
    assert not _stale(page, "#doctor-lint") and not _stale(page, "#doctor-checks")

    # another run of the same length, same template: the status line says the same ("Parsed 16 characters."), so
    # the checks that re-run on every parse (on a change of the status) do not: flagged, the lint not
    paste_and_parse(page, "Bye!!!<|im_end|>", PREFIX)
    tab(page, "Doctor")
    assert _stale(page, "#doctor-checks") and not _stale(page, "#doctor-lint")
    wait_text(page, "#doctor-checks .stale-note", RUN_NOTE)
    page.click("#doctor-checks-btn")
    page.wait_for_function("() => !document.querySelector('#doctor-checks .report-stale')", timeout=60000)

    # another template: both flagged, the lint with the template note
    _template_is(page, OTHER)
    assert _stale(page, "#doctor-lint")
    wait_text(page, "#doctor-lint .stale-note", TEMPLATE_NOTE)
    assert_readable(page, ["#doctor-lint"], min_checked=2)
    page.click("#doctor-lint-btn")
    page.wait_for_function("() => !document.querySelector('#doctor-lint .report-stale')", timeout=60000)
