"""The Doctor tab in a real browser (Debian Chromium): lint, run checks, round trip, suite save/run/export.

Uses the app and browser fixtures of tests/browser/conftest.py (the app runs in-process on the tiny local
model, whose chat template renders reasoning_content and tool_calls).
"""

import json

from parsing.doctor.suites import loads_suite

RAW = 'Answer.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<|im_end|>'
PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
FIXED = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"},
        # The call closes only where the quotes since <tool_call> balance (lint's close-in-json flags a plain close).
        "tool_calls": {"open": "<tool_call>",
                       "close_pattern": r'(?<=<tool_call>(?:[^"\\<]|"(?:[^"\\]|\\.)*")*)</tool_call>',
                       "content": "json", "repeats": True,
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}
TRUE_MESSAGE = {"role": "assistant", "content": "Answer.", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}


def set_code(page, elem_id, text):
    page.click(f"#{elem_id} .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def open_doctor(page):
    page.click("button[role=tab]:has-text('Doctor')")
    page.wait_for_selector("#doctor-lint-btn")


def paste_and_parse(page, raw, prefix):
    page.click("button[role=tab]:has-text('Paste')")
    page.fill("#paste-raw textarea", raw)
    page.fill("#paste-prefix textarea", prefix)
    page.click("#paste-parse")
    page.wait_for_selector("#timeline .tl[data-status=final]", timeout=30000)


def test_lint_lists_warnings_with_paths_fixes_and_compatibility(page):
    set_code(page, "template", json.dumps({**FIXED, "fields": {**FIXED["fields"], "content": {"close": "<|im_end|>"}}},
                                          indent=2))
    open_doctor(page)
    page.click("#doctor-lint-btn")
    row = page.wait_for_selector("#doctor-lint .doctor-warning[data-code=field-overwrite]", timeout=30000)
    text = row.inner_text()
    assert "fields.content" in text and "Fix:" in text and '"repeats": true' in text
    vllm = page.inner_text("#doctor-lint .doctor-compat[data-target=vllm]")
    assert "NO" in vllm and "thinking" in vllm
    assert "OK" in page.inner_text("#doctor-lint .doctor-compat[data-target=transformers]")
    # Apply the fix: the warning goes away.
    set_code(page, "template", json.dumps(FIXED, indent=2))
    page.click("#doctor-lint-btn")
    page.wait_for_selector("#doctor-lint .doctor-note-pass", timeout=30000)
    assert page.locator("#doctor-lint .doctor-warning").count() == 0
    # A broken template is a message, not a crash.
    set_code(page, "template", '{"fields": ')
    page.click("#doctor-lint-btn")
    page.wait_for_selector("#doctor-lint .doctor-note-error", timeout=30000)


def test_run_checks_after_a_parse_and_round_trip(page):
    set_code(page, "template", json.dumps({**FIXED, "fields": {**FIXED["fields"], "content": {"close": "<|im_end|>"}}},
                                          indent=2))
    paste_and_parse(page, RAW, PREFIX)
    open_doctor(page)
    # The checks ran by themselves after the parse: the overwrite shows both values.
    finding = page.wait_for_selector("#doctor-checks .doctor-finding[data-code=overwrite]", timeout=30000)
    assert '"Answer."' in finding.inner_text() and '""' in page.inner_text("#doctor-checks .doctor-value")
    assert '"Answer."' in page.inner_text("#doctor-checks .doctor-previous")
    # Editing the template re-checks the same run: with the fix nothing is overwritten.
    set_code(page, "template", json.dumps(FIXED, indent=2))
    page.wait_for_selector("#doctor-checks .doctor-note-pass", timeout=30000)
    # A truncated run: the open region is reported.
    paste_and_parse(page, "<think>Let me think ab", PREFIX)
    open_doctor(page)
    page.wait_for_selector("#doctor-checks .doctor-finding[data-code=open-at-end]", timeout=30000)
    page.click("#doctor-checks-btn")
    page.wait_for_selector("#doctor-checks .doctor-finding[data-code=open-at-end]", timeout=30000)
    # Round trip with the tiny model's chat template: five samples, each PASS or FAIL with details.
    page.click("#doctor-roundtrip-btn")
    page.wait_for_selector("#doctor-roundtrip .doctor-rt-case", timeout=60000)
    cases = page.locator("#doctor-roundtrip .doctor-rt-case")
    assert cases.count() == 5
    names = [cases.nth(i).get_attribute("data-case") for i in range(5)]
    assert names == ["content", "reasoning+content", "tool call", "parallel tool calls", "truncated"]
    assert page.locator("#doctor-roundtrip .doctor-rt-pass").count() == 5
    # Rename the reasoning field: the reasoning sample fails and shows its diff.
    broken = json.loads(json.dumps(FIXED))
    broken["fields"]["thinking"] = broken["fields"].pop("reasoning_content")
    set_code(page, "template", json.dumps(broken, indent=2))
    page.click("#doctor-roundtrip-btn")
    failed = page.wait_for_selector("#doctor-roundtrip .doctor-rt-fail[data-case='reasoning+content']",
                                    timeout=60000)
    text = failed.inner_text()
    assert "reasoning_content" in text and "missing" in text and "thinking" in text


def test_suite_save_run_export(page, tmp_path):
    set_code(page, "template", json.dumps({**FIXED, "fields": {**FIXED["fields"], "content": {"close": "<|im_end|>"}}},
                                          indent=2))
    paste_and_parse(page, RAW, PREFIX)
    open_doctor(page)
    # Case 1: the true message, typed by the author. Case 2: whatever the template parses now.
    page.fill("#doctor-expected textarea", json.dumps(TRUE_MESSAGE))
    page.fill("#doctor-case-name textarea", "content survives a trailing newline")
    page.click("#doctor-save-case")
    page.wait_for_function("() => document.querySelector('#doctor-suite textarea').value.trim().length > 0")
    page.fill("#doctor-expected textarea", "")
    page.fill("#doctor-case-name textarea", "")
    page.click("#doctor-fill-expected")
    page.wait_for_function("() => document.querySelector('#doctor-expected textarea').value.includes('tool_calls')")
    assert "Answer." not in page.input_value("#doctor-expected textarea")  # the overwrite lost it
    page.fill("#doctor-expected textarea", "")
    page.click("#doctor-save-case")
    page.wait_for_function(
        "() => document.querySelector('#doctor-suite textarea').value.trim().split('\\n').length === 2")
    cases = loads_suite(page.input_value("#doctor-suite textarea"))
    assert [c.name for c in cases] == ["content survives a trailing newline", None]
    assert cases[0].prefix == PREFIX and cases[0].output == RAW and cases[0].expected == TRUE_MESSAGE
    # Run it: the first case fails (content lost, one-shot and chunked); the second passes.
    page.click("#doctor-run-suite")
    page.wait_for_selector("#doctor-suite-report .doctor-summary", timeout=30000)
    assert "2 cases: 1 passed, 1 failed" in page.inner_text("#doctor-suite-report .doctor-summary")
    fail = page.inner_text("#doctor-suite-report .doctor-suite-fail")
    assert "#1 content survives" in fail and "content" in fail and "missing" in fail
    # Fix the template: case 1 passes; case 2 recorded the buggy parse, so now it is the one that fails.
    set_code(page, "template", json.dumps(FIXED, indent=2))
    page.click("#doctor-run-suite")
    page.wait_for_function(
        "() => (document.querySelector('#doctor-suite-report .doctor-suite-fail') || {innerText: ''})"
        ".innerText.includes('#2')", timeout=30000)
    assert "#1 content survives" in page.inner_text("#doctor-suite-report .doctor-suite-pass")
    fail = page.inner_text("#doctor-suite-report .doctor-suite-fail")
    assert "content" in fail and "extra" in fail and "Answer." in fail
    # Export: the template and the suite, side by side.
    page.click("#doctor-export")
    page.wait_for_selector("#doctor-export-files a", timeout=30000)
    links = {a.get_attribute("href").rsplit("/", 1)[-1]: a for a in page.query_selector_all("#doctor-export-files a")
             if a.get_attribute("href")}
    assert {"response_template.json", "response_template.cases.jsonl"} <= set(links), links
    with page.expect_download() as info:
        links["response_template.cases.jsonl"].click()
    exported = loads_suite(open(info.value.path(), encoding="utf-8").read())
    assert [c.expected for c in exported] == [c.expected for c in cases]
    # Upload a suite file: it replaces the editor's suite.
    path = tmp_path / "other.cases.jsonl"
    path.write_text(json.dumps({"prefix": PREFIX, "output": "Hi.<|im_end|>",
                                "expected": {"role": "assistant", "content": "Hi."}}) + "\n")
    page.set_input_files("#doctor-suite-upload input[type=file]", str(path))
    page.wait_for_function("() => document.querySelector('#doctor-suite textarea').value.includes('Hi.')",
                           timeout=30000)
    page.click("#doctor-run-suite")
    page.wait_for_function("() => document.querySelector('#doctor-suite-report').innerText.includes('1 case: 1 passed')",
                           timeout=30000)


def test_probes_run_on_the_editor_template_with_its_family_prompts(page):
    from examples import load_family

    set_code(page, "template", json.dumps(load_family("qwen3").template, indent=2))
    open_doctor(page)
    page.click("#doctor-probe-btn")
    page.wait_for_selector("#doctor-probe .probe-report", timeout=60000)
    text = page.inner_text("#doctor-probe")
    assert "qwen3 family's prompts" in text and "0 fail" in text
    assert page.query_selector_all("#doctor-probe .probe-class") and "Traceback" not in text
    # the guide's naive template: failures with a checked change, shown per probe
    set_code(page, "template", json.dumps({**FIXED, "fields": {**FIXED["fields"],
                                                               "content": {"close": "<|im_end|>"}}}, indent=2))
    page.click("#doctor-probe-btn")
    page.wait_for_selector("#doctor-probe details[data-probe='a.reasoning_cut_by_end_of_turn']", timeout=60000)
    assert "Suggested change" in page.inner_text("#doctor-probe")
