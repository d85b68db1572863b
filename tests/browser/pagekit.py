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


def set_max_tokens(page, n):
    tab(page, "Chat")
    box = page.locator("#max-new-tokens input[type=number]")
    if not box.is_visible():
        page.click("#settings .label-wrap")
    box.fill(str(n))
    box.press("Enter")


def send(page, text):
    tab(page, "Chat")
    page.fill("#user-input textarea", text)
    page.click("#send")
