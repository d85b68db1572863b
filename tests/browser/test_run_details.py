"""Details of a run that misled (issue #13, bugs 4-8 and 10): each in a real browser."""

import io
import json
import os
import re
import time
import zipfile

from contrast import contrast_report
from pagekit import FINAL, PREFIX, paste_and_parse, set_code, tab, wait_status

BASE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True,
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}


def test_both_parsers_failing_is_neutral_and_shows_both_errors(page):
    tpl = json.loads(json.dumps(BASE))
    tpl["fields"]["answer"] = {"open": "<answer>", "close": "</answer>", "optional": False}
    set_code(page, "template", json.dumps(tpl, indent=2))
    page.wait_for_selector("#tpl-ok")
    paste_and_parse(page, "Hmm.\n</think>\nNo answer block.<|im_end|>", PREFIX)
    badge = page.wait_for_selector("#check #both-error", timeout=60000)
    text = badge.inner_text()
    assert page.locator("#check #agree-badge").count() == 0, "an error both parsers report is not a success"
    assert "answer" in text and "transformers" in text and text.lower().count("answer") >= 2, text
    cls = badge.get_attribute("class")
    assert "badge-neutral" in cls and "badge-ok" not in cls


def test_a_failed_regions_delimiter_is_readable(scheme_page):
    page = scheme_page
    set_code(page, "template", json.dumps(BASE, indent=2))
    paste_and_parse(page, "Hmm.\n</think>\nHi<tool_call>\n{oops\n</tool_call><|im_end|>", PREFIX)
    page.wait_for_selector("#timeline span.d.e")
    report = contrast_report(page, ["#timeline span.d.e"])
    assert report["checked"] >= 1 and not report["failures"], report


def test_a_short_replay_takes_about_three_seconds(page):
    raw = "One two three four five six seven eight nine ten eleven.\n</think>\nAnswer.<|im_end|>"
    paste_and_parse(page, raw, PREFIX)
    n = int(page.evaluate("document.querySelectorAll('#timeline span.cs').length"))
    assert 15 <= n <= 40, n
    start = time.time()
    page.click("#replay")
    wait_status(page, "Replaying: done", timeout=30000)
    took = time.time() - start
    assert took >= 2.5, f"a {n}-chunk replay took {took:.2f} s; it should be paced to about 3 s"
    assert took < 12, took


def test_export_carries_nothing_of_this_machine(page):
    tab(page, "Export")
    page.click("#export")
    page.wait_for_selector("#export-result", timeout=60000)
    shown = page.inner_text("#export-status") + " " + page.inner_text("#status")
    assert "round-trips" in shown
    assert not re.search(r"(?<![\w.])/(tmp|work|home|root|var|usr)/", shown), shown
    assert os.getcwd() not in shown and "response-template-playground-exports" not in shown, shown
    with page.expect_download() as dl:
        page.click("#download")
    with zipfile.ZipFile(io.BytesIO(open(dl.value.path(), "rb").read())) as z:
        cfg = json.loads(z.read("tokenizer_config.json"))
        everything = " ".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
    assert "is_local" not in cfg and "local_files_only" not in cfg, sorted(cfg)
    assert "response_template" in cfg
    assert "/tmp/" not in everything and os.getcwd() not in everything


def test_values_of_the_wrong_json_type_are_flagged_but_parse_as_the_reference_does(page):
    tpl = json.loads(json.dumps(BASE))
    tpl["fields"]["tool_calls"]["repeats"] = "false"  # a string: transformers treats it as true
    tpl["fields"]["reasoning_content"]["optional"] = 0
    set_code(page, "template", json.dumps(tpl, indent=2))
    warn = page.wait_for_selector("#template-status .tpl-warn[data-path='fields.tool_calls.repeats']")
    assert "string" in warn.inner_text() and "true" in warn.inner_text()
    page.wait_for_selector("#template-status .tpl-warn[data-path='fields.reasoning_content.optional']")
    # the faulty lines are marked in the editor
    line = int(warn.get_attribute("data-line"))
    rows = json.dumps(tpl, indent=2).splitlines()
    assert '"repeats": "false"' in rows[line - 1]
    flagged = [i + 1 for i, row in enumerate(rows) if '"repeats": "false"' in row or '"optional": 0' in row]
    page.wait_for_function("""want => JSON.stringify(Array.from(document.querySelectorAll('#template .cm-content > .cm-line'))
        .map((l, i) => [i + 1, l]).filter(([i, l]) => !l.classList.contains('cm-activeLine')
            && !['rgba(0, 0, 0, 0)', 'transparent'].includes(getComputedStyle(l).backgroundColor))
        .map(([i]) => i)) === JSON.stringify(want)""", arg=flagged)
    # conformance: it still parses, as the reference does (a non-empty string is true: a list of calls)
    raw = ('Hmm.\n</think>\nHi<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call><tool_call>\n'
           '{"name": "b", "arguments": {}}\n</tool_call><|im_end|>')
    paste_and_parse(page, raw, PREFIX)
    page.wait_for_selector("#check #agree-badge", timeout=60000)
    tab(page, "Message")
    page.wait_for_function("document.querySelector('#message').innerText.includes('\"b\"')")
    # the Doctor's lint lists it too
    tab(page, "Doctor")
    page.click("#doctor-lint-btn")
    row = page.wait_for_selector("#doctor-lint .doctor-warning[data-code=wrong-type]", timeout=30000)
    assert "fields.tool_calls.repeats" in page.inner_text("#doctor-lint")
    assert "fields.reasoning_content.optional" in page.inner_text("#doctor-lint")
    assert row.is_visible()


def test_whitespace_chunks_are_visible_marks_in_the_event_log(page):
    raw = "Hmm.\n</think>\nA\n\n \tB<|im_end|>"
    set_code(page, "template", json.dumps(BASE, indent=2))
    paste_and_parse(page, raw, PREFIX)
    tab(page, "Event log")
    page.wait_for_selector("#events tr.ev-region_close")
    cells = page.evaluate("Array.from(document.querySelectorAll('#events tr.ev-region_chunk td.t'))"
                          ".map(td => td.innerText)")
    assert cells and all(c.strip() for c in cells), cells  # no blank cell
    joined = "".join(cells)
    assert "↵" in joined and "␣" in joined and "⇥" in joined, cells
    assert "\n" not in joined, "a newline in the text drew as a real line break"
    page.wait_for_selector(FINAL)
