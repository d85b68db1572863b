"""Every view the page draws is readable in both colour schemes: WCAG AA text contrast, measured in Chromium on
the real page (issue #13, bug 1), with icons that need no emoji font."""

import json
import re

from contrast import assert_readable
from pagekit import FINAL, PREFIX, paste_and_parse, send, set_code, set_max_tokens, tab, wait_status

# a reasoning block, a good tool call, a broken one (a failed region), and discarded text before the anchor
RAW = ('Let me check.\n</think>\n\nChecking <b>now</b>.<tool_call>\n{"name": "get_weather", "arguments": '
       '{"city": "Paris"}}\n</tool_call><tool_call>\n{oops\n</tool_call><|im_end|>')
NAIVE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": "true",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>"},
    },
}
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]")


def test_timeline_legend_log_badges_and_turn_are_readable(scheme_page):
    page = scheme_page
    paste_and_parse(page, RAW, PREFIX)
    page.wait_for_selector("#timeline span.e")
    page.wait_for_selector("#timeline span.d.e")  # the failed region's delimiter (bug 5)
    roots = ["#header", "#status", "#timeline", "#legend", "#check", "#template-status"]
    n = assert_readable(page, roots, min_checked=20)
    # the timeline follows the theme: its text is the theme's body text, never fixed colours on fixed white
    body, tl = page.evaluate("""() => [getComputedStyle(document.body).color,
                                       getComputedStyle(document.querySelector('#timeline .tl')).color]""")
    assert tl == body, (tl, body)
    tab(page, "Event log")
    page.wait_for_selector("#events tr.ev-region_close")
    n += assert_readable(page, ["#events"], min_checked=30)
    tab(page, "Parsed turn")
    page.wait_for_function("document.querySelector('#parsed-turn').innerText.includes('Tool call')")
    n += assert_readable(page, ["#parsed-turn"], min_checked=2)
    # the parsed message as JSON: keys, strings, brackets of the tool_calls list, punctuation (trial 14 M1: Gradio's
    # own token colours were 2.1-2.8:1 on white)
    tab(page, "Message")
    page.wait_for_function("document.querySelector('#message').innerText.includes('get_weather')")
    n += assert_readable(page, ["#message"], min_checked=20)
    page.click("#timeline span.d:text-is('<tool_call>')")
    page.wait_for_selector("#inspector .insp")
    n += assert_readable(page, ["#inspector"], min_checked=4)
    assert not EMOJI.search(page.inner_text("body")), EMOJI.findall(page.inner_text("body"))


def test_chat_cards_and_the_doctor_are_readable(scheme_page):
    from playground import remote, remote_panel

    page = scheme_page
    set_code(page, "template", json.dumps(NAIVE, indent=2))
    page.wait_for_selector("#template-status .tpl-warn")  # "repeats": "true" is a string
    set_max_tokens(page, 6)
    send(page, "hi")
    wait_status(page, "Done", timeout=60000)
    page.wait_for_selector(FINAL)
    assert_readable(page, ["#chatbot", "#template-status", "#status"], min_checked=3)
    tab(page, "Doctor")
    page.click("#doctor-lint-btn")
    page.wait_for_selector("#doctor-lint .doctor-warning", timeout=60000)
    page.click("#doctor-checks-btn")
    page.wait_for_selector("#doctor-checks .doctor-note, #doctor-checks .doctor-finding", timeout=60000)
    page.click("#doctor-roundtrip-btn")
    page.wait_for_selector("#doctor-roundtrip .doctor-rt-case", timeout=60000)
    page.click("#doctor-probe-btn")
    page.wait_for_selector("#doctor-probe .probe-report", timeout=120000)
    assert_readable(page, ["#doctor-lint", "#doctor-checks", "#doctor-roundtrip", "#doctor-probe"], min_checked=30)
    # the server-parity table, which this app (no server configured) does not show: drawn from a real comparison
    # (a difference, a whitespace-only difference, a match, a template-only field) into the page. The draft
    # panel is checked in both schemes by test_draft_panel_browser.py.
    rows = remote.compare_messages({"role": "assistant", "content": "Hi", "reasoning_content": "r ", "x": 1},
                                   {"content": "Hello", "reasoning": "r", "tool_calls": []})
    page.evaluate("""html => { const d = document.createElement('div'); d.id = 'injected-parity'; d.innerHTML = html;
        document.querySelector('#timeline').parentElement.appendChild(d); }""",
                  remote_panel.parity_html(rows, "tiny @ server", {"temperature": 0}))
    assert_readable(page, ["#injected-parity"], min_checked=10)
    # what the page says in its own words carries no emoji (the probes' sample text may: that is data)
    chrome = page.evaluate("sel => Array.from(document.querySelectorAll(sel)).map(e => e.innerText).join(' ')",
                           "#header, #status, #check, #template-status, button, .legend, .badge, .probe-badge, h4")
    assert not EMOJI.search(chrome), EMOJI.findall(chrome)


def test_the_selected_tab_and_the_primary_buttons_are_readable(scheme_page):
    """Gradio's accent orange: the selected tab's label (2.8:1 on white) and white on the primary fill in the
    dark scheme (3.56:1), whose `:root .dark` rule outranked the page's own darker fill (trial 12, F7)."""
    page = scheme_page
    n = assert_readable(page, ["#modes [role=tablist]", "#send"], min_checked=2)
    tab(page, "Paste")
    n += assert_readable(page, ["#modes [role=tablist]", "#paste-parse"], min_checked=2)
    fill = page.evaluate("() => getComputedStyle(document.querySelector('#send')).backgroundColor")
    assert fill == "rgb(194, 65, 12)", fill  # the page's fill, in both schemes
    assert n >= 4


def test_dirty_chunks_are_striped_apart_from_clean_ones(scheme_page):
    """A dirty chunk (text whose value may still change) looks different from a clean one in both schemes: the
    stripes are a background image that a field's background colour (stronger in dark mode) must not reset."""
    page = scheme_page
    paste_and_parse(page, RAW, PREFIX)
    page.wait_for_selector("#timeline span.b.dirty", state="attached")
    looks = page.evaluate("""() => {
        const bg = e => getComputedStyle(e).backgroundImage;
        return {dirty: [...document.querySelectorAll('#timeline span.b.dirty')].map(bg),
                clean: [...document.querySelectorAll('#timeline span.b:not(.dirty):not(.e):not(.p)')].map(bg),
                swatch: bg(document.querySelector('#legend .sw.dirty')),
                plain: bg(document.querySelector('#legend .sw.p'))}; }""")
    assert looks["dirty"] and looks["clean"], looks
    assert all("gradient" in b for b in looks["dirty"]), (page.scheme, set(looks["dirty"]))
    assert set(looks["clean"]) == {"none"}, (page.scheme, set(looks["clean"]))
    assert "gradient" in looks["swatch"] and looks["plain"] == "none", (page.scheme, looks["swatch"])
    assert_readable(page, ["#timeline", "#legend"], min_checked=10)
