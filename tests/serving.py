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


# How `start_app` runs app.py with ``memory_report``: on SIGUSR1 the app runs a full garbage collection, then writes
# the bytes (``sys.getsizeof``) of every Python object still alive to the report file (one integer). Counting
# objects, not the process's resident memory, leaves out what the allocator keeps of freed memory (which depends on
# which threads ran the work) and garbage not yet collected: the number depends on what the app holds, not on
# timing. Nothing runs until the signal, so the app serves at its usual speed.
_MEASURED_APP = """
import gc, os, runpy, signal, sys

report = sys.argv[1]
sys.argv = sys.argv[2:]


def live_bytes():
    gc.collect()
    seen = set()
    todo = gc.get_objects()
    seen.update((id(seen), id(todo)))  # the walk's own bookkeeping is not the app's
    total = 0
    while todo:  # every object the collector tracks, then what they refer to that it does not (str, int, ...)
        fresh = []
        for o in todo:
            if id(o) not in seen:
                seen.add(id(o))
                total += sys.getsizeof(o)
                fresh.append(o)
        todo = [r for r in gc.get_referents(*fresh) if not gc.is_tracked(r)]
    return total


def on_signal(signum, frame):
    size = live_bytes()
    with open(report + ".part", "w") as fh:
        fh.write(str(size))
    os.replace(report + ".part", report)


signal.signal(signal.SIGUSR1, on_signal)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def start_app(args: list[str], log: Path, ready, startup_timeout: float = 240.0,
              preexec_fn=None, memory_report: Path | None = None) -> tuple[subprocess.Popen, str]:
    """Start ``python app.py --port PORT *args`` offline on a free loopback port, output to ``log``.

    ``preexec_fn``: run in the child before ``app.py`` starts (as `subprocess.Popen`'s; e.g. to lower a limit).
    ``memory_report``: a file the app writes the size of its live Python objects to on request (`live_memory`).

    Returns ``(proc, url)`` (``http://127.0.0.1:PORT/``) once ``ready(url)`` returns without raising; fails the
    test with the log's tail if the app exits or is not ready within ``startup_timeout`` seconds.
    """
    import pytest

    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    env.pop("SPACE_ID", None)
    with open(log, "w") as out:
        launcher = [sys.executable] if memory_report is None else [sys.executable, "-c", _MEASURED_APP,
                                                                    str(memory_report)]
        proc = subprocess.Popen([*launcher, "app.py", "--port", str(port), *args], cwd=ROOT, env=env,
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


def live_memory(proc: subprocess.Popen, report: Path, timeout: float = 300.0) -> int:
    """Bytes of the Python objects alive in an app started with ``memory_report=report``, after a full garbage
    collection (``sys.getsizeof`` of each, counted once; memory the allocator keeps after a free is not counted).

    Fails the test when the app does not answer within ``timeout`` seconds.
    """
    import pytest

    report.unlink(missing_ok=True)
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while not report.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail("the app did not report its memory")
        time.sleep(0.05)
    return int(report.read_text())


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
