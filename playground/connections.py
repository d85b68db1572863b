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
* all addresses together may hold at most ``total`` connections. Trial 10 then held 79 loopback addresses x 256
  connections and reached the open-file limit again (normal requests took 2.8-6 s). The cap is kept at most half
  the open-file limit (`total_cap`), so the files a request opens (static files, uploads, worker pipes) are still
  there when a flood fills it. At the cap a new connection is not refused: the connection that has waited longest
  for a request head (half-sent, or idle since its last answer) is closed to make room, so a flood of half-sent
  requests from many addresses cannot keep a new visitor out (its own head arrives long before the flood has
  opened ``total`` newer connections). A connection whose request is being answered or whose body is arriving is
  never closed for this; only when every held connection is such is a new one closed at once;
* websocket upgrades are refused (the request is answered as plain HTTP): Gradio 6.31 serves none (its streams
  are server-sent events, plain HTTP answers that stay counted above), and an upgraded connection leaves uvicorn's
  HTTP protocol, so it would escape every bound here. uvicorn's "Unsupported upgrade request" warning, two log
  lines per such request, is not written;
* the process's soft open-file limit is raised to its hard limit;
* when accepting fails for want of files anyway (``EMFILE``: the cap off, or files held elsewhere), asyncio logs a
  traceback per try, many a second (Python 3.11 retries up to 100 times per loop tick): `AcceptErrorLog` turns that
  into one line a minute with a count.

Gradio builds uvicorn's ``Config`` itself with ``http="auto"``; `install` points uvicorn's "auto" protocol name at
a subclass of the protocol it named (h11, or httptools when installed), for servers started afterwards in this
process (checked against uvicorn 0.54 by ``tests/playground/test_connections.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

_AUTO = "uvicorn.protocols.http.auto:AutoHTTPProtocol"
_lock = threading.Lock()
_open: dict[str, int] = {}  # connections held per peer address
_total = [0]  # connections held by all addresses (counted while a total cap is set)
_settings: dict[str, Any] = {"head_timeout": None, "per_address": None, "total": None}
# connections counted in _total, oldest first by the time they began waiting for a request head (connected, or
# answered their last request); the first that is still waiting is the one closed when the total cap is reached
_held: dict[Any, None] = {}
_evicted = [0, None]  # connections closed to make room since the last log line, when that line was written
EVICTION_LOG_EVERY_S = 60.0


class _Guard:
    """Mixed into uvicorn's HTTP protocol class (needs its ``transport``, ``cycle`` and ``connection_lost``)."""

    _peer: str | None = None
    _counted = False  # counted in _total
    _head_timer: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if not self._admit(transport.get_extra_info("peername")):
            transport.abort()  # over a cap: no answer (it would cost what the cap saves)
            return
        self._arm(None)

    def _admit(self, peer: Any) -> bool:
        """Count this connection under the caps; False (nothing counted) when one of them is full.

        At the total cap the connection that has waited longest for a request head is closed to make room
        (`_make_room`); past the cap per address a new connection is refused whatever the total."""
        cap, total = _settings["per_address"], _settings["total"]
        address = peer[0] if cap is not None and isinstance(peer, tuple) and peer else None
        with _lock:
            if address is not None and _open.get(address, 0) >= cap:
                return False
            if total is not None and _total[0] >= total and not _make_room():
                return False
            if total is not None:
                _total[0] += 1
                self._counted = True
                _held[self] = None
            if address is not None:
                _open[address] = _open.get(address, 0) + 1
                self._peer = address
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._release()
        super().connection_lost(exc)  # type: ignore[misc]

    def _release(self) -> None:
        with _lock:
            self._release_locked()

    def _release_locked(self) -> None:
        if self._counted:
            _total[0] -= 1
            self._counted = False
            _held.pop(self, None)
        if self._peer is not None:
            left = _open.get(self._peer, 1) - 1
            if left > 0:
                _open[self._peer] = left
            else:
                _open.pop(self._peer, None)
            self._peer = None

    def _waiting_for_head(self) -> bool:
        """Whether this connection is waiting for a request head: none complete since it connected or since its
        last answer (a request being answered, or whose body is arriving, is not waiting)."""
        transport = getattr(self, "transport", None)
        if transport is None or transport.is_closing() or transport.get_protocol() is not self:
            return False
        cycle = getattr(self, "cycle", None)
        return cycle is None or cycle.response_complete

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self._counted:
            with _lock:
                if self._counted:  # waiting for a head again, from now: last in line to be closed
                    _held.pop(self, None)
                    _held[self] = None

    def _evict(self) -> None:
        """Close this connection to make room for a new one (called on its own event loop)."""
        transport = getattr(self, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()

    # Gradio 6.31 serves no websocket (see the module doc): an upgrade request is answered as plain HTTP, quietly
    def _should_upgrade_to_ws(self) -> bool:
        return False

    def _unsupported_upgrade_warning(self) -> None:
        pass

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
        if transport.get_protocol() is not self:  # upgraded (refused above; kept so no count can leak)
            self._release()
            return
        cycle = getattr(self, "cycle", None)
        if cycle is cycle_then and (cycle is None or cycle.response_complete):
            transport.close()  # idle, or a request head that never ended
            return
        self._arm(cycle)


def _make_room() -> bool:
    """At the total cap (called holding ``_lock``): stop counting the held connection that has waited longest for a
    request head and close it on its own event loop. False, with nothing closed, when every held connection has a
    request being answered or a body arriving.

    Connections found busy move to the end of the line, so the next search does not walk them again; each goes
    back to the end anyway when its answer is complete (``on_response_complete``)."""
    victim, busy = None, []
    for conn in _held:
        if conn._waiting_for_head():
            victim = conn
            break
        busy.append(conn)
    for conn in busy:
        del _held[conn]
        _held[conn] = None
    if victim is None:
        return False
    victim._release_locked()
    victim.loop.call_soon_threadsafe(victim._evict)
    _evicted[0] += 1
    now = time.monotonic()
    if _evicted[1] is None or now - _evicted[1] >= EVICTION_LOG_EVERY_S:
        logging.getLogger(__name__).warning(
            "%s connections held (the --max-connections cap): closed %s waiting for a request head to let new ones "
            "in (logged at most once every %g s)", f"{_settings['total']:,}", f"{_evicted[0]:,}",
            EVICTION_LOG_EVERY_S)
        _evicted[:] = [0, now]
    return True


def _guarded_protocol() -> type:
    from uvicorn.importer import import_from_string

    base = import_from_string(_AUTO)
    return type(f"Guarded{base.__name__}", (_Guard, base), {"__module__": __name__})


#: uvicorn's "auto" HTTP protocol (h11, or httptools when installed) with `_Guard` mixed in
GuardedHTTPProtocol = _guarded_protocol()


def raise_open_file_limit() -> int | None:
    """Raise this process's soft open-file limit to its hard limit (where the platform has one).

    Returns the soft limit in force afterwards (None: unlimited, or no such limit on this platform).
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        return None if soft == resource.RLIM_INFINITY else soft
    except (ImportError, ValueError, OSError):
        return None


def total_cap(requested: int | None, open_files: int | None) -> int | None:
    """The total connection cap in force: ``requested``, lowered to half of ``open_files`` (the open-file limit)
    when that is smaller, so that a full cap leaves files for everything else. None: no cap."""
    if requested is None:
        return None
    if open_files is None:
        return requested
    return max(1, min(requested, open_files // 2))


class AcceptErrorLog(logging.Filter):
    """A filter for the ``asyncio`` logger: its "socket.accept() out of system resource" records (one per failed
    accept, with a traceback) become one line per ``every`` seconds, without the traceback, counting the ones left
    out. Other records pass unchanged."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self, every: float = 60.0):
        super().__init__()
        self.every = every
        self._last: float | None = None
        self._left_out = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith(self.MESSAGE)):
            return True
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every:
            self._left_out += 1
            return False
        error = record.exc_info[1] if record.exc_info else None
        since = f"; {self._left_out:,} more since the last such line" if self._left_out else ""
        record.msg = (f"{self.MESSAGE} ({error or 'no detail'}): new connections wait until files are free; logged "
                      f"at most once every {self.every:g} s{since}")
        record.args = ()
        record.exc_info = record.exc_text = None
        self._last, self._left_out = now, 0
        return True


_accept_log = AcceptErrorLog()


def install(head_timeout: float | None, per_address: int | None, total: int | None = None) -> int | None:
    """Bound the connections of uvicorn servers started after this call in this process (see the module doc).

    Args:
        head_timeout: seconds a connection may take to send a complete request head (None: no limit).
        per_address: connections one peer address may hold at once (None: no cap).
        total: connections all addresses may hold at once (None: no cap); lowered by `total_cap`.

    Returns the total cap in force (None: none).
    """
    import uvicorn.config

    open_files = raise_open_file_limit()
    _settings["head_timeout"] = head_timeout
    _settings["per_address"] = per_address
    _settings["total"] = total_cap(total, open_files)
    asyncio_log = logging.getLogger("asyncio")
    if _accept_log not in asyncio_log.filters:
        asyncio_log.addFilter(_accept_log)
    if head_timeout is not None or per_address is not None or _settings["total"] is not None:
        uvicorn.config.HTTP_PROTOCOLS["auto"] = f"{__name__}:GuardedHTTPProtocol"
    return _settings["total"]
