"""What a worker killed for overrunning costs the next call: with and without a spare worker started ahead.

A `playground.workers.WorkerPool` of one worker importing the playground's ``POOL_PRELOAD`` (the transformers
parser, the Doctor) runs a call that overruns its deadline (the worker is killed), then at once a call that does
nothing: its time is what the next visitor waits for a worker. Between rounds the pool is left idle for
``--settle`` seconds (a spare needs that long to import). Prints each round, the medians, their ratio, and the
resident memory of every pool process (the spare's cost).

    .venv/bin/python benchmarks/bench_worker_replacement.py [--rounds 3] [--settle 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from playground.reference import POOL_PRELOAD  # noqa: E402
from playground.workers import WorkerPool, WorkerTimeout  # noqa: E402


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _after_kills(spares: int, rounds: int, settle: float) -> tuple[list[float], float]:
    """Seconds of the call made right after each kill, and the pool's processes' RSS (MB) at the end."""
    pool = WorkerPool(1, preload=POOL_PRELOAD, spares=spares)
    try:
        pool.call(time.sleep, 0, timeout=5)  # the first worker up
        times = []
        for _ in range(rounds):
            time.sleep(settle)
            try:
                pool.call(time.sleep, 60, timeout=0.5)
            except WorkerTimeout:
                pass
            start = time.monotonic()
            pool.call(time.sleep, 0, timeout=5)
            times.append(time.monotonic() - start)
        time.sleep(settle)
        rss = sum(_rss_mb(pid) for pid in pool.alive() + pool.spare_pids())
        return times, rss
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=10.0, help="idle seconds before each kill")
    args = parser.parse_args()
    results = {}
    for spares in (0, 1):
        times, rss = _after_kills(spares, args.rounds, args.settle)
        results[spares] = statistics.median(times)
        print(f"spares={spares}: call after a kill " + ", ".join(f"{t:.3f}" for t in times)
              + f" s (median {results[spares]:.3f} s); pool processes {rss:.0f} MB", flush=True)
    print(f"ratio (no spare / spare): {results[0] / max(results[1], 1e-6):.0f}x")


if __name__ == "__main__":
    main()
