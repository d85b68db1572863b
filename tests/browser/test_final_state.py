"""The final state of a stream is drawn together with its "done" status (README promise)."""

from pagekit import paste
from test_flows import PREFIX, wait_status

LONG = ("Let me think about the weather. " * 30 + "\n</think>\n\nIt is sunny in Paris today. " * 1
        + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>')


def _snapshot(page):
    """Status, message JSON text and parsed-turn text read in one go (no waiting in between)."""
    return page.evaluate("""() => ({
        status: document.querySelector('#status').innerText,
        message: document.querySelector('#message').innerText,
        tl: document.querySelector('#timeline .tl').dataset.status})""")


def test_paste_replay_final_state_arrives_with_done_status(page):
    paste(page, LONG, PREFIX, button="#paste-replay")
    page.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=30000)
    # show the Message tab while streaming, so its live previews are drawn
    page.click("button[role=tab]:has-text('Message')")
    wait_status(page, "done", timeout=60000)
    snap = _snapshot(page)
    assert snap["tl"] == "final", snap
    assert "role" in snap["message"] and "get_weather" in snap["message"] and "It is sunny in Paris today." in snap["message"], snap
    page.click("button[role=tab]:has-text('Parsed turn')")
    turn = page.inner_text("#parsed-turn")
    assert "Tool call: get_weather" in turn and "It is sunny in Paris today." in turn


def test_live_generation_final_message_arrives_with_done_status(page):
    """Live previews lack the template defaults ("role"); the final message has them."""
    from test_flows import set_max_tokens

    set_max_tokens(page, 300)
    page.click("button[role=tab]:has-text('Message')")
    page.fill("#user-input textarea", "Tell me a story")
    page.click("#send")
    page.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=60000)
    wait_status(page, "Done", timeout=90000)
    snap = _snapshot(page)
    assert snap["tl"] == "final", snap
    assert '"role"' in snap["message"] and '"assistant"' in snap["message"], snap


def test_parsed_turn_shows_model_html_literally(page):
    raw = ('<b>bold</b> <a href="https://example.com">link</a>\n</think>\nSee <img src=x> '
           '<style>body{display:none}</style><tool_call>\n{"name": "<script>alert(4)</script>", "arguments": {}}'
           '\n</tool_call><|im_end|>')
    paste(page, raw, PREFIX, button="#paste-parse")
    page.wait_for_selector("#timeline .tl[data-status=final]")
    page.click("button[role=tab]:has-text('Parsed turn')")
    page.wait_for_function("document.querySelector('#parsed-turn') && "
                           "document.querySelector('#parsed-turn').innerText.includes('Tool call')")
    turn = page.inner_text("#parsed-turn")
    assert "Tool call: <script>alert(4)</script>" in turn, turn
    assert "See <img src=x> <style>body{display:none}</style>" in turn, turn
    # the reasoning bubble is collapsed by default: open it
    page.click("#parsed-turn :text('Reasoning')")
    page.wait_for_function("document.querySelector('#parsed-turn').innerText.includes('<b>bold</b>')")
    assert page.locator("#parsed-turn b, #parsed-turn img, #parsed-turn a[href='https://example.com']").count() == 0
