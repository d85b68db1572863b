"""Screenshots of the playground's main flows in the light and the dark colour scheme, for docs/screenshots/.

    python scripts/screenshots.py [--out docs/screenshots] [--model FOLDER]

Starts the app in-process on a free loopback port with the built-in model (or ``--model``), drives Debian's
Chromium (Playwright, /usr/bin/chromium) in a 1400x900 window (whole-page shots), once per scheme:

- ``chat-{scheme}.png``: a chat turn that calls a tool, streamed through the parser (timeline, parsed turn);
- ``inspect-{scheme}.png``: pasted output with a broken tool call (a failed region) and the inspector pinned on
  its delimiter;
- ``doctor-{scheme}.png``: the Doctor tab after a lint of the editor's template.

Exit status 0 when every screenshot was written.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"
PREFIX = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n"
BROKEN = ("The user wants the weather.\n</think>\n\nLet me look it up.<tool_call>\n{\"name\": \"get_weather\", "
          "\"arguments\": {\"city\": Paris}}\n</tool_call><|im_end|>")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_status(page, text: str, timeout: int = 120000) -> None:
    page.wait_for_function("t => document.querySelector('#status').innerText.includes(t)", arg=text,
                           timeout=timeout)


def shoot(url: str, out: Path, scheme: str, browser) -> list[Path]:
    """The three screenshots in ``scheme`` ("light" or "dark"); returns their paths."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
    page = ctx.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#template .cm-line", timeout=60000)
    written = []
    # a chat turn with a tool call (greedy, so the built-in model answers the same way every time)
    page.click("#settings .label-wrap")
    page.fill("#temperature input[type=number]", "0")
    page.press("#temperature input[type=number]", "Enter")
    page.fill("#max-new-tokens input[type=number]", "160")
    page.press("#max-new-tokens input[type=number]", "Enter")
    page.click("#settings .label-wrap")
    page.fill("#user-input textarea", "What's the weather in Paris?")
    page.click("#send")
    _wait_status(page, "Done")
    page.wait_for_selector("#timeline .tl[data-status=final]")
    page.click("button[role=tab]:has-text('Parsed turn')")
    written.append(out / f"chat-{scheme}.png")
    page.screenshot(path=str(written[-1]), full_page=True)
    # pasted output with a failed region, inspected
    page.click("button[role=tab]:has-text('Paste')")
    page.fill("#paste-raw textarea", BROKEN)
    page.fill("#paste-prefix textarea", PREFIX)
    page.click("#paste-parse")
    page.wait_for_selector("#timeline .tl-err")
    page.click("#timeline span.d:text-is('<tool_call>')")
    page.wait_for_selector("#inspector .insp")
    page.click("button[role=tab]:has-text('Event log')")
    written.append(out / f"inspect-{scheme}.png")
    page.screenshot(path=str(written[-1]), full_page=True)
    # the Doctor
    page.click("button[role=tab]:has-text('Doctor')")
    page.click("#doctor-lint-btn")
    page.wait_for_selector("#doctor-lint .doctor-lint-report", timeout=60000)
    written.append(out / f"doctor-{scheme}.png")
    page.screenshot(path=str(written[-1]), full_page=True)
    ctx.close()
    return written


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    from examples import builtin_model
    from playground.ui import build_ui, launch_kwargs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    # relative to the repository: the page shows the model's folder, and a screenshot carries no machine path
    ap.add_argument("--model", default=os.path.relpath(builtin_model.MODEL_DIR, ROOT))
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    demo = build_ui(args.model)
    demo.queue(default_concurrency_limit=4)
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True, quiet=True,
                **launch_kwargs())
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            for scheme in ("light", "dark"):
                for path in shoot(demo.local_url or f"http://127.0.0.1:{port}/", out, scheme, browser):
                    print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
            browser.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
