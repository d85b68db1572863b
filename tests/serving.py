"""Start a real `transformers serve` on a free loopback port (for the remote-backend tests).

Used by tests/remote and tests/browser fixtures.  The server runs offline on CPU with an empty hub
cache of its own (its /v1/models scans the cache and answers 500 when the folder is missing) and
serves local folders: a request names the model by its folder path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROOT = Path(__file__).resolve().parents[1]


def start_app(args: list[str], log: Path, ready, startup_timeout: float = 240.0,
              preexec_fn=None) -> tuple[subprocess.Popen, str]:
    """Start ``python app.py --port PORT *args`` offline on a free loopback port, output to ``log``.

    ``preexec_fn``: run in the child before ``app.py`` starts (as `subprocess.Popen`'s; e.g. to lower a limit).

    Returns ``(proc, url)`` (``http://127.0.0.1:PORT/``) once ``ready(url)`` returns without raising; fails the
    test with the log's tail if the app exits or is not ready within ``startup_timeout`` seconds.
    """
    import pytest

    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    env.pop("SPACE_ID", None)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), *args], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + startup_timeout
    while True:
        try:
            ready(url)
            return proc, url
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the app did not start:\n" + log.read_text()[-3000:])
            time.sleep(1)


class ServeProcess:
    """A running ``transformers serve``: ``url`` (``http://127.0.0.1:PORT/v1``), ``proc``, ``log``."""

    def __init__(self, workdir: Path, startup_timeout: float = 240.0):
        self.port = free_port()
        hub = workdir / "hub"
        hub.mkdir(parents=True, exist_ok=True)
        self.log = workdir / f"serve-{self.port}.log"
        env = dict(os.environ, HF_HUB_CACHE=str(hub), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   TOKENIZERS_PARALLELISM="false")
        cmd = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve",
               "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu", "--log-level", "warning"]
        self._log_file = open(self.log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.time() + startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"transformers serve did not answer /health in {startup_timeout:.0f} s: "
                                   f"{self.log_tail()}")
            time.sleep(0.3)

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash or a dropped machine would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()


def warm_up(url: str, model: str) -> None:
    """Load ``model`` in the server (the first request to a model loads it)."""
    httpx.post(f"{url}/completions", json={"model": model, "prompt": "hi", "max_tokens": 1}, timeout=240
               ).raise_for_status()


def special_markers_copy(model_dir: str, dest: Path) -> str:
    """A copy of a model folder whose reasoning/tool markers are special tokens (as the built-in model had
    them before they became plain added tokens): a server decoding with ``skip_special_tokens`` drops them."""
    dest = Path(dest)
    shutil.copytree(model_dir, dest, dirs_exist_ok=True)
    tj = json.loads((dest / "tokenizer.json").read_text())
    for t in tj["added_tokens"]:
        if t["content"] in MARKERS:
            t["special"] = True
    (dest / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    cfg = json.loads((dest / "tokenizer_config.json").read_text())
    extra = list(cfg.get("extra_special_tokens") or [])
    cfg["extra_special_tokens"] = extra + [m for m in MARKERS if m not in extra]
    (dest / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False, indent=2))
    return str(dest)
