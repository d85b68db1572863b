"""Killable worker processes, for work that must never pin a core of the server.

A thread cannot be stopped from outside, and a regex without a timeout (the transformers reference parser runs
the template's patterns, ``tag_pattern`` included, with none) can backtrack for hours. So such work runs in a
small pool of worker processes: a call that runs past its deadline, or whose client left, gets its worker
killed and replaced, and the caller gets `WorkerTimeout` at once.
"""

from __future__ import annotations

import importlib
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Callable

POLL_S = 0.05  # how often a waiting call looks at its cancel event


class WorkerTimeout(TimeoutError):
    """The call did not finish within its deadline (``budget`` seconds), or no worker was free in time;
    ``reason`` is ``"deadline"``, ``"busy"`` or ``"cancelled"``."""

    def __init__(self, budget: float, reason: str = "deadline"):
        self.budget, self.reason = budget, reason
        what = {"busy": "no worker was free", "cancelled": "the request was cancelled"}.get(reason, "it ran")
        super().__init__(f"stopped after {budget:g} s ({what})")


class WorkerFailed(RuntimeError):
    """The called function raised inside the worker (``type_name``: its exception type; ``message``), or the
    worker died (``type_name`` ``"WorkerDied"``, e.g. killed for memory)."""

    def __init__(self, type_name: str, message: str):
        self.type_name, self.message = type_name, message
        super().__init__(f"{type_name}: {message}")


_FRAME = struct.Struct("<Q")  # length prefix of each pickled message on the pipes
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Pipe:
    """Length-prefixed pickles over a pair of file descriptors (a worker's stdin/stdout)."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def send(self, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_FRAME.pack(len(data)) + data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def _read(self, n: int) -> bytes:
        parts = []
        while n:
            part = os.read(self.read_fd, min(n, 1 << 20))
            if not part:
                raise EOFError("the other end closed the pipe")
            parts.append(part)
            n -= len(part)
        return b"".join(parts)

    def recv(self) -> Any:
        (n,) = _FRAME.unpack(self._read(_FRAME.size))
        return pickle.loads(self._read(n))

    def poll(self, timeout: float) -> bool:
        return bool(select.select([self.read_fd], [], [], max(0.0, timeout))[0])

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _serve_stdio() -> None:
    """Entry point of a worker process: serve requests on stdin/stdout (see `_serve`)."""
    preload = tuple(filter(None, os.environ.get("PLAYGROUND_WORKER_PRELOAD", "").split(",")))
    limit = int(os.environ.get("PLAYGROUND_WORKER_MEMORY_MB", "0")) or None
    conn = _Pipe(sys.stdin.fileno(), os.dup(sys.stdout.fileno()))
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the pipe
    _serve(conn, preload, limit)


def _serve(conn, preload: tuple[str, ...], memory_limit_mb: int | None) -> None:
    """Worker main loop: import ``preload``, say ready, then answer ``(fn, args)`` requests until None arrives."""
    if memory_limit_mb:
        try:
            import resource

            limit = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # not on this platform: the deadline still applies
            pass
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the call that needs it reports the failure
            pass
    conn.send(("ready",))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        fn, args = request
        try:
            reply = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - reported to the caller, the worker lives on
            reply = ("err", type(exc).__name__, str(exc)[:2000])
        fn = args = request = None  # nothing of the job kept past it
        _forget_patterns()
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable result
            conn.send(("err", type(exc).__name__, str(exc)[:2000]))


def _forget_patterns() -> None:
    """Drop the patterns a job compiled into the `regex` module's cache: the transformers parser compiles each
    visitor's template patterns there (`regex.compile` keeps 500, of any size; 20 templates with a 99,000-item
    pattern grew each worker by ~160 MB, kept). Our own parser's caches are bounded by size
    (`parsing.regex_cost.sized_cache`) and stay."""
    module = sys.modules.get("regex")
    if module is not None:
        module.purge()


class _Worker:
    """One worker: a fresh Python process (``python -c ...``, so nothing of the server's main module runs in
    it) speaking `_Pipe` on its stdin/stdout."""

    def __init__(self, preload: tuple[str, ...], memory_limit_mb: int | None):
        env = dict(os.environ, PLAYGROUND_WORKER_PRELOAD=",".join(preload),
                   PLAYGROUND_WORKER_MEMORY_MB=str(memory_limit_mb or 0))
        code = f"import sys; sys.path.insert(0, {_ROOT!r}); from playground.workers import _serve_stdio; _serve_stdio()"
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env, close_fds=True)
        self.conn = _Pipe(self.process.stdout.fileno(), self.process.stdin.fileno())
        self.ready = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(timeout=5)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self._close_pipes()

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.process.wait(timeout=2)
        except Exception:  # noqa: BLE001
            pass
        if self.alive():
            self.kill()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except Exception:  # noqa: BLE001
                pass


class WorkerPool:
    """``size`` worker processes (fresh interpreters, so no lock of the server's threads is inherited) that
    run picklable module-level functions with a deadline.

    Args:
        size: workers, i.e. calls that can run at once; more callers wait for a free worker (that wait
            counts against their deadline).
        preload: modules each worker imports when it starts (before it counts as ready).
        memory_limit_mb: address-space limit of each worker (None: none), so a runaway allocation fails there.
        spares: workers started ahead and kept out of service (each imports ``preload`` meanwhile), so that one
            killed for overrunning is replaced by a ready process: a fresh one spends seconds importing
            (``POOL_PRELOAD``: 3.7-4.7 s on the loaded 2-core dev machine), and the next visitor's call waited
            for it. Each costs one idle process (65 MB there).

    Workers start on the first call (or `warm_up`); one that overruns is killed, a spare takes its place at once,
    and a new spare starts.
    """

    def __init__(self, size: int = 2, preload: tuple[str, ...] = (), memory_limit_mb: int | None = 2048,
                 spares: int = 1):
        self.size = max(1, int(size))
        self.preload = tuple(preload)
        self.memory_limit_mb = memory_limit_mb
        self.spares = max(0, int(spares))
        self._spare: list[_Worker] = []  # started, out of service until a worker is killed
        self._idle: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self.kills = 0  # workers killed for overrunning (for tests and the status line)

    def warm_up(self) -> None:
        """Start the workers now (each imports ``preload`` in the background)."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
            for _ in range(self.size):
                self._idle.put(self._new())
            self._spare.extend(self._new() for _ in range(self.spares))

    def _new(self) -> _Worker:
        return _Worker(self.preload, self.memory_limit_mb)

    def call(self, fn: Callable, *args: Any, timeout: float, cancel: threading.Event | None = None,
             startup_timeout: float = 120.0) -> Any:
        """Run ``fn(*args)`` in a worker and return its result within ``timeout`` seconds.

        ``fn`` must be importable by name (a module-level function); ``args`` and the result are pickled.
        A worker still starting (importing ``preload``) is waited for up to ``startup_timeout`` seconds first:
        its start is not the call's work, and the deadline of ``timeout`` starts once it is ready.

        Raises:
            WorkerTimeout: the deadline passed (the worker was killed and replaced), no worker was free in
                time, or ``cancel`` was set.
            WorkerFailed: ``fn`` raised (its type name and message), or the worker died.
        """
        if self._closed:
            raise WorkerFailed("PoolClosed", "the worker pool is closed")
        self.warm_up()
        worker = self._take(time.monotonic() + timeout, timeout, cancel)
        try:
            if not worker.ready:
                self._wait(worker, time.monotonic() + startup_timeout, startup_timeout, cancel)
                worker.conn.recv()  # "ready"
                worker.ready = True
            deadline = time.monotonic() + timeout
            worker.conn.send((fn, args))
            self._wait(worker, deadline, timeout, cancel)
            reply = worker.conn.recv()
        except WorkerTimeout:
            self._replace(worker)
            raise
        except (EOFError, OSError, BrokenPipeError):
            code = worker.process.poll()
            self._replace(worker)
            raise WorkerFailed("WorkerDied", f"the worker process ended (exit code {code})") from None
        if self._closed:
            worker.stop()
        else:
            self._idle.put(worker)
        if reply[0] == "ok":
            return reply[1]
        raise WorkerFailed(reply[1], reply[2])

    def _take(self, deadline: float, budget: float, cancel: threading.Event | None) -> _Worker:
        while True:
            left = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                raise WorkerTimeout(budget, "cancelled")
            if left <= 0:
                raise WorkerTimeout(budget, "busy")
            try:
                return self._idle.get(timeout=min(left, POLL_S))
            except queue.Empty:
                continue

    @staticmethod
    def _wait(worker: _Worker, deadline: float, budget: float, cancel: threading.Event | None) -> None:
        while True:
            left = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                raise WorkerTimeout(budget, "cancelled")
            if left <= 0:
                raise WorkerTimeout(budget)
            if worker.conn.poll(min(left, POLL_S)):
                return
            if not worker.alive() and not worker.conn.poll(0):
                raise EOFError

    def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` and put a spare in its place (a fresh process when none is alive); start a new spare."""
        worker.kill()
        dead = []
        with self._lock:
            self.kills += 1
            if self._closed:
                return
            fresh = None
            while self._spare and fresh is None:
                spare = self._spare.pop(0)
                if spare.alive():
                    fresh = spare
                else:
                    dead.append(spare)
            if fresh is None:
                fresh = self._new()
            while len(self._spare) < self.spares:
                self._spare.append(self._new())
        for spare in dead:  # e.g. killed for memory while it waited
            spare.kill()
        self._idle.put(fresh)

    def alive(self) -> list[int]:
        """Process ids of the workers currently idle (for tests)."""
        with self._idle.mutex:
            return [w.pid for w in self._idle.queue if w.alive()]

    def spare_pids(self) -> list[int]:
        """Process ids of the spare workers, started and out of service (for tests)."""
        with self._lock:
            return [w.pid for w in self._spare if w.alive()]

    def close(self) -> None:
        """Stop every idle and spare worker; busy ones are killed when their call ends."""
        with self._lock:
            self._closed = True
            spares, self._spare = self._spare, []
        for spare in spares:
            spare.stop()
        while True:
            try:
                self._idle.get_nowait().stop()
            except queue.Empty:
                break


def cpu_count() -> int:
    """CPUs this process may use (the affinity mask, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
