"""One consistent state per session: the editor, the library picker, the chat, the model and the status line
never contradict each other (issue #13, bugs 2, 3 and 9), in a real browser."""

import json

import pytest

from conftest import launch, open_app
from pagekit import (CALLING, PLAIN, code_text, pick_library, send, set_code, set_max_tokens, set_number, tab,
                     wait_code, wait_status, wait_text)


def _library(name):
    from examples import load_family

    return load_family(name).template


def test_repicking_a_library_template_after_an_edit_asks_then_restores_it(page):
    qwen3 = _library("qwen3")
    pick_library(page, "qwen3")
    wait_code(page, "template", qwen3)
    wait_status(page, "qwen3")
    edited = json.loads(json.dumps(qwen3))
    edited["defaults"] = {"role": "assistant", "edited": "yes"}
    set_code(page, "template", json.dumps(edited, indent=2))
    # the page no longer claims the editor holds qwen3's template as loaded
    wait_text(page, "#template-status", "edited")
    assert "Loaded the library template for qwen3" not in page.inner_text("#status")
    # picking qwen3 again asks before replacing the edits
    pick_library(page, "qwen3")
    page.wait_for_selector("#confirm-replace", state="visible")
    assert "qwen3" in page.inner_text("#confirm-replace")
    assert json.loads(code_text(page, "template")) == edited
    page.click("#confirm-keep")
    page.wait_for_selector("#confirm-replace", state="hidden")
    assert json.loads(code_text(page, "template")) == edited
    wait_text(page, "#template-status", "edited")
    # ... and replaces them once confirmed
    pick_library(page, "qwen3")
    page.wait_for_selector("#confirm-replace", state="visible")
    page.click("#confirm-yes")
    wait_code(page, "template", qwen3)
    page.wait_for_selector("#confirm-replace", state="hidden")
    wait_status(page, "qwen3")
    assert "edited" not in page.inner_text("#template-status")


def test_an_example_replay_names_its_family_in_the_library_picker(page):
    from examples import list_families

    families = list_families()
    first, other = families[-1], "qwen3" if families[-1] != "qwen3" else families[0]
    pick_library(page, first)
    wait_code(page, "template", _library(first))
    tab(page, "Examples")
    page.click("#example-family input")
    page.keyboard.press("Control+a")
    page.keyboard.type(other)
    page.keyboard.press("Enter")
    page.wait_for_function("f => document.querySelector('#example-family input').value === f", arg=other)
    page.click("#example-replay")
    wait_status(page, "done", timeout=60000)
    wait_code(page, "template", _library(other))
    page.wait_for_function("f => document.querySelector('#library-template input').value.startsWith(f)", arg=other)
    assert not page.input_value("#library-template input").startswith(first)


def test_an_edit_that_removes_the_tool_call_updates_the_chat_and_refuses_tool_results(page):
    set_code(page, "template", json.dumps(CALLING, indent=2))
    page.wait_for_selector("#tpl-ok")
    set_max_tokens(page, 8)
    send(page, "hi")
    wait_status(page, "A tool was called", timeout=60000)
    wait_text(page, "#chatbot", "Tool call: echo")
    # the tool call is no longer parsed: the chat shows the parse under the edited template, and stops asking
    set_code(page, "template", json.dumps(PLAIN, indent=2))
    page.wait_for_function("!document.querySelector('#chatbot').innerText.includes('Tool call')")
    assert "A tool was called" not in page.inner_text("#status")
    # a tool result now answers nothing: refused, and the model does not generate
    bubbles = page.locator("#chatbot .message").count()
    page.fill("#tool-result textarea", '{"temperature": 21}')
    page.click("#send-tool-result")
    wait_status(page, "no tool call")
    assert "Tool result" not in page.inner_text("#chatbot")
    assert page.locator("#chatbot .message").count() == bubbles
    assert page.input_value("#tool-result textarea") == '{"temperature": 21}'  # kept, not lost


def test_the_trash_icons_of_the_chats_agree_with_the_session(page):
    """Gradio's own trash icon on the conversation clears it on the page: the session forgets it too (the next turn
    carries no earlier one, and the tool call it held is no longer waiting); on the parsed turn it draws the turn
    back (the turn is the current run's message)."""
    set_code(page, "template", json.dumps(CALLING, indent=2))
    page.wait_for_selector("#tpl-ok")
    set_max_tokens(page, 6)
    send(page, "first")
    wait_status(page, "A tool was called", timeout=60000)
    page.click("#chatbot button[aria-label='Clear']")
    wait_status(page, "Conversation cleared.")
    assert page.locator("#chatbot [data-testid=user]").count() == 0
    send(page, "second")
    wait_status(page, "A tool was called", timeout=60000)
    assert page.locator("#chatbot [data-testid=user]").count() == 1  # "first" did not come back
    assert "first" not in page.inner_text("#chatbot [data-testid=user]")
    tab(page, "Parsed turn")
    page.wait_for_function("document.querySelector('#parsed-turn').innerText.includes('Tool call')")
    page.click("#parsed-turn button[aria-label='Clear']")
    wait_status(page, "parsed turn")
    page.wait_for_function("document.querySelector('#parsed-turn').innerText.includes('Tool call')")


def test_a_tool_result_without_a_tool_call_is_refused(page):
    set_code(page, "template", json.dumps(PLAIN, indent=2))
    page.wait_for_selector("#tpl-ok")
    set_max_tokens(page, 6)
    # before any turn
    page.fill("#tool-result textarea", "42")
    page.click("#send-tool-result")
    wait_status(page, "no tool call")
    # after a turn without a call
    send(page, "hi")
    wait_status(page, "Done", timeout=60000)
    page.fill("#tool-result textarea", "42")
    page.click("#send-tool-result")
    wait_status(page, "no tool call")
    assert "Tool result" not in page.inner_text("#chatbot")


def test_a_failed_load_keeps_the_model_in_use(page):
    page.fill("#model-box textarea, #model-box input", "no-such-org/no-such-model")
    page.click("#load-model")
    wait_status(page, "Could not load", timeout=60000)
    status = page.inner_text("#status")
    assert "Still using" in status and "Traceback" not in status, status
    set_max_tokens(page, 6)
    for word in ("one", "two"):  # every later Send uses the model that is loaded, not the bad id
        send(page, word)
        wait_text(page, "#chatbot", word)  # drawn with the turn's first update, which replaces the last "Done"
        wait_status(page, "Done", timeout=60000)
        assert "no-such-org" not in page.inner_text("#status")
    assert "two" in page.inner_text("#chatbot")
    # the Doctor uses the model in use too, not the id left in the model box
    tab(page, "Doctor")
    page.click("#doctor-roundtrip-btn")
    page.wait_for_selector("#doctor-roundtrip .doctor-rt-case", timeout=60000)
    assert "no-such-org" not in page.inner_text("#doctor-roundtrip")
    # ... and so does the draft panel: it offers the chat template of the model in use
    tab(page, "Chat")
    page.click("#draft-open")
    page.wait_for_selector("#draft-panel", state="visible", timeout=15000)
    page.wait_for_function("document.querySelector('#draft-note').innerText.includes('Press Draft')", timeout=60000)
    assert "im_start" in page.inner_text("#draft-chat-template")


def test_editor_text_is_kept_per_browser(browser, app_url):
    edited = dict(PLAIN, defaults={"role": "assistant", "kept": "across reloads"})
    ctx, page = open_app(browser, app_url)
    try:
        set_code(page, "template", json.dumps(edited, indent=2))
        # the last edit event is done (valid and edited: the intermediate texts typing makes are not valid); the
        # page's script kept the text as it was typed
        page.wait_for_function("() => document.querySelector('#template-status #tpl-ok') && "
                               "document.querySelector('#template-status').innerText.includes('edited')")
        page.wait_for_function("() => (localStorage.getItem('response-template-playground-editor') || '')"
                               ".includes('across reloads')")
        page.reload(wait_until="domcontentloaded")
        page.wait_for_selector("#template .cm-line")
        wait_code(page, "template", edited)
        wait_text(page, "#template-status", "edited")
        other_ctx, other = open_app(browser, app_url)  # another browser starts from the default
        try:
            assert "across reloads" not in code_text(other, "template")
        finally:
            other_ctx.close()
    finally:
        ctx.close()


def test_editor_text_survives_a_restart_of_the_app(browser, model_dir):
    """A Space that sleeps and wakes (or is redeployed) starts a new app on the same address: the browser's kept
    edits are read back by it."""
    from playground.ui import build_ui, launch_kwargs
    from tests.serving import free_port  # not from conftest: which conftest that name means depends on the run

    port = free_port()

    def start():
        demo = build_ui(model_dir)
        demo.queue(default_concurrency_limit=4)
        demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True, quiet=True,
                    **launch_kwargs())
        return demo

    edited = dict(PLAIN, defaults={"role": "assistant", "kept": "across restarts"})
    url = f"http://127.0.0.1:{port}/"
    demo = start()
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#template .cm-line", timeout=30000)
        set_code(page, "template", json.dumps(edited, indent=2))
        page.wait_for_function("() => document.querySelector('#template-status #tpl-ok') && "
                               "document.querySelector('#template-status').innerText.includes('edited')")
        page.wait_for_function("() => localStorage.getItem('response-template-playground-editor') !== null")
        page.close()
        demo.close()
        demo = start()  # a new app: new random secrets everywhere else, same address
        page = ctx.new_page()
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#template .cm-line", timeout=30000)
        wait_code(page, "template", edited)
        wait_status(page, "Restored")
    finally:
        ctx.close()
        demo.close()


@pytest.fixture(scope="module")
def no_model_url():
    """An app whose model never loaded (a bad default): chatting says so and keeps the message."""
    from playground.ui import build_ui

    demo = build_ui("no-such-org/no-such-model")
    yield launch(demo, concurrency=4)
    demo.close()


def test_without_a_loaded_model_send_says_so_and_keeps_the_message(browser, no_model_url):
    ctx, page = open_app(browser, no_model_url)
    try:
        send(page, "hi")
        wait_status(page, "No model loaded: Could not load", timeout=60000)
        assert "Traceback" not in page.inner_text("body")
        assert page.input_value("#user-input textarea") == "hi"
    finally:
        ctx.close()


def test_a_seed_out_of_range_is_refused_in_the_pages_words_and_nothing_streams(page):
    """4294967296 (one past numpy's seed range) used to fail inside generate: a raw ValueError in the status
    line, the user's message gone and the timeline left saying it streams."""
    from playground.handlers import SEED_MAX

    set_number(page, "seed", SEED_MAX + 1)
    send(page, "hello there")
    wait_status(page, f"Seed must be -1 (random) or a whole number from 0 to {SEED_MAX:,}; got {SEED_MAX + 1}.")
    assert "ValueError" not in page.inner_text("#status")
    assert page.get_attribute("#timeline .tl", "data-status") != "streaming"
    assert page.input_value("#user-input textarea") == "hello there"  # nothing was sent
    assert "hello there" not in page.inner_text("#chatbot")
    assert page.is_disabled("#stop") and not page.is_disabled("#send")


def test_a_stray_character_typed_and_deleted_leaves_no_error_in_the_status_line(scheme_page):
    """Trial 11: with no run yet, one stray character at the end of the template, then Backspace, left "The
    template has an error" in the status line beside "template valid" under the editor."""
    page = scheme_page
    page.click("#template .cm-line >> nth=-1")
    page.keyboard.press("End")
    page.keyboard.type("x")
    wait_status(page, "The template has an error")
    page.keyboard.press("Backspace")
    wait_status(page, "Template valid; it applies to the next run.")
    wait_text(page, "#template-status", "template valid")
    assert "error" not in page.inner_text("#status"), page.inner_text("#status")
