"""A refused upload reads as a sentence on the page, in both colour schemes (session 10 left it as raw JSON).

Gradio 6.31's page puts the body of a refused upload into its error toast as it comes (``HTTP 429: <body>``); the
upload limit used to answer Starlette's JSON, so a visitor past the limit read ``HTTP 429: {"detail": "This
server..."}``. A real ``app.py --public`` on loopback, allowing one upload per visitor an hour; the Doctor's suite
upload is used after this visitor (loopback) has spent its upload, so it is refused.
"""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import open_app
from tests.serving import start_app


@pytest.fixture(scope="module")
def public_url(tmp_path_factory):
    import httpx

    log = tmp_path_factory.mktemp("upload_refusal") / "server.log"
    proc, url = start_app(["--public", "--no-preload", "--uploads-per-address", "1", "--upload-mb-per-address", "5",
                           "--upload-window", "3600"],
                          log, lambda url: httpx.get(url, timeout=5).raise_for_status())
    # This visitor's one upload of the hour, spent here: every upload from the browser (same address) is refused.
    spent = httpx.post(url + "gradio_api/upload", files=[("files", ("a.jsonl", b"{}\n"))], timeout=60)
    assert spent.status_code == 200, spent.text
    yield url
    proc.kill()
    proc.wait(timeout=30)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_refused_upload_shows_its_reason_as_text(browser, public_url, tmp_path, scheme):
    ctx, page = open_app(browser, public_url, color_scheme=scheme)
    try:
        page.click("button[role=tab]:has-text('Doctor')")
        page.wait_for_selector("#doctor-suite-upload input[type=file]", state="attached")
        path = tmp_path / f"{scheme}.cases.jsonl"
        path.write_text(json.dumps({"prefix": "", "output": "Hi.", "expected": {"role": "assistant"}}) + "\n")
        page.set_input_files("#doctor-suite-upload input[type=file]", str(path))
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=toast-body]')]"
                               ".some(t => t.innerText.includes('429'))", timeout=30000)
        texts = [t.inner_text() for t in page.query_selector_all("[data-testid=toast-body]")]
        assert len(texts) == 1 and ("HTTP 429: This server takes at most 1 file / 5 MB of uploads per visitor every "
                                    "60 minutes: try again in ") in texts[0], texts
        assert "{" not in texts[0] and "detail" not in texts[0], texts
    finally:
        ctx.close()
