"""'Draft from the chat template' in a real browser (Debian Chromium), in both colour schemes.

The app runs on the tiny local model (tests/browser/conftest.py), whose chat template is ChatML with <think>
reasoning and Hermes-style <tool_call> JSON: the panel drafts from it, shows every marker with the two
renderings and the difference highlighted, leaves the editor alone until "Use this draft", then puts the
drafted template there; a pasted chat template that cannot be analysed gives its reason.
"""

import json

import pytest

from conftest import open_app
from contrast import assert_readable


_EDITOR_TEXT = "() => Array.from(document.querySelectorAll('#template .cm-line')).map(l => l.textContent).join('\\n')"


def editor_json(page):
    return json.loads(page.evaluate(_EDITOR_TEXT))


def set_code(page, elem_id, text):
    page.click(f"#{elem_id} .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_draft_shows_evidence_then_replaces_the_editor(browser, app_url, scheme):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#template", timeout=30000)
    before = editor_json(page)

    assert not page.is_visible("#draft-panel")
    page.click("#draft-open")
    page.wait_for_selector("#draft-panel", state="visible", timeout=15000)
    page.wait_for_function("document.querySelector('#draft-note').innerText.includes('Press Draft')", timeout=60000)
    # ids stay unique once the panel shows (a gr.Group drew a second #draft-panel inside the first)
    dup = page.evaluate("() => { const n = {}; for (const e of document.querySelectorAll('[id]')) if (e.id)"
                        " n[e.id] = (n[e.id] || 0) + 1; return Object.keys(n).filter(k => n[k] > 1); }")
    assert dup == [], dup
    assert "im_start" in page.inner_text("#draft-chat-template")

    page.click("#draft-run")
    page.wait_for_selector("#draft-report mark.draft-diff", timeout=90000)
    assert "sample turns parse back exactly" in page.inner_text("#draft-note")
    report = page.inner_text("#draft-report")
    for marker in ("start anchor", "end of turn", "reasoning open", "reasoning close", "tool-call open"):
        assert marker in report, marker
    # the highlighted difference is legible in this colour scheme: a visible mark with text in it
    mark = page.locator("#draft-report mark.draft-diff").first
    box = mark.bounding_box()
    assert box and box["width"] > 5 and box["height"] > 5
    assert mark.inner_text().strip()
    assert_readable(page, ["#draft-panel"], min_checked=20)  # WCAG AA text contrast in this scheme
    assert editor_json(page) == before  # nothing changed yet

    before_text = page.evaluate(_EDITOR_TEXT)
    page.click("#draft-use")
    # used: the panel closes (its evidence is thousands of pixels tall) and the editor, filled, is in view
    page.wait_for_selector("#draft-panel", state="hidden", timeout=30000)
    page.wait_for_function(f"(before) => ({_EDITOR_TEXT})() !== before", arg=before_text, timeout=30000)
    drafted = editor_json(page)
    top = page.evaluate("() => document.querySelector('#template').getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"], top
    assert drafted["start_anchor"] == "<|im_start|>assistant\n"
    assert set(drafted["fields"]) == {"reasoning_content", "tool_calls", "content"}
    ctx.close()
    assert not errors, errors


def test_a_chat_template_that_cannot_be_drafted_says_why(browser, app_url):
    ctx, page = open_app(browser, app_url)
    page.click("#draft-open")
    page.wait_for_selector("#draft-panel", state="visible", timeout=15000)
    set_code(page, "draft-chat-template", "{{ raise_exception('only tool calls here') }}")
    page.click("#draft-run")
    page.wait_for_function("document.querySelector('#draft-note').innerText.includes('cannot be drafted')",
                           timeout=60000)
    assert "only tool calls here" in page.inner_text("#draft-note")
    assert page.is_disabled("#draft-use")
    page.click("#draft-close")
    page.wait_for_selector("#draft-panel", state="hidden", timeout=15000)
    ctx.close()
