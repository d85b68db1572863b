"""Bounds on HTTP connections that the server under Gradio 6.31 (uvicorn) does not set.

A hostile-visitor trial (trial 10) held 19,990 half-sent requests (``GET / HTTP/1.1\\r\\nHost: x\\r\\n``, never
finished) open from one process: uvicorn has no timeout for a request head that never ends (``timeout_keep_alive``
covers only the idle time after a response, and any byte cancels it) and no cap per client, so the server reached
its open-file limit, answered no one else, and asyncio's accept loop logged a traceback per try (142 MB of log in
two minutes). `install` bounds both, in the HTTP protocol uvicorn builds for each connection:

* a connection that has not sent a complete request head within ``head_timeout`` seconds of connecting, or of its
  last answer, is closed (a request being answered, or whose body is arriving, is never cut);
* one network address may hold at most ``per_address`` connections; past it a new one is closed at once. Behind a
  proxy (a Hugging Face Space) every connection comes from the proxy, so the cap is off there
  (``trust_forwarded_for``); the proxy holds visitors' half-sent requests itself;
* the process's soft open-file limit is raised to its hard limit.

Gradio builds uvicorn's ``Config`` itself with ``http="auto"``; `install` points uvicorn's "auto" protocol name at
a subclass of the protocol it named (h11, or httptools when installed), for servers started afterwards in this
process (checked against uvicorn 0.54 by ``tests/playground/test_connections.py``).
"""

from __future__ import annotations

import threading
from typing import Any

_AUTO = "uvicorn.protocols.http.auto:AutoHTTPProtocol"
_lock = threading.Lock()
_open: dict[str, int] = {}  # connections held per peer address
_settings = {"head_timeout": None, "per_address": None}


class _Guard:
    """Mixed into uvicorn's HTTP protocol class (needs its ``transport``, ``cycle`` and ``connection_lost``)."""

    _peer: str | None = None
    _head_timer: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        peer = transport.get_extra_info("peername")
        cap = _settings["per_address"]
        if cap is not None and isinstance(peer, tuple) and peer:
            with _lock:
                held = _open.get(peer[0], 0)
                if held < cap:
                    _open[peer[0]] = held + 1
                    self._peer = peer[0]
            if self._peer is None:
                transport.abort()  # over the cap: no answer (it would cost what the cap saves)
                return
        self._arm(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._release()
        super().connection_lost(exc)  # type: ignore[misc]

    def _release(self) -> None:
        if self._peer is not None:
            with _lock:
                left = _open.get(self._peer, 1) - 1
                if left > 0:
                    _open[self._peer] = left
                else:
                    _open.pop(self._peer, None)
            self._peer = None

    def _arm(self, cycle: Any) -> None:
        timeout = _settings["head_timeout"]
        if timeout is not None:
            self._head_timer = self.loop.call_later(timeout, self._check_head, cycle)  # type: ignore[attr-defined]

    def _check_head(self, cycle_then: Any) -> None:
        """``head_timeout`` after arming: close unless a new request came since, or one is still being served."""
        self._head_timer = None
        transport = self.transport  # type: ignore[attr-defined]
        if transport.is_closing():
            return
        if transport.get_protocol() is not self:  # upgraded (a websocket): no longer ours to time
            self._release()
            return
        cycle = getattr(self, "cycle", None)
        if cycle is cycle_then and (cycle is None or cycle.response_complete):
            transport.close()  # idle, or a request head that never ended
            return
        self._arm(cycle)


def _guarded_protocol() -> type:
    from uvicorn.importer import import_from_string

    base = import_from_string(_AUTO)
    return type(f"Guarded{base.__name__}", (_Guard, base), {"__module__": __name__})


#: uvicorn's "auto" HTTP protocol (h11, or httptools when installed) with `_Guard` mixed in
GuardedHTTPProtocol = _guarded_protocol()


def raise_open_file_limit() -> None:
    """Raise this process's soft open-file limit to its hard limit (where the platform has one)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def install(head_timeout: float | None, per_address: int | None) -> None:
    """Bound the connections of uvicorn servers started after this call in this process (see the module doc).

    Args:
        head_timeout: seconds a connection may take to send a complete request head (None: no limit).
        per_address: connections one peer address may hold at once (None: no cap).
    """
    import uvicorn.config

    _settings["head_timeout"] = head_timeout
    _settings["per_address"] = per_address
    raise_open_file_limit()
    if head_timeout is None and per_address is None:
        return
    uvicorn.config.HTTP_PROTOCOLS["auto"] = f"{__name__}:GuardedHTTPProtocol"
