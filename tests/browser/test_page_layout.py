"""The page on a 1400x900 window: what is on the first screen, what stands out, when Stop can be pressed."""

import time

from conftest import open_app
from pagekit import FINAL, PREFIX, RAW, paste, set_max_tokens, tab, wait_status

SPEC = "https://huggingface.co/docs/transformers/main/en/chat_response_parsing"


def _box(page, sel):
    box = page.locator(sel).first.bounding_box()
    assert box, f"{sel} is not drawn"
    return box


def test_first_screen_holds_editor_chat_and_timeline(browser, app_url):
    ctx, page = open_app(browser, app_url, viewport=(1400, 900))
    try:
        assert page.evaluate("window.scrollY") == 0
        tpl, chat, tl = _box(page, "#template"), _box(page, "#chatbot"), _box(page, "#timeline")
        assert tpl["y"] >= 0 and tpl["y"] + tpl["height"] <= 900, tpl
        assert chat["y"] >= 0 and chat["y"] + chat["height"] <= 900, chat
        assert tl["y"] + 60 <= 900, f"the timeline starts at {tl['y']:.0f} px: not visible on a 900 px screen"
        # one line saying what the page is for, with the spec a click away
        header = page.inner_text("#header")
        assert "response template" in header.lower()
        link = page.locator(f"#header a[href='{SPEC}']")
        assert link.count() == 1 and link.is_visible()
        # the Doctor: its tab is on the first screen, and one click shows it there
        doctor = page.locator("button[role=tab]:has-text('Doctor')")
        assert _box(page, "button[role=tab]:has-text('Doctor')")["y"] + 30 <= 900
        doctor.click()
        btn = page.wait_for_selector("#doctor-lint-btn", state="visible")
        b = btn.bounding_box()
        assert b["y"] + b["height"] <= 900, f"the Doctor's first button is at {b['y']:.0f} px"
        assert page.evaluate("window.scrollY") == 0
        # primary actions stand out; Stop is off while nothing runs
        tab(page, "Chat")
        assert "primary" in page.get_attribute("#send", "class")
        assert "primary" not in (page.get_attribute("#load-model", "class") or "")
        assert page.is_disabled("#stop")
    finally:
        ctx.close()


def test_stop_is_enabled_only_while_a_run_goes(page):
    assert page.is_disabled("#stop")
    assert page.is_disabled("#replay")  # "Replay last run": nothing to replay yet
    # a replay
    paste(page, "Thinking a lot. " * 60 + "\n</think>\nDone.<|im_end|>", PREFIX, button="#paste-replay")
    page.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=30000)
    page.wait_for_selector("#stop:not([disabled])", timeout=10000)
    wait_status(page, "done", timeout=60000)
    page.wait_for_selector("#stop[disabled]", timeout=10000)
    page.wait_for_selector("#replay:not([disabled])", timeout=10000)  # now there is a run to replay
    # a generation, stopped by the user
    set_max_tokens(page, 20000)
    page.fill("#user-input textarea", "A long story please")
    page.click("#send")
    page.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=60000)
    page.wait_for_selector("#stop:not([disabled])", timeout=10000)
    page.click("#stop")
    wait_status(page, "Stopped", timeout=30000)
    page.wait_for_selector(FINAL)
    page.wait_for_selector("#stop[disabled]", timeout=10000)
    # a replay can be stopped too
    paste(page, "Thinking a lot. " * 200 + "\n</think>\nDone.<|im_end|>", PREFIX, button="#paste-replay")
    page.wait_for_selector("#stop:not([disabled])", timeout=30000)
    t = time.time()
    page.click("#stop")
    wait_status(page, "Stopped", timeout=30000)
    assert time.time() - t < 10
    page.wait_for_selector("#stop[disabled]", timeout=10000)


def test_icons_are_drawn_without_emoji_fonts(page):
    """Icons are inline SVG: they show on a machine with no emoji font (CI installs none)."""
    import re

    emoji = "[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]"
    paste(page, RAW, PREFIX)  # a tool call: the parsed turn draws its card
    page.wait_for_selector(FINAL)
    tab(page, "Parsed turn")
    page.wait_for_function("document.querySelector('#parsed-turn').innerText.includes('Tool call')")
    turn = page.inner_text("#parsed-turn")
    assert not re.search(emoji, turn), re.findall(emoji, turn)
    paste(page, "Hmm.\n</think>\nHi<tool_call>\n{oops\n</tool_call><|im_end|>", PREFIX)  # a failed region
    page.wait_for_selector("#timeline .tl-err")
    icons = page.locator("#status svg, #check svg, #template-status svg, #timeline .tl-err svg, #header svg")
    assert icons.count() >= 4
    for i in range(icons.count()):
        box = icons.nth(i).bounding_box()
        assert box and box["width"] >= 8 and box["height"] >= 8
    text = page.inner_text("body")
    assert not re.search(emoji, text), re.findall(emoji, text)
