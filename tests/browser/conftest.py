"""Playwright in Debian Chromium against the app launched in-process on a free port."""

import os
import socket

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    from playground.tinymodel import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", stop_on_eos=False))


def launch(demo, concurrency: int = 8, **extra) -> str:
    """Launch ``demo`` in-process on a free loopback port (``extra``: more ``launch`` arguments); returns its URL.

    Gradio checks that the new server answers with one 3-second request; on this shared machine under load the
    first page can take longer, and the launch then fails with "localhost is not accessible": try again on a
    fresh port (the server itself was fine).
    """
    from playground.ui import launch_kwargs

    demo.queue(default_concurrency_limit=concurrency)
    for attempt in range(3):
        port = _free_port()
        try:
            demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True,
                        quiet=True, **launch_kwargs(), **extra)
            return demo.local_url or f"http://127.0.0.1:{port}/"
        except ValueError as e:
            if "localhost is not accessible" not in str(e) or attempt == 2:
                raise
            demo.close()


@pytest.fixture(scope="session")
def app_url(model_dir):
    from playground.ui import build_ui

    demo = build_ui(model_dir)
    yield launch(demo)
    demo.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian chromium is required: apt-get install -y --no-install-recommends chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def open_app(browser, url, color_scheme="light", viewport=(1400, 1000)):
    """A fresh browser context (= a fresh Gradio session) on the app, ready to use, in ``color_scheme``
    ("light" or "dark": the system preference, which Gradio follows)."""
    ctx = browser.new_context(accept_downloads=True, viewport={"width": viewport[0], "height": viewport[1]},
                              color_scheme=color_scheme)
    page = ctx.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#template", timeout=30000)
    page.wait_for_selector("#timeline", timeout=30000)
    return ctx, page


@pytest.fixture
def page(browser, app_url):
    ctx, pg = open_app(browser, app_url)
    yield from _checked(ctx, pg)


@pytest.fixture(params=["light", "dark"])
def scheme_page(request, browser, app_url):
    """The app in a fresh context, once in each colour scheme; ``page.scheme`` says which."""
    ctx, pg = open_app(browser, app_url, color_scheme=request.param)
    pg.scheme = request.param
    yield from _checked(ctx, pg)


def _checked(ctx, pg):
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
