"""Memory per session of the running app: N visitors each paste and parse a 200 KB output.

Starts ``app.py`` as a server on a free loopback port (public limits, the built-in model), warms it up with
one parse, then opens N `gradio_client` sessions that each paste a ~200 KB generation (reasoning and a tool
call, streamed as ~100,000 token-like chunks) and parse it, keeping every session open. Prints the server's
resident memory (RSS, from /proc) at the baseline and after the sessions, the growth per session, and the
parse time seen by the clients; then closes the sessions and prints the RSS again.

    .venv/bin/python benchmarks/bench_sessions.py                  # 100 sessions, 200 KB each
    .venv/bin/python benchmarks/bench_sessions.py --sessions 20 --kb 200 --concurrency 4

Targets (issue #10): a 200 KB run keeps at most 3 MB per session (see `Session.nbytes` and
`tests/playground/test_compact.py`, which measures it with tracemalloc); 100 sessions with 200 KB pastes stay
under 1 GB above the baseline. ``--no-eviction`` raises the sessions' memory cap so that every run is kept
(the default public cap of 512 MB would otherwise drop the oldest runs first and flatter the numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(__file__))

from bench_stream import PREFIX, TEMPLATE, make_generation  # noqa: E402


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (VmRSS)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_server(extra: list[str]) -> tuple[subprocess.Popen, str]:
    """Launch ``app.py`` on a free port; returns the process and its URL once it answers."""
    from gradio_client import Client

    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "app.py"), "--port", str(port), *extra],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while True:
        try:
            Client(url, verbose=False).close()
            return proc, url
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the app did not start")
            time.sleep(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--kb", type=int, default=200, help="size of each paste in KB")
    ap.add_argument("--concurrency", type=int, default=4, help="sessions parsing at once")
    ap.add_argument("--no-eviction", action="store_true", help="keep every run (sessions memory cap 100 GB)")
    args = ap.parse_args()

    from gradio_client import Client

    extra = ["--public", "--request-budget", "60", "--reference-budget", "60"]
    if args.no_eviction:
        extra += ["--sessions-memory-mb", "100000"]
    proc, url = start_server(extra)
    raw = make_generation(args.kb)
    template = json.dumps(TEMPLATE)
    try:
        warm = Client(url, verbose=False)
        warm.predict(raw, PREFIX, "", template, api_name="/paste_parse")
        warm.close()
        time.sleep(5)
        base = rss_mb(proc.pid)
        print(f"paste: {len(raw):,} characters; server RSS at baseline (after one warm-up parse): {base:.0f} MB")
        clients: list = []
        times: list[float] = []

        def visit(_i: int) -> None:
            client = Client(url, verbose=False)
            t0 = time.perf_counter()
            status = client.predict(raw, PREFIX, "", template, api_name="/paste_parse")[0]
            times.append(time.perf_counter() - t0)
            if "Parsed" not in status:
                print("unexpected status:", status[:300])
            clients.append(client)

        peak = base
        with ThreadPoolExecutor(args.concurrency) as pool:
            for i, _ in enumerate(pool.map(visit, range(args.sessions))):
                if (i + 1) % 10 == 0:
                    peak = max(peak, rss_mb(proc.pid))
        time.sleep(5)
        after = rss_mb(proc.pid)
        peak = max(peak, after)
        grow = after - base
        print(f"{args.sessions} sessions open: RSS {after:.0f} MB (+{grow:.0f} MB above baseline, peak "
              f"+{peak - base:.0f} MB); {grow / args.sessions:.2f} MB per session")
        print(f"parse as seen by a client: median {statistics.median(times):.2f} s, max {max(times):.2f} s "
              f"({args.concurrency} at once)")
        for client in clients:
            client.close()
        time.sleep(10)
        print(f"all sessions closed: RSS {rss_mb(proc.pid):.0f} MB (freed memory stays with the allocator)")
        print(f"targets: under 1 GB above baseline for 100 sessions: "
              f"{'met' if grow * 100 / args.sessions < 1024 else 'NOT met'}")
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
