"""Small helpers the browser tests share: driving the editor, the library picker, the paste tab, waiting."""

from __future__ import annotations

import json

FINAL = "#timeline .tl[data-status=final]"
PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n"
# Every output is one tool call: the implicit field is tool_calls, so the tiny random model always "calls".
CALLING = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {"tool_calls": {"close": "<|im_end|>", "repeats": True,
                              "transform": {"type": "function",
                                            "function": {"name": "echo", "arguments": {"text": "{content}"}}}}},
}
PLAIN = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
         "fields": {"content": {"close": "<|im_end|>", "repeats": True, "join": ""}}}
RAW = ('Let me check.\n</think>\n\nChecking <b>now</b>.<tool_call>\n{"name": "get_weather", "arguments": '
       '{"city": "Paris"}}\n</tool_call><|im_end|>')


def set_code(page, elem_id, text):
    """Replace the content of a gr.Code editor the way a user would (select all, type)."""
    page.click(f"#{elem_id} .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def code_text(page, elem_id):
    return page.evaluate(
        "id => Array.from(document.querySelectorAll('#' + id + ' .cm-line')).map(l => l.textContent).join('\\n')",
        elem_id)


def wait_code(page, elem_id, value, timeout=30000):
    """Wait until the editor's JSON equals ``value`` (a dict)."""
    page.wait_for_function(
        "([id, want]) => { try { return JSON.stringify(JSON.parse(Array.from(document.querySelectorAll("
        "'#' + id + ' .cm-line')).map(l => l.textContent).join('\\n'))) === want; } catch (e) { return false; } }",
        arg=[elem_id, json.dumps(value, separators=(",", ":"), ensure_ascii=False)], timeout=timeout)


def wait_status(page, text, timeout=30000):
    try:
        page.wait_for_function("t => document.querySelector('#status').innerText.includes(t)", arg=text,
                               timeout=timeout)
    except Exception as e:
        raise AssertionError(f"status never said {text!r}; it says {page.inner_text('#status')!r}") from e


def wait_text(page, selector, text, timeout=30000):
    try:
        page.wait_for_function("([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
                               arg=[selector, text], timeout=timeout)
    except Exception as e:
        shown = page.inner_text(selector) if page.query_selector(selector) else "(missing)"
        raise AssertionError(f"{selector} never said {text!r}; it says {shown!r}") from e


def pick_library(page, family):
    """Choose ``family`` in the library picker, as a user does (type to filter, Enter)."""
    page.click("#library-template input")
    page.keyboard.press("Control+a")
    page.keyboard.type(family)
    page.keyboard.press("Enter")


def tab(page, name):
    page.click(f"button[role=tab]:has-text('{name}')")


def paste(page, raw, prefix="", button="#paste-parse"):
    tab(page, "Paste")
    page.fill("#paste-raw textarea", raw)
    page.fill("#paste-prefix textarea", prefix)
    page.click(button)


def paste_and_parse(page, raw, prefix=""):
    paste(page, raw, prefix)
    page.wait_for_selector(FINAL)


# Resolves after two animation frames: whatever the page queued for the next frame has run.
TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def open_settings(page):
    """Open the Chat tab's settings accordion and wait until Gradio has finished showing its fields.

    Gradio 6 draws a closed accordion's fields only when it first opens, and one animation frame later pushes
    their stored values into them (`render_previously_invisible_children` in its core): a value typed within
    that frame is overwritten with the old one. A person cannot type there (the fields first paint in that very
    frame); Playwright can, and then Send used the old value (a seed flake under load)."""
    tab(page, "Chat")
    if not page.locator("#seed input").is_visible():
        page.click("#settings .label-wrap")
    page.wait_for_selector("#seed input", state="visible")
    page.evaluate(TWO_FRAMES)


def set_number(page, elem_id, value, key="Tab"):
    """Type ``value`` into the settings number box ``elem_id`` and commit it with ``key``; fails at once if the
    page does not keep it (rather than later, in a run that used the old value)."""
    open_settings(page)
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press(key)
    page.evaluate(TWO_FRAMES)
    assert box.input_value() == str(value), f"#{elem_id} shows {box.input_value()!r} after typing {value!r}"


def set_max_tokens(page, n):
    set_number(page, "max-new-tokens", n, key="Enter")


def send(page, text):
    tab(page, "Chat")
    page.fill("#user-input textarea", text)
    page.click("#send")
