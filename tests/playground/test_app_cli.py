"""`python app.py --model PATH --host HOST --port PORT` serves the app."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts the app as a server process

ROOT = Path(__file__).resolve().parents[2]


def test_flags_parse():
    sys.path.insert(0, str(ROOT))
    import app

    a = app.parse_args(["--model", "m", "--host", "0.0.0.0", "--port", "9999", "--trust-remote-code"])
    assert (a.model, a.host, a.port, a.trust_remote_code) == ("m", "0.0.0.0", 9999, True)
    assert app.parse_args([]).trust_remote_code is False


def test_app_serves_the_page(tiny_model_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--model", tiny_model_dir, "--host", "127.0.0.1",
                             "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        body = ""
        while time.time() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=5).read().decode()
                break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(proc.stdout.read().decode()[-2000:])
                time.sleep(1)
        assert '"template"' in body and "timeline" in body  # elem_ids of the editor and the timeline
    finally:
        proc.terminate()
        proc.wait(timeout=30)
