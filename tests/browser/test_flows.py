"""Every playground flow in a real browser (Debian Chromium), against the app running in-process."""

import io
import json
import re
import time
import zipfile

from conftest import open_app
from pagekit import (CALLING, FINAL, PREFIX, RAW, code_text, paste_and_parse, set_code, set_max_tokens, set_number,
                     wait_status, wait_text)


def message_json(page, expect=None):
    """The Message tab's text; with ``expect``, first wait until it contains that text."""
    page.click("button[role=tab]:has-text('Message')")
    if expect is not None:
        page.wait_for_function("t => document.querySelector('#message').innerText.includes(t)", arg=expect)
    return page.inner_text("#message")


def test_example_replay(page):
    page.click("button[role=tab]:has-text('Examples')")
    page.wait_for_selector("#example-replay")
    page.click("#example-replay")
    wait_status(page, "done", timeout=30000)
    page.wait_for_selector(FINAL)
    # the family template was loaded into the editor, and the stream is coloured by field
    assert '"fields"' in code_text(page, "template")
    assert page.locator("#timeline span[data-f]").count() > 0
    assert page.locator("#timeline span.cs").count() > 1  # several chunks
    assert page.locator("#legend .sw").count() >= 2
    page.wait_for_selector("#check #agree-badge")


def test_live_generation_and_stop(page, app_url):
    from playground import backends

    set_max_tokens(page, 20000)
    page.fill("#user-input textarea", "Tell me a very long story")
    page.click("#send")
    page.wait_for_selector("#timeline .tl[data-status=streaming] span.cs", timeout=60000)
    assert backends.active_generations() >= 1
    # Clear and Load model would contradict the run (an orphan turn in an emptied chat; "Loaded" while the old
    # model streams): off while it goes, like Send
    for button in ("#send", "#clear", "#load-model"):
        assert page.is_disabled(button), button
    page.click("#stop")
    wait_status(page, "Stopped", timeout=30000)
    page.wait_for_selector(FINAL)
    deadline = time.time() + 10
    while backends.active_generations() and time.time() < deadline:
        time.sleep(0.1)
    assert backends.active_generations() == 0, "generate kept running after Stop"
    n = int(page.get_attribute("#timeline .tl", "data-len"))
    assert n < 20000
    for button in ("#send", "#clear", "#load-model"):
        page.wait_for_selector(f"{button}:not([disabled])", timeout=10000)
    # the prompt opened <think>: its initial event shows in the log as a prefix event
    page.click("button[role=tab]:has-text('Event log')")
    assert page.locator("#events td:text-is('prefix')").count() >= 1
    # the conversation continues with a tool result, once the template reads the stopped turn as a tool call
    # (a tool result answering no tool call is refused: test_page_state.py)
    set_code(page, "template", json.dumps(CALLING, indent=2))
    wait_text(page, "#chatbot", "Tool call: echo")
    set_max_tokens(page, 8)
    # The random model may have written <|im_end|> inside the stopped turn, and CALLING reads one call per
    # <|im_end|>: answer every call, one result each; the model answers after the last one.
    for k in range(1, n + 2):
        page.fill("#tool-result textarea", '{"temperature": 21}')
        page.click("#send-tool-result")
        page.wait_for_function("k => { const t = document.querySelector('#status').innerText; "
                               "return t.includes(`Tool result ${k} of `) || t.includes('Done'); }",
                               arg=k, timeout=60000)
        if "Done" in page.inner_text("#status"):
            break
    wait_status(page, "Done", timeout=60000)
    page.wait_for_function("document.querySelector('#chatbot').innerText.includes('Tool result')")
    assert page.locator("#chatbot .message-row, #chatbot [data-testid=user]").count() >= 2


# The editor's lines drawn with a background, each named by the line number the gutter shows beside it.
MARKED_LINES = """() => {
    const nums = Array.from(document.querySelectorAll('#template .cm-lineNumbers .cm-gutterElement'));
    return Array.from(document.querySelectorAll('#template .cm-content > .cm-line'))
        .filter(l => !l.classList.contains('cm-activeLine')
                     && !['rgba(0, 0, 0, 0)', 'transparent'].includes(getComputedStyle(l).backgroundColor))
        .map(l => { const y = l.getBoundingClientRect().top + 1;
                    const g = nums.find(e => { const r = e.getBoundingClientRect(); return r.top <= y && y < r.bottom; });
                    return g ? +g.textContent : null; });
}"""


def scroll_editor_to_line(page, n):
    """Scroll the editor until the gutter shows line ``n``."""
    page.wait_for_function("""n => { const sc = document.querySelector('#template .cm-scroller');
        const g = Array.from(document.querySelectorAll('#template .cm-lineNumbers .cm-gutterElement'))
            .find(e => e.textContent === String(n));
        if (g) { const r = g.getBoundingClientRect(), s = sc.getBoundingClientRect();
                 if (r.top >= s.top && r.bottom <= s.bottom) return true; }
        sc.scrollTop += (g ? g.getBoundingClientRect().top - sc.getBoundingClientRect().top - 40 : (n < 50 ? -400 : 400));
        return false; }""", arg=n, polling=100, timeout=20000)


def json_fault_line(text):
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return e.lineno
    raise AssertionError("the text is valid JSON")


def test_a_long_templates_faulty_line_is_the_one_marked(page):
    # CodeMirror draws only the lines near its viewport: in a long text the faulty line must still be the one
    # marked, and no other line may be marked in its place
    spec = json.loads(code_text(page, "template"))
    text = json.dumps(spec, indent=2)
    lines = text.splitlines()
    at = next(i for i, row in enumerate(lines) if '"fields"' in row)
    # a fault far down (a trailing comma after many blank lines)
    broken_far = "\n".join(lines[:1] + [""] * 300 + lines[1:]).replace('"fields": {', '"fields": {,', 1)
    set_code(page, "template", broken_far)
    line = json_fault_line(broken_far)
    assert line > 300
    page.wait_for_selector(f"#tpl-error[data-line='{line}']")
    scroll_editor_to_line(page, line)
    page.wait_for_function(f"() => ({MARKED_LINES})().length > 0")
    assert page.evaluate(MARKED_LINES) == [line]
    # a fault near the top, the editor showing the end of a long text: the faulty line is not drawn, so no line
    # is marked; scrolled back to it, it is
    broken_top = "\n".join(lines[:at] + [""] * 300 + lines[at:]).replace('"role": "assistant"', '"role": "assistant",', 1)
    set_code(page, "template", broken_top)
    line = json_fault_line(broken_top)
    assert line < 10
    page.wait_for_selector(f"#tpl-error[data-line='{line}']")
    scroll_editor_to_line(page, broken_top.count("\n") + 1)
    assert page.evaluate(MARKED_LINES) == []
    scroll_editor_to_line(page, line)
    page.wait_for_function(f"() => ({MARKED_LINES})().length > 0")
    assert page.evaluate(MARKED_LINES) == [line]


def test_broken_template_shows_error_then_fix_reparses(page):
    paste_and_parse(page, RAW, PREFIX)
    message_json(page, "Let me check.")
    good = code_text(page, "template")
    spec = json.loads(good)
    # 1. a regex that does not compile: error with JSON path and line, nothing crashes
    broken = dict(spec)
    pattern = "\\s*\u00e9<think>(x"  # written \\s*\u00e9 in the JSON text: the fault's column is past the escapes
    broken["fields"] = dict(spec["fields"], reasoning_content={"open_pattern": pattern, "close": "</think>"})
    set_code(page, "template", json.dumps(broken, indent=2))
    page.wait_for_function("document.querySelector('#tpl-error') && "
                           "document.querySelector('#tpl-error').dataset.path === "
                           "'fields.reasoning_content.open_pattern'")
    line = int(page.get_attribute("#tpl-error", "data-line"))
    row = json.dumps(broken, indent=2).splitlines()[line - 1]
    assert "open_pattern" in row
    # the faulty line is marked in the editor itself
    marked = page.evaluate("n => getComputedStyle(document.querySelectorAll('#template .cm-content > .cm-line')"
                           "[n - 1]).backgroundColor", line)
    assert marked == "rgb(254, 202, 202)"
    # ... and in it the character where the pattern goes wrong (the unclosed `(`), with a CSS highlight
    page.wait_for_function("() => CSS.highlights.has('tpl-fault')")
    fault = page.evaluate("""() => {
        const r = [...CSS.highlights.get('tpl-fault')][0];
        const line = r.startContainer.parentElement.closest('.cm-line');
        const before = document.createRange();
        before.setStart(line, 0);
        before.setEnd(r.startContainer, r.startOffset);
        return {text: r.toString(), line: [...line.parentElement.children].indexOf(line) + 1,
                column: before.toString().length + 1};
    }""")
    assert fault == {"text": "(", "line": line, "column": row.index("(") + 1}
    assert "Let me check." in page.inner_text("#timeline")  # the last good parse is still drawn
    # 2. JSON syntax error is shown with its line too
    set_code(page, "template", '{\n  "fields": {,\n}')
    page.wait_for_function("document.querySelector('#tpl-error') && "
                           "document.querySelector('#tpl-error').dataset.line === '2'")
    page.wait_for_function("() => !CSS.highlights.has('tpl-fault')")  # no regex fault now: no character marked
    # 3. fix it with a renamed field: the last raw output is re-parsed at once, without generating
    fixed = dict(spec)
    fixed["fields"] = dict(spec["fields"])
    fixed["fields"]["thoughts"] = fixed["fields"].pop("reasoning_content")
    set_code(page, "template", json.dumps(fixed, indent=2))
    page.wait_for_selector("#timeline span[data-f=thoughts]")
    page.wait_for_selector("#tpl-ok")
    assert "chat templates read 'reasoning_content'" in page.inner_text("#template-status")
    message_json(page, '"thoughts"')
    # 4. replay re-streams the same chunks with the fixed template
    page.click("#replay")
    wait_status(page, "Replaying: done", timeout=30000)
    assert page.locator("#timeline span[data-f=thoughts]").count() >= 1


def test_paste_mode_and_hostile_text(page):
    raw = '<script>window.__pwned = 1</script>\n</think>\nAnswer & <img src=x onerror="window.__pwned=2"><|im_end|>'
    paste_and_parse(page, raw, PREFIX)
    txt = page.inner_text("#timeline .tl")
    assert "<script>window.__pwned = 1</script>" in txt
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#timeline span.d").count() >= 2  # delimiters drawn as tags
    assert page.locator("#timeline span.p").count() >= 1  # text from the prefix
    # a broken tool call is flagged on the timeline, the rest still shows
    paste_and_parse(page, 'ok\n</think>\nHi<tool_call>\n{oops\n</tool_call><|im_end|>', PREFIX)
    page.wait_for_selector("#timeline .tl-err")
    assert page.locator("#timeline span.e").count() >= 1
    assert '"Hi"' in message_json(page, '"content"')  # the rest of the message still parsed
    # replay of pasted text streams
    page.click("#paste-replay")
    wait_status(page, "done", timeout=30000)


def test_export_download_contains_template(page):
    page.click("button[role=tab]:has-text('Export')")
    page.click("#export")
    page.wait_for_selector("#export-result", timeout=60000)
    assert "round-trips" in page.inner_text("#export-status")
    with page.expect_download() as dl:
        page.click("#download")
    data = open(dl.value.path(), "rb").read()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        cfg = json.loads(z.read("tokenizer_config.json"))
    assert cfg["response_template"] == json.loads(code_text(page, "template"))


def test_two_sessions_stream_at_once_without_mixing(browser, app_url):
    ctx_a, a = open_app(browser, app_url)
    ctx_b, b = open_app(browser, app_url)
    try:
        for pg, word in ((a, "ALPHA"), (b, "BRAVO")):
            pg.click("button[role=tab]:has-text('Paste')")
            pg.fill("#paste-raw textarea", f"{word} thinks.\n</think>\n" + f"{word} says hi. " * 60 + "<|im_end|>")
            pg.fill("#paste-prefix textarea", PREFIX)
        a.click("#paste-replay")
        b.click("#paste-replay")
        a.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=30000)
        b.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=30000)
        for pg in (a, b):
            wait_status(pg, "done", timeout=60000)
        ta, tb = a.inner_text("#timeline .tl"), b.inner_text("#timeline .tl")
        assert "ALPHA" in ta and "BRAVO" not in ta
        assert "BRAVO" in tb and "ALPHA" not in tb
        # live generation in both at once: each conversation keeps its own turns
        for pg, word in ((a, "first-user"), (b, "second-user")):
            pg.click("button[role=tab]:has-text('Chat')")
            set_max_tokens(pg, 40)
            pg.fill("#user-input textarea", word)
        a.click("#send")
        b.click("#send")
        for pg in (a, b):
            wait_status(pg, "Done", timeout=60000)
        ca, cb = a.inner_text("#chatbot"), b.inner_text("#chatbot")
        assert "first-user" in ca and "second-user" not in ca
        assert "second-user" in cb and "first-user" not in cb
    finally:
        ctx_a.close()
        ctx_b.close()


def test_model_failures_are_readable_messages(page):
    page.fill("#model-box textarea, #model-box input", "no-such-org/no-such-model")
    page.click("#load-model")
    wait_status(page, "Could not load", timeout=60000)
    assert "Traceback" not in page.inner_text("body")
    # the failed load leaves the model in use as it was: Send generates with it and does not retry the bad id
    # (test_page_state.py); with no model at all, Send says so and keeps the message (test_page_state.py too)
    assert "Still using" in page.inner_text("#status")


def test_library_dropdown_loads_a_template_and_window_moves(page):
    from examples import list_families, load_family

    fam = list_families()[-1]
    page.click("#library-template input")
    page.keyboard.press("Control+a")
    page.keyboard.type(fam)
    page.keyboard.press("Enter")
    wait_status(page, f"library template for {fam}")
    page.wait_for_function("t => Array.from(document.querySelectorAll('#template .cm-line'))"
                           ".map(l => l.textContent).join('\\n').includes(t)",
                           arg=json.dumps(list(load_family(fam).template["fields"])[0]))
    assert json.loads(code_text(page, "template")) == load_family(fam).template
    # a long pasted output shows its end; "Timeline from" moves the window to its start
    paste_and_parse(page, "HEAD " + "x" * 9000 + " TAIL")
    assert "TAIL" in page.inner_text("#timeline .tl") and "HEAD" not in page.inner_text("#timeline .tl")
    page.fill("#timeline-from input, #timeline-from textarea", "0")
    page.press("#timeline-from input, #timeline-from textarea", "Enter")
    page.wait_for_function("document.querySelector('#timeline .tl').innerText.startsWith('HEAD')")


def test_demo_round_trip_with_builtin_model(page):
    """The demo a newcomer sees: the built-in model (chosen in this session only, greedy) is sent
    the example message, calls get_weather for the city asked about, is sent the example tool
    result, and answers with that result's values."""
    import pytest

    from examples import builtin_model

    if not builtin_model.available():
        pytest.skip("the built-in model has not been trained into examples/builtin_model/model")
    result = json.loads(builtin_model.DEMO_TOOL_RESULT)
    page.fill("#model-box textarea, #model-box input", builtin_model.MODEL_DIR)
    page.click("#load-model")
    wait_status(page, "Loaded", timeout=60000)
    set_max_tokens(page, 160)
    set_number(page, "temperature", 0, key="Enter")
    page.click(f"#demo-prompts >> text={builtin_model.DEMO_PROMPTS[0]}")
    page.wait_for_function("v => document.querySelector('#user-input textarea').value === v",
                           arg=builtin_model.DEMO_PROMPTS[0], timeout=10000)
    page.click("#send")
    wait_status(page, "A tool was called", timeout=120000)
    page.wait_for_selector(FINAL)
    call = json.loads(message_json(page))["tool_calls"]
    assert [c["function"] for c in call] == [{"name": "get_weather", "arguments": {"city": result["city"]}}], call
    page.wait_for_selector("#check #agree-badge")
    page.click("#demo-tool-result >> text=temperature")
    page.wait_for_function("v => document.querySelector('#tool-result textarea').value === v",
                           arg=builtin_model.DEMO_TOOL_RESULT, timeout=10000)
    page.click("#send-tool-result")
    # "Done" alone is not enough: the status after the call already said "Done: ... A tool was called"
    page.wait_for_function("() => { const s = document.querySelector('#status').innerText;"
                           " return s.includes('Done') && !s.includes('A tool was called'); }", timeout=120000)
    page.wait_for_function("() => document.querySelector('#chatbot').innerText.includes('Tool result')")
    page.wait_for_selector(FINAL)
    # the Message view shows strings unescaped (the reasoning quotes the JSON result), so read
    # the content field's text rather than parsing the view as JSON
    shown = message_json(page)
    assert '"tool_calls"' not in shown, shown
    content = re.search(r'"content"\s*:\s*"(.*)"\s*\}\s*$', shown, re.S)
    assert content, shown
    for value in (result["city"], str(result["temperature"]), result["condition"]):
        assert value in content.group(1), shown
