"""The editor's text kept in this browser (trial 12 F9, F10): written as it is typed, in the browser, whatever
its size and before the server answers; put back after a reload with a status that says so; an over-cap text
comes back with the size message; a full storage is said, not silently ignored; Gradio's run history is off."""

from __future__ import annotations

import json
import threading

import pytest

from tests.browser.conftest import launch, open_app
from tests.browser.contrast import assert_readable
from tests.browser.pagekit import PLAIN, code_text, pick_library, set_code, wait_code, wait_status, wait_text

KEY = "response-template-playground-editor"



def kept_text(page):
    raw = page.evaluate("key => localStorage.getItem(key)", KEY)
    return None if raw is None else json.loads(raw)["text"]


def wait_kept(page, needle, timeout=30000):
    page.wait_for_function("([key, needle]) => (localStorage.getItem(key) || '').includes(needle)",
                           arg=[KEY, needle], timeout=timeout)


def reload(page):
    page.reload(wait_until="domcontentloaded")
    page.wait_for_selector("#template .cm-line", timeout=30000)


@pytest.fixture(scope="module")
def public_url(model_dir):
    """The app with a public server's limits (the template size cap: 65,536 characters)."""
    from playground.limits import Limits
    from playground.ui import build_ui

    demo = build_ui(model_dir, limits=Limits.public_space())
    yield launch(demo, concurrency=4)
    demo.close()


def test_an_edit_is_kept_before_the_server_answers_it(browser, app_url, monkeypatch):
    """F10: the server still works on the edit (a re-parse of a big run takes seconds on a loaded server) when the
    page is reloaded: the edit comes back, and the status line says where from."""
    from playground import handlers

    release = threading.Event()
    real = handlers.edit_template

    def slow(sess, text, page):  # held until the test is done: the answer never arrives before the reload
        if "held-by-the-test" in text:
            release.wait(60)
        return real(sess, text, page)

    monkeypatch.setattr(handlers, "edit_template", slow)
    edited = dict(PLAIN, defaults={"role": "assistant", "note": "held-by-the-test"})
    ctx, page = open_app(browser, app_url)
    try:
        set_code(page, "template", json.dumps(edited, indent=2))
        wait_kept(page, "held-by-the-test", timeout=10000)
        assert json.loads(kept_text(page)) == edited
        reload(page)
        wait_status(page, "Restored the template you were editing in this browser.")
        wait_code(page, "template", edited)
        wait_text(page, "#template-status", "edited")
    finally:
        release.set()
        ctx.close()


def test_an_over_cap_edit_comes_back_after_a_reload_with_the_size_message(browser, public_url):
    """F9: a template over the public cap is refused by the server, but it is the visitor's text in the
    visitor's browser: a reload puts it back into the editor and says again why the server does not read it."""
    big = dict(PLAIN, fields={"content": {"close": "<|im_end|>", "repeats": True, "join": "j" * 70_000}})
    text = json.dumps(big, indent=2)
    ctx, page = open_app(browser, public_url)
    sent = []  # CodeMirror draws only the visible part of a long line: the text the page sends tells the whole
    page.on("request", lambda r: sent.append(r.post_data) if "queue/join" in r.url and r.post_data else None)
    try:
        set_code(page, "template", text)
        wait_text(page, "#template-status", "at most 65,536")
        wait_kept(page, "j" * 70_000)
        assert kept_text(page) == text
        sent.clear()
        reload(page)
        wait_status(page, "Restored the template you were editing in this browser.")
        wait_text(page, "#template-status", f"The template is {len(text):,} characters; this server takes at most "
                                            "65,536.")
        assert any(text in json.loads(body)["data"] for body in sent)  # the editor's text at page load
        assert code_text(page, "template").startswith(text[:20])
        assert kept_text(page) == text  # still kept: another reload brings it back again
    finally:
        ctx.close()


FILL = r"""
() => {  // fill this origin's localStorage to the last few hundred characters (other keys than ours)
  let i = 0;
  for (let size = 1 << 21; size >= 256; ) {
    try { localStorage.setItem('filler-' + (i++), 'x'.repeat(size)); } catch (e) { size >>= 1; }
  }
  return i;
}
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_full_storage_is_said_and_no_older_copy_comes_back(browser, app_url, scheme):
    first = dict(PLAIN, defaults={"role": "assistant", "copy": "first"})
    second = dict(PLAIN, defaults={"role": "assistant", "copy": "second " + "s" * 4000})
    ctx, page = open_app(browser, app_url, color_scheme=scheme)
    try:
        set_code(page, "template", json.dumps(first, indent=2))
        wait_kept(page, '\\"first\\"')
        page.evaluate(FILL)  # the first edit's copy stays
        set_code(page, "template", json.dumps(second, indent=2))
        wait_text(page, "#editor-kept", "storage for this site is full")
        note = page.inner_text("#editor-kept")
        assert f"({len(json.dumps(second, indent=2)):,} characters) is not kept" in note, note
        assert kept_text(page) is None  # the older copy is gone: a reload cannot pass it off as the last edit
        assert_readable(page, ["#editor-kept"])
        reload(page)
        page.wait_for_selector("#template-status #tpl-ok, #template-status .tpl-ok", timeout=30000)
        assert "Restored" not in page.inner_text("#status")
        assert "copy" not in code_text(page, "template")
        page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('filler-'))"
                      ".forEach(k => localStorage.removeItem(k))")
    finally:
        ctx.close()


def test_a_library_pick_forgets_the_kept_edit_and_runs_are_not_kept_by_gradio(page):
    edited = dict(PLAIN, defaults={"role": "assistant", "kept": "until a pick"})
    set_code(page, "template", json.dumps(edited, indent=2))
    wait_kept(page, "until a pick")
    wait_text(page, "#template-status", "edited")
    pick_library(page, "hermes")
    page.click("#confirm-yes")
    page.wait_for_function("key => localStorage.getItem(key) === null", arg=KEY, timeout=30000)
    wait_status(page, "hermes")
    assert not page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('gradio:run-history'))")
    reload(page)
    assert "until a pick" not in code_text(page, "template")
    assert "Restored" not in page.inner_text("#status")
