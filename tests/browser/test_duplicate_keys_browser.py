"""A template pasted with a key written twice: the editor's status names the key and its JSON path, legibly, in
both colour schemes (trial 11: the first "content" field was dropped without a word)."""

from contrast import assert_readable

TWICE = ('{"start_anchor": "<|im_start|>assistant\\n", "defaults": {"role": "assistant"}, "fields": {'
         '"content": {"close": "<|im_end|>"}, "content": {"close": "<|end|>"}}}')


def test_a_duplicated_key_is_named_under_the_editor(scheme_page):
    page = scheme_page
    page.click("#template .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(TWICE)
    info = page.wait_for_selector("#template-status .tpl-dup[data-path='fields.content']", timeout=30000)
    assert 'the key "content" is written more than once' in info.inner_text()
    assert "template valid" in page.inner_text("#template-status")
    assert_readable(page, ["#template-status"], min_checked=1)
