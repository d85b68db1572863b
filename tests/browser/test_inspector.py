"""Click-to-inspect, as in regex101: the timeline, the legend, the editor and the event log point at each other."""

import json
import re

from contrast import assert_readable
from pagekit import FINAL, PREFIX, RAW, code_text, paste_and_parse, tab


def _inspector(page):
    page.wait_for_selector("#inspector .insp")
    return page.evaluate("() => { const e = document.querySelector('#inspector .insp');"
                         " return Object.assign({text: e.innerText}, e.dataset); }")


def _wait_inspected(page, **want):
    page.wait_for_function("w => { const e = document.querySelector('#inspector .insp');"
                           " return e && Object.entries(w).every(([k, v]) => e.dataset[k] === v); }", arg=want)
    return _inspector(page)


def test_clicking_the_timeline_pins_the_details(page):
    paste_and_parse(page, RAW, PREFIX)
    # a delimiter: its field, the open event, the chunk, the template's pattern, the region's final value
    page.click("#timeline span.d:text-is('<tool_call>')")
    info = _wait_inspected(page, field="tool_calls", kind="delimiter")
    start = RAW.index("<tool_call>") + len("<think>\n")
    assert info["start"] == str(start) and info["end"] == str(start + len("<tool_call>"))
    text = info["text"]
    assert "region_open" in text and "open delimiter" in text
    spec = json.loads(code_text(page, "template"))["fields"]["tool_calls"]
    assert json.dumps(spec.get("open", spec.get("open_pattern"))) in text  # the pattern, as the template writes it
    assert "get_weather" in text and "Paris" in text  # the region's final value
    assert "chunk " in text and info["chunk"].isdigit()
    # a body character of the dirty JSON: its region_chunk event, dirty, the same region value
    page.locator("#timeline span.b.dirty[data-f=tool_calls]").filter(has_text=re.compile(r"\w")).first.click()
    info = _wait_inspected(page, field="tool_calls", kind="body")
    assert info["dirty"] == "true" and "region_chunk" in info["text"] and "dirty" in info["text"]
    # the events table keeps each word whole: no cell wraps onto a second line ("region_chun/k")
    wrapped = page.evaluate("() => [...document.querySelectorAll('#inspector .insp-events td')]"
                            ".filter(td => td.getClientRects().length && td.scrollHeight > 1.6 * "
                            "parseFloat(getComputedStyle(td).lineHeight || 16)).map(td => td.innerText)")
    assert wrapped == [], wrapped
    # plain content: clean, its own final value
    page.click("#timeline span.b[data-f=content] >> nth=-1")
    info = _wait_inspected(page, field="content", kind="body")
    assert info["dirty"] == "false" and "Checking <b>now</b>." in info["text"]
    # text from the prompt prefix says so
    page.click("#timeline span.p >> nth=0")
    info = _wait_inspected(page, kind="delimiter", field="reasoning_content")
    assert "prompt prefix" in info["text"]


def test_the_events_table_fits_the_inspector_in_both_schemes(scheme_page):
    """Trial 10: the inspector's events table ran past its pane's right edge ("#2 region_chunk stream 11–12 clea")
    at 1400 px. A row wider than the pane wraps between its cells; no cell is cut, none breaks a word, all readable."""
    page = scheme_page
    paste_and_parse(page, RAW, PREFIX)
    page.locator("#timeline span.b.dirty[data-f=tool_calls]").filter(has_text=re.compile(r"\w")).first.click()
    _wait_inspected(page, field="tool_calls", kind="body")
    cells = page.evaluate("""() => { const lines = el => { const range = document.createRange();
            range.selectNodeContents(el);
            return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size; };
        return [...document.querySelectorAll('#inspector .insp-events td')]
        .filter(td => td.getClientRects().length).map(td => { const r = td.getBoundingClientRect(),
            box = td.closest('dd').getBoundingClientRect();
            return {text: td.innerText, cut: r.right > box.right + 0.5 || r.left < box.left - 0.5,
                    lines: lines(td)}; }); }""")
    assert any(c["text"] == "region_chunk" for c in cells), cells
    assert [c for c in cells if c["cut"] or c["lines"] > 1] == [], cells
    assert_readable(page, ["#inspector .insp-events"])


def test_a_captured_group_is_shown():
    """Captures come from the parser's delimiter record: checked on the rendered panel without a browser."""
    from playground import inspector
    from playground.session import Run, parse_run

    tpl = {"start_anchor_pattern": "^", "fields": {
        "tool_calls": {"open_pattern": r"<call name=\"(?P<name>\w+)\">", "close": "</call>", "repeats": True,
                       "transform": {"name": "{name}", "arguments": "{content}"}, "content": "json"},
        "content": {}}}
    raw = 'Hi <call name="get_time">{"tz": "UTC"}</call>'
    view = parse_run(Run(chunks=[raw], template_text=json.dumps(tpl)))
    x = raw.index("<call")
    html = inspector.details_html(view, json.dumps(tpl), x)
    assert 'name' in html and "get_time" in html and "open_pattern" in html
    assert 'data-kind="delimiter"' in html and 'data-field="tool_calls"' in html


def test_legend_and_editor_keys_highlight_their_regions(page):
    paste_and_parse(page, RAW, PREFIX)
    page.hover("#legend .sw[data-f=reasoning_content]")
    page.wait_for_selector("#timeline span.hl")
    fields = page.evaluate("Array.from(document.querySelectorAll('#timeline span.hl')).map(s => s.dataset.f)")
    assert fields and set(fields) == {"reasoning_content"}
    page.mouse.move(0, 0)
    page.wait_for_function("!document.querySelector('#timeline span.hl')")
    # the field's key in the editor
    key = page.locator("#template .cm-line span", has_text='"tool_calls"').first
    key.hover()
    page.wait_for_selector("#timeline span.hl")
    fields = page.evaluate("Array.from(document.querySelectorAll('#timeline span.hl')).map(s => s.dataset.f)")
    assert set(fields) == {"tool_calls"}
    assert '"tool_calls"' in code_text(page, "template")


def test_event_rows_and_timeline_spans_select_each_other(page):
    raw = "".join(f"step {i}\n" for i in range(80)) + "</think>\nThe end.<|im_end|>"
    paste_and_parse(page, raw, PREFIX)
    tab(page, "Event log")
    page.wait_for_selector("#events tr.ev-region_close")
    box = page.locator("#timeline .tl")
    assert page.evaluate("() => { const t = document.querySelector('#timeline .tl');"
                         " return t.scrollHeight > t.clientHeight + 50; }"), "the timeline should scroll"
    # the last content chunk's row: the timeline scrolls to it and marks it
    page.click("#events tr.ev-region_close[data-f=content]")
    page.wait_for_selector("#timeline span.sel")
    visible = page.evaluate("""() => { const t = document.querySelector('#timeline .tl').getBoundingClientRect();
        return Array.from(document.querySelectorAll('#timeline span.sel')).some(s => {
            const r = s.getBoundingClientRect(); return r.top >= t.top - 1 && r.bottom <= t.bottom + 1; }); }""")
    assert visible, "the selected span is not scrolled into view"
    assert set(page.evaluate("Array.from(document.querySelectorAll('#timeline span.sel')).map(s => s.dataset.f)")) \
        == {"content"}
    # a span near the top: the rows of its events are selected in the log
    box.evaluate("t => t.scrollTop = 0")
    page.click("#timeline span.b[data-f=reasoning_content] >> nth=3")
    page.wait_for_selector("#events tr.sel")
    rows = page.evaluate("Array.from(document.querySelectorAll('#events tr.sel')).map(r => [r.dataset.f, r.className])")
    assert rows and all(f == "reasoning_content" for f, _ in rows) and any("region_chunk" in c for _, c in rows)
    _wait_inspected(page, field="reasoning_content", kind="body")
    page.wait_for_selector(FINAL)
