"""A ~30,000-token stream leaves the page responsive and the final state is drawn."""

import time

from parsing.streams import tokenish_chunks

PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n"


def test_30k_token_stream_stays_responsive(page):
    calls = "".join('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
                    for _ in range(150))
    raw = ("Step: compute it. " * 2000) + "\n</think>\n" + ("The answer is here. " * 1000) + calls + "<|im_end|>"
    n_chunks = len(tokenish_chunks(raw))
    assert 28000 <= n_chunks <= 40000
    page.evaluate("() => { window.__long = []; new PerformanceObserver(l => { for (const e of l.getEntries()) "
                  "window.__long.push(e.duration); }).observe({entryTypes: ['longtask']}); }")
    # every length the timeline ever showed, recorded by the page itself (polling from here misses updates when the
    # machine is loaded: each evaluate then takes longer than an update)
    page.evaluate("() => { window.__lens = new Set(); const root = document.querySelector('#timeline'); "
                  "new MutationObserver(() => { const e = root.querySelector('.tl'); if (e) "
                  "window.__lens.add(e.dataset.len); }).observe(root, {subtree: true, childList: true, "
                  "attributes: true, attributeFilter: ['data-len']}); }")
    page.click("button[role=tab]:has-text('Paste')")
    page.evaluate("t => { const el = document.querySelector('#paste-raw textarea'); el.value = t; "
                  "el.dispatchEvent(new Event('input', {bubbles: true})); }", raw)
    page.fill("#paste-prefix textarea", PREFIX)
    started = time.time()
    page.click("#paste-replay")
    page.wait_for_selector("#timeline .tl[data-status=streaming]", timeout=60000)
    latencies, lengths = [], set()
    deadline = time.time() + 150
    while time.time() < deadline:
        t = time.perf_counter()
        state = page.evaluate("(() => { const e = document.querySelector('#timeline .tl');"
                              " return e ? [e.dataset.status, e.dataset.len] : ['none', '0']; })()")
        latencies.append(time.perf_counter() - t)
        lengths.add(state[1])
        if state[0] == "final":
            break
        time.sleep(0.1)
    assert state[0] == "final", "the final state was never drawn"
    assert int(state[1]) == len(raw) + len("<think>\n")
    shown = page.evaluate("[...window.__lens]")
    assert len(set(shown) | lengths) >= 5, f"updates were not streamed: lengths shown {sorted(set(shown) | lengths)}"
    # Before windowing and throttling this page froze for over 30 s at a time: the bounds are far from that and
    # from what an idle machine takes (0.16 s, 0.12 s); the share of time in long tasks depends on the machine's
    # load (1.8 s in 14 s idle, 4.7 s in 6.3 s at load 20), so it is printed, not asserted (README: Long streams).
    stream_seconds = time.time() - started
    longs = page.evaluate("window.__long") or [0]
    print(f"long tasks: {sum(longs):.0f} ms in {stream_seconds:.1f} s (longest {max(longs):.0f} ms); "
          f"slowest page round-trip {max(latencies):.2f} s")
    assert max(latencies) < 5.0, f"page blocked for {max(latencies):.2f}s"
    assert max(longs) < 3000, f"a {max(longs):.0f} ms long task"
    assert page.evaluate("document.querySelectorAll('#timeline *').length") < 6000  # bounded DOM
    assert "Showing characters" in page.inner_text("#timeline")
    # the page still reacts at once
    t = time.perf_counter()
    page.click("button[role=tab]:has-text('Event log')")
    page.wait_for_selector("#events tr.ev-region_close")
    assert time.perf_counter() - t < 5
