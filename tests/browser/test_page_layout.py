"""The page on a 1400x900 window: what is on the first screen, what stands out, when Stop can be pressed."""

import json
import time

from conftest import open_app
from pagekit import FINAL, PREFIX, RAW, paste, pick_library, set_code, set_max_tokens, tab, wait_code, wait_status

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


def test_stop_is_enabled_only_while_a_run_goes(page, monkeypatch):
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
    # a replay can be stopped too: paced over minutes (the app runs in this process), so it is still going when the
    # click lands however slow the machine is (a 3 s replay could end between Stop enabling and the click)
    from playground.streaming import Pacer

    monkeypatch.setattr(Pacer, "for_replay", classmethod(lambda cls, n_chunks, seconds=0: cls(300 / max(1, n_chunks))))
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


# What a phone shows (390x844): every piece of the page's frame, with the timeline's heading row.
PHONE_PARTS = ["#header h1", "#header .tag", "#model-box", "#load-model", "#status .status span", "#modes",
               "#template", "#timeline-head .tl-title", "#legend .legend", "#replay", "#stop", "#timeline-from",
               "#timeline .tl", "#anchor-missing", "#check"]
# pieces side by side that must not cover each other
PHONE_NEIGHBOURS = [["#header h1", "#header .tag", "#model-box", "#load-model", "#status .status"],
                    ["#timeline-head .tl-title", "#legend .legend", "#replay", "#stop", "#timeline-from"]]


def test_phone_width_nothing_runs_off_the_screen_or_overlaps(browser, app_url):
    """A fresh-user trial at 390x844: the status line ran off the right edge, the title was clipped, the legend
    shrank to a narrow column and the Replay button covered the "Stream timeline" heading."""
    for scheme in ("light", "dark"):
        ctx, page = open_app(browser, app_url, color_scheme=scheme, viewport=(390, 844))
        try:
            # a prompt without the start anchor: a long status line and a warning above the timeline
            paste(page, RAW, "<|im_start|>user\nWeather?<|im_end|>\n")
            page.wait_for_selector(FINAL)
            page.wait_for_selector("#anchor-missing")
            wait_status(page, "start anchor")
            found = page.evaluate("""([parts, groups]) => {
                const W = document.documentElement.clientWidth, box = s => document.querySelector(s).getBoundingClientRect();
                const bad = [];
                for (const s of parts) {
                    const e = document.querySelector(s);
                    if (!e) { bad.push(`${s}: missing`); continue; }
                    const r = e.getBoundingClientRect();
                    if (r.width < 40 || r.height < 8) bad.push(`${s}: squeezed to ${r.width}x${r.height}`);
                    if (r.left < 0 || r.right > W + 0.5) bad.push(`${s}: runs off the screen (${r.left}..${r.right} of ${W})`);
                    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'auto')
                        bad.push(`${s}: its text is cut (${e.scrollWidth} > ${e.clientWidth})`);
                    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
                        if (getComputedStyle(a).overflowX === 'visible') continue;
                        const q = a.getBoundingClientRect();
                        if (r.right > q.right + 0.5 || r.left < q.left - 0.5) { bad.push(`${s}: clipped by ${a.className}`); break; }
                    }
                }
                for (const g of groups) for (let i = 0; i < g.length; i++) for (let j = i + 1; j < g.length; j++) {
                    const a = box(g[i]), b = box(g[j]);
                    const x = Math.min(a.right, b.right) - Math.max(a.left, b.left), y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                    if (x > 0.5 && y > 0.5) bad.push(`${g[i]} and ${g[j]} overlap`);
                }
                const legend = box('#legend .legend');
                if (legend.width < 0.75 * W) bad.push(`the legend is a narrow column (${legend.width} px)`);
                return {W, page: document.documentElement.scrollWidth, bad};
            }""", [PHONE_PARTS, PHONE_NEIGHBOURS])
            assert found["page"] <= found["W"], (scheme, found)
            assert found["bad"] == [], (scheme, found["bad"])
        finally:
            ctx.close()


def test_a_long_one_line_error_excerpt_stays_inside_its_box_and_replaced_text_shows_from_column_one(browser,
                                                                                                      app_url):
    """A long one-line template: the error excerpt under the editor scrolls inside its red box instead of running
    past its border; and when the page replaces that text (a library pick), the editor shows the new text from
    its first column, not at the long line's horizontal scroll. Both colour schemes."""
    from examples import load_family

    long_line = json.dumps({"fields": {"content": {"close_pattern": "(unclosed" + "x" * 400}},
                            "start_anchor": "<|im_start|>assistant\n"})
    for scheme in ("light", "dark"):
        ctx, page = open_app(browser, app_url, color_scheme=scheme)
        try:
            set_code(page, "template", long_line)
            page.wait_for_selector("#tpl-error pre")
            box = page.evaluate("""() => {
                const bad = document.querySelector('#tpl-error'), pre = bad.querySelector('pre');
                const b = bad.getBoundingClientRect(), p = pre.getBoundingClientRect();
                return {box: [b.left, b.right], pre: [p.left, p.right], scroll: pre.scrollWidth > pre.clientWidth,
                        spill: bad.scrollWidth - bad.clientWidth, page: document.documentElement.scrollWidth,
                        W: window.innerWidth};
            }""")
            assert box["box"][0] <= box["pre"][0] and box["pre"][1] <= box["box"][1], (scheme, box)
            assert box["spill"] <= 0, (scheme, box)  # nothing runs past the red box's border
            assert box["scroll"], (scheme, box)  # the long line scrolls inside the excerpt
            assert box["page"] <= box["W"], (scheme, box)
            # scroll the editor to the long line's end, then let the page replace the text
            page.evaluate("() => { const s = document.querySelector('#template .cm-scroller'); s.scrollLeft = 1e6; }")
            assert page.evaluate("() => document.querySelector('#template .cm-scroller').scrollLeft") > 100
            pick_library(page, "qwen3")
            page.click("#confirm-yes")  # it replaces edits: the page asks first
            wait_code(page, "template", load_family("qwen3").template)
            page.wait_for_function("() => document.querySelector('#template .cm-scroller').scrollLeft === 0",
                                   timeout=10000)
        finally:
            ctx.close()
