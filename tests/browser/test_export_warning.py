"""Export of a template whose start anchor never occurs in the loaded model's prompt: saved, but the result says
so in both colour schemes, legibly, instead of only "Saved and reloaded" (trial 11). The app's model is the tiny
ChatML one (tests/browser/conftest.py); kimi_k2's anchor ``<|im_assistant|>assistant<|im_middle|>`` is not in it."""

import json

import examples
from contrast import assert_readable


def _set_editor(page, text):
    page.click("#template .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def test_export_of_a_template_for_another_format_warns(scheme_page):
    page = scheme_page
    kimi = examples.load_family("kimi_k2").template
    _set_editor(page, json.dumps(kimi, ensure_ascii=False))
    page.click("button[role=tab]:has-text('Export')")
    page.click("#export")
    page.wait_for_selector("#export-result", timeout=60000)
    shown = page.inner_text("#export-result")
    assert "round-trips" in shown  # the export worked...
    assert "start anchor does not occur" in shown and "<|im_start|>assistant" in shown  # ...and says what won't
    assert page.locator("#export-result.status-warning .export-warning").count() == 1
    assert_readable(page, ["#export-result"], min_checked=1)
