"""A page whose session state the server lost finds out on its next action (trial 14 H1, the page's part).

The app runs with room for a few sessions (``--max-sessions``, Gradio's ``state_session_capacity``); a page chats,
edits its template and parses a paste; fresh API sessions then push its state out, as one visitor's 1,100 calls did
on a public server. Before, the page kept drawing the run, the message and the conversation the server no longer
had, "Replay last run" said "Nothing to replay yet." under the parsed timeline, and the next turn went without the
earlier ones. Now its next action says the session was lost and clears every view that showed it, in both colour
schemes, keeping the editor's text; the page then works on its fresh state.
"""

import json
import os

import pytest
from conftest import launch
from contrast import assert_readable
from pagekit import FINAL, PLAIN, PREFIX, RAW, code_text, paste_and_parse, send, set_code, set_max_tokens, tab, \
    wait_status, wait_text

CAPACITY = 4  # sessions the server keeps
LOST = "This page's session on the server expired"


@pytest.fixture(scope="module")
def app(model_dir):
    """(the app, its URL) for this module's pages, keeping at most `CAPACITY` sessions."""
    from playground.ui import build_ui

    demo = build_ui(model_dir)
    yield demo, launch(demo, state_session_capacity=CAPACITY)
    demo.close()


@pytest.fixture(scope="module")
def app_url(app):
    """The URL the `page` and `scheme_page` fixtures open: this module's app."""
    return app[1]


def _evict(url: str, n: int = CAPACITY + 2) -> None:
    """Open ``n`` fresh API sessions, each with one call: the page's state is the oldest and goes."""
    from gradio_client import Client

    client = Client(url, download_files=False, verbose=False)
    for _ in range(n):
        client.reset_session()
        client.predict(api_name="/keep_edits")


def test_a_page_whose_session_was_evicted_says_so_and_shows_nothing_of_it(scheme_page, app_url):
    page = scheme_page
    template = json.dumps(PLAIN, indent=2)
    set_code(page, "template", template)  # the page's own text: kept through the loss
    wait_text(page, "#template-status", "valid")
    set_max_tokens(page, 4)
    send(page, "Hi there")
    wait_status(page, "Done", timeout=120000)
    # the user's turn and the model's answer
    assert page.locator("#chatbot .message").count() >= 2 and "Hi there" in page.inner_text("#chatbot")
    paste_and_parse(page, RAW, PREFIX)
    editor = code_text(page, "template")

    _evict(app_url)
    page.click("#replay")
    wait_status(page, LOST)
    status = page.inner_text("#status")
    assert "its run and conversation are gone" in status and "Nothing to replay" not in status, status
    # every view that showed the lost state is cleared: the timeline, its legend, the chat, the message
    wait_text(page, "#timeline", "The run this page showed is gone")
    assert page.locator(FINAL).count() == 0 and page.locator("#timeline span.e").count() == 0
    assert page.inner_text("#legend").strip() == ""
    page.wait_for_function("() => document.querySelectorAll('#chatbot .message').length === 0")
    assert page.is_disabled("#replay")
    tab(page, "Message")
    assert "Checking" not in page.inner_text("#message")
    # the editor keeps the page's own text, and the server took it as this state's template
    assert code_text(page, "template") == editor
    wait_text(page, "#template-status", "valid")
    assert "Traceback" not in page.inner_text("body") and not page.is_visible("#page-token")
    if os.environ.get("SHOTS_DIR"):  # for a person to look at
        page.screenshot(path=os.path.join(os.environ["SHOTS_DIR"], f"lost-{page.scheme}.png"), full_page=True)
    assert_readable(page, ["#status", "#timeline"], min_checked=2)

    # the page works on its fresh state: a parse with the kept template, then a new conversation
    paste_and_parse(page, RAW, PREFIX)
    wait_status(page, "Parsed")
    assert "Checking" in page.inner_text("#timeline")
    send(page, "Again")
    wait_status(page, "Done", timeout=120000)
    chat = page.inner_text("#chatbot")  # the new turn and its answer, nothing of the old ones
    assert "Again" in chat and "Hi there" not in chat, chat


def test_a_page_whose_session_expired_says_so_at_its_next_action(page, app):
    """The janitor forgets a session idle past ``--session-ttl`` (`guard.sweep`, run here as if that time had
    passed): the page's next action, a paste parse here, is not carried out and says why."""
    import time

    from playground import guard

    demo, _url = app
    paste_and_parse(page, RAW, PREFIX)
    assert guard.sweep(demo, now=time.time() + guard.limits().session_ttl + 60) >= 1
    page.fill("#paste-raw textarea", "Hello<|im_end|>")
    page.click("#paste-parse")
    wait_status(page, LOST)
    wait_text(page, "#timeline", "The run this page showed is gone")
    assert page.locator(FINAL).count() == 0
    page.click("#paste-parse")  # done again, it is carried out
    wait_status(page, "Parsed 15 characters.")
