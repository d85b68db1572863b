"""The remote backend in Chromium: the app configured with a real `transformers serve` (--remote)."""

import pytest

from conftest import CHROMIUM, _free_port  # noqa: F401 - CHROMIUM checked by the browser fixture
from test_flows import FINAL, message_json, set_max_tokens, wait_status


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    from examples import builtin_model
    from tests.serving import ServeProcess, warm_up

    proc = ServeProcess(tmp_path_factory.mktemp("serve"))
    try:
        warm_up(proc.url, builtin_model.MODEL_DIR)
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def remote_app_url(serve, model_dir):
    from examples import builtin_model
    from playground.remote import parse_remote_specs
    from playground.ui import build_ui, launch_kwargs

    remotes = parse_remote_specs([f"ts={serve.url},model={builtin_model.MODEL_DIR}"])
    demo = build_ui(model_dir, remotes=remotes)
    demo.queue(default_concurrency_limit=8)
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True, quiet=True,
                **launch_kwargs())
    yield demo.local_url or f"http://127.0.0.1:{port}/"
    demo.close()


def pick_backend(page, label_part):
    page.click("#backend input")
    page.click(f"ul[role=listbox] li:has-text('{label_part}')")
    page.wait_for_function("document.querySelector('#model-box label').innerText.includes('Model on the server')")


# Prompts after which the built-in model writes long (greedy: loops to the token limit), then sampled ones. How
# long an answer is depends on the model, so the test tries them in turn until one streams long enough to stop.
LONG_ANSWERS = [("Repeat the word hello forever.", False, "0"), ("Write an essay about the history of Rome.", False, "0"),
                ("Tell me a very long story", True, "1"), ("Count from one to one thousand.", True, "1")] * 2

# Where the run of the prompt sent for the n-th time stands: 'streaming' (chunks drawn), 'ended' (over), or null.
_RUN_STATE = """([text, n]) => {
    const tl = document.querySelector('#timeline .tl');
    if (document.querySelector('#chatbot').innerText.split(text).length - 1 < n) return null;
    if (tl && tl.dataset.status === 'streaming' && tl.querySelector('span.cs')) return 'streaming';
    if (tl && tl.dataset.status === 'final' && document.querySelector('#stop').disabled) return 'ended';
    return null;
}"""


def _stop_a_long_answer(page, temp) -> bool:
    """Send prompts until one streams long enough to press Stop while it runs; True once Stop ended a run."""
    last = page.inner_text("#chatbot").strip()
    for prompt, think, t in LONG_ANSWERS:
        page.set_checked("#thinking input", think)
        temp.fill(t)
        temp.press("Enter")
        page.click("#clear")  # a fresh conversation: earlier turns change what the model writes
        page.wait_for_function("t => !t || !document.querySelector('#chatbot').innerText.includes(t)", arg=last[:40])
        last = prompt
        sent = [prompt, 1]  # the chat shows the prompt when this run has begun
        page.fill("#user-input textarea", prompt)
        page.click("#send")
        state = page.wait_for_function(_RUN_STATE, arg=sent, timeout=120000).json_value()
        if state == "ended":
            continue  # ended before it could be stopped: a short answer
        page.click("#stop")
        page.wait_for_function(f"sent => ({_RUN_STATE})(sent) === 'ended'", arg=sent, timeout=30000)
        status = page.inner_text("#status")
        if "Stopped" in status:
            return True
        assert "Done" in status or "Cut" in status, status  # ended by itself between the check and the click
    return False


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_remote_chat_with_server_parity_and_stop(browser, remote_app_url, scheme):
    from examples import builtin_model

    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(remote_app_url, wait_until="domcontentloaded")
        page.wait_for_selector("#backend", timeout=30000)
        pick_backend(page, "ts ·")
        assert page.input_value("#model-box textarea, #model-box input") == builtin_model.MODEL_DIR
        page.click("#check-server")
        wait_status(page, "ts (127.0.0.1:", timeout=30000)
        page.check("#parity-switch input")
        set_max_tokens(page, 120)
        temp = page.locator("#temperature input[type=number]")
        temp.fill("0")
        temp.press("Enter")
        page.fill("#user-input textarea", "What is the weather in Paris?")
        page.click("#send")
        wait_status(page, "Done", timeout=120000)
        page.wait_for_selector(FINAL)
        status = page.inner_text("#status")
        assert "removed special tokens" not in status  # the built-in markers survive the server
        assert "reasoning_content" in message_json(page, "reasoning_content")
        page.click("button[role=tab]:has-text('Server parity')")
        page.wait_for_selector("#parity-result", timeout=120000)
        assert page.locator("#parity-same").count() == 1, page.inner_text("#parity")
        assert "Greedy decoding" in page.inner_text("#parity-caveat")
        # rows are readable in both colour schemes: text and background differ clearly
        lum = page.evaluate("""() => {
            const td = document.querySelector('#parity tr.same td');
            const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
            const l = c => { const [r, g, b] = rgb(c); return 0.2126*r + 0.7152*g + 0.0722*b; };
            const st = getComputedStyle(td);
            return [l(st.color), l(st.backgroundColor)];
        }""")
        assert abs(lum[0] - lum[1]) > 100, lum
        # Stop closes the stream
        set_max_tokens(page, 2000)
        assert _stop_a_long_answer(page, temp), "no prompt gave an answer long enough to press Stop in"
        page.wait_for_selector(FINAL)
        assert int(page.get_attribute("#timeline .tl", "data-len")) < 20000
    finally:
        ctx.close()
    assert not errors, errors


def test_unreachable_server_is_a_readable_message(browser, tmp_path):
    from playground.remote import parse_remote_specs
    from playground.ui import build_ui, launch_kwargs

    dead = _free_port()  # nothing listens there
    demo = build_ui(None, preload=False, remotes=parse_remote_specs([f"gone=http://127.0.0.1:{dead}/v1,model=m"]))
    demo.queue()
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, prevent_thread_lock=True, quiet=True,
                **launch_kwargs())
    ctx = browser.new_context()
    page = ctx.new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
        page.wait_for_selector("#backend", timeout=30000)
        pick_backend(page, "gone ·")
        page.click("#check-server")
        wait_status(page, "Could not connect to gone", timeout=30000)
        assert "Traceback" not in page.inner_text("body")
    finally:
        ctx.close()
        demo.close()
