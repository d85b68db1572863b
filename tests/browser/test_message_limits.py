"""What the page shows for messages it cannot show whole, in both colour schemes, on an app whose shown-message cap
(`Limits.max_message_chars`) is small enough to reach with a short paste: the note beside an emptied Message view
(it was a quoted JSON string inside the view), and a chat turn whose template gives no role and whose content is a
dict (it had no bubble in the conversation)."""

import json

import pytest
from conftest import launch, open_app
from contrast import assert_readable
from pagekit import paste, send, set_code, set_max_tokens, tab, wait_status, wait_text

CAP = 5000
# each "{content}" copies the whole text: 20 copies of a 400-character paste are about 8,000 characters of JSON
COPIES = {"defaults": {"role": "assistant"}, "start_anchor": "S",
          "fields": {"content": {"transform": {"a": ["{content}"] * 20}}}}
# no role default, and the content becomes a dict: the turn is still the assistant's
NO_ROLE = {"start_anchor": "<|im_start|>assistant\n",
           "fields": {"content": {"close": "<|im_end|>", "transform": {"a": ["{content}"] * 3}}}}


@pytest.fixture(scope="module")
def capped_url(model_dir):
    from playground import guard, reference
    from playground.limits import Limits
    from playground.ui import build_ui

    before = guard.limits()
    demo = build_ui(model_dir, limits=Limits.private(max_message_chars=CAP))
    try:
        yield launch(demo, concurrency=4)
    finally:
        demo.close()
        guard.configure(before)  # build_ui set the process's limits: the other tests' app runs without a cap
        reference.configure(before.workers)


@pytest.fixture(params=["light", "dark"])
def capped_page(request, browser, capped_url):
    ctx, page = open_app(browser, capped_url, color_scheme=request.param)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_a_message_over_the_cap_is_a_readable_note_beside_an_empty_message_view(capped_page):
    page = capped_page
    set_code(page, "template", json.dumps(COPIES))
    paste(page, "x" * 400, "S")
    wait_status(page, "too large to show")
    tab(page, "Message")
    note = "The parsed message is not shown: as JSON it is at least"
    wait_text(page, "#message-note", note)
    text = page.inner_text("#message-note")
    assert f"over this server's limit of {CAP:,}" in text and '"' + note not in text
    assert note not in page.inner_text("#message")  # the view holds no quoted note (nor the message)
    assert_readable(page, ["#message-note"], min_checked=1)
    # a message under the cap: the view shows it and the note goes
    paste(page, "x" * 10, "S")
    wait_text(page, "#message", "xxxxxxxxxx")
    page.wait_for_function("() => document.querySelector('#message-note').innerText.trim() === ''")


def test_a_turn_without_a_role_whose_content_is_a_dict_shows_its_bubble(capped_page):
    page = capped_page
    set_code(page, "template", json.dumps(NO_ROLE))
    set_max_tokens(page, 12)
    send(page, "hello there")
    wait_status(page, "Done", timeout=60000)
    bubbles = page.locator("#chatbot .message-row")
    page.wait_for_function("() => document.querySelectorAll('#chatbot .message-row').length === 2")
    assistant = bubbles.nth(1).inner_text()
    assert assistant.lstrip().startswith("{") and '"a": [' in assistant, assistant
    assert_readable(page, ["#chatbot"], min_checked=2)
