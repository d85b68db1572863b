"""`playground.workers.WorkerPool`: a worker killed for overrunning is replaced by a spare started ahead, so the
next call does not wait for a fresh interpreter's imports, and the processes kept stay bounded."""

from __future__ import annotations

import os
import time

import pytest

from playground.workers import WorkerPool, WorkerTimeout


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


@pytest.mark.slow
def test_a_killed_worker_is_replaced_by_the_spare_started_before_it():
    pool = WorkerPool(1, preload=(), spares=1)
    try:
        pool.warm_up()
        assert pool.call(os.getpid, timeout=60) in pool.alive()
        killed_before = []
        for _ in range(3):
            worker, spare = pool.alive(), pool.spare_pids()
            assert len(worker) == 1 and len(spare) == 1 and worker != spare
            with pytest.raises(WorkerTimeout):
                pool.call(time.sleep, 30, timeout=0.5)
            # the spare, started before the kill, serves now; a new spare took its place; the killed one is gone
            assert pool.alive() == spare
            assert pool.call(os.getpid, timeout=60) == spare[0]
            new_spare = pool.spare_pids()
            assert len(new_spare) == 1 and new_spare != spare and new_spare != worker
            assert _gone(worker[0])
            killed_before.append(worker[0])
        assert pool.kills == 3 and all(_gone(pid) for pid in killed_before)
        spare = pool.spare_pids()
    finally:
        pool.close()
    assert pool.spare_pids() == [] and all(_gone(pid) for pid in spare)


def test_a_pool_without_spares_starts_a_fresh_worker_after_a_kill():
    pool = WorkerPool(1, preload=(), spares=0)
    try:
        first = pool.call(os.getpid, timeout=60)
        with pytest.raises(WorkerTimeout):
            pool.call(time.sleep, 30, timeout=0.5)
        assert pool.spare_pids() == []
        second = pool.call(os.getpid, timeout=60)
        assert second != first and _gone(first)
    finally:
        pool.close()


def test_a_worker_keeps_no_pattern_a_job_compiled():
    """The transformers parser compiles a visitor's patterns into `regex`'s own cache (500 of any size: ~16 MB per
    template with a 99,000-item pattern, per worker, kept; trial 13 F8): a worker empties it after each job."""
    import regex

    source = "(?:zq{1000}){5}|<end>"
    pool = WorkerPool(1, preload=(), spares=0)
    try:
        assert pool.call(regex.findall, source, "<end>", timeout=60) == ["<end>"]  # regex.findall caches it
        cached = pool.call(eval, "[key[0] for key in __import__('regex')._main._cache]", timeout=60)  # the next job
        assert source not in cached
    finally:
        pool.close()
