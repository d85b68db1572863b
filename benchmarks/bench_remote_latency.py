"""Time from a server's first text delta to the first timeline update drawn in the browser.

Starts a real `transformers serve` (built-in model, CPU, loopback), the playground in-process with that server
configured (``--remote``), and Debian Chromium.  For each run it sends a chat message on the remote backend and
takes two wall-clock times on this machine: when ``playground.remote`` received the first text delta (its debug
log record), and when the page first drew a timeline holding generated text (a MutationObserver in the page sees
the first chunk mark, ``#timeline span.cs``).  Prints each run and the median / worst.

    .venv/bin/python benchmarks/bench_remote_latency.py [--runs 5]

Target (issue #15): under 100 ms on the dev machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# Gradio morphs the timeline HTML in place, and its progress timer mutates the component too: arm once the new
# run's first update (the prompt alone: no chunk marks) is on screen, then take the first update with a chunk mark.
OBSERVE = """() => {
  if (window.__observer) window.__observer.disconnect();
  window.__firstDraw = null;
  let armed = false;
  const root = document.querySelector('#timeline');
  const seen = () => {
    const marked = !!root.querySelector('.tl span.cs');
    if (!marked && root.querySelector('.tl')) armed = true;
    else if (marked && armed && !window.__firstDraw) window.__firstDraw = performance.timeOrigin + performance.now();
  };
  window.__observer = new MutationObserver(seen);
  window.__observer.observe(root, {childList: true, subtree: true, characterData: true, attributes: true});
}"""


class _FirstDelta(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.times: list[float] = []

    def emit(self, record):
        if record.getMessage().startswith("first delta"):
            self.times.append(float(record.args[-1]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--chromium", default="/usr/bin/chromium")
    args = p.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from examples import builtin_model
    from playground.remote import parse_remote_specs
    from playground.ui import build_ui, launch_kwargs
    from tests.serving import ServeProcess, free_port, warm_up

    handler = _FirstDelta()
    log = logging.getLogger("playground.remote")
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    serve = ServeProcess(Path(tempfile.mkdtemp(prefix="bench-serve-")))
    demo = None
    try:
        warm_up(serve.url, builtin_model.MODEL_DIR)
        demo = build_ui(builtin_model.MODEL_DIR, preload=False,
                        remotes=parse_remote_specs([f"ts={serve.url},model={builtin_model.MODEL_DIR}"]))
        demo.queue()
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True, quiet=True,
                    **launch_kwargs())
        gaps = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.wait_for_selector("#backend", timeout=60000)
            page.click("#backend input")
            page.click("ul[role=listbox] li:has-text('ts ·')")
            page.wait_for_function("document.querySelector('#model-box label').innerText.includes('on the server')")
            for i in range(args.runs):
                page.click("#clear")
                page.evaluate(OBSERVE)
                before = len(handler.times)
                page.fill("#user-input textarea", "What is the weather in Paris?")
                page.click("#send")
                page.wait_for_function("window.__firstDraw !== null", timeout=120000)
                page.wait_for_function("document.querySelector('#status').innerText.match(/Done|Stopped|Cut/)",
                                       timeout=120000)
                drawn = page.evaluate("window.__firstDraw") / 1000.0
                delta = handler.times[before]
                gaps.append(1000 * (drawn - delta))
                print(f"run {i + 1}: first delta -> first drawn timeline update {gaps[-1]:.0f} ms", flush=True)
            browser.close()
        print(f"median {statistics.median(gaps):.0f} ms, worst {max(gaps):.0f} ms over {len(gaps)} runs "
              f"({time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f})")
    finally:
        if demo is not None:
            demo.close()
        serve.stop()


if __name__ == "__main__":
    main()
