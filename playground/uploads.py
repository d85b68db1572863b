"""Bounds on what visitors may write to a public server's disk through uploads, which Gradio 6.31 does not set.

``POST /gradio_api/upload`` writes every file of a multipart form into Gradio's upload folder before any event
handler runs. It skips the queue, so the per-visitor job cap (`playground.fairness`) never applies, and Gradio caps
only the size of each file (``max_file_size``, 2 MB on a public server). A hostile-visitor trial (trial 12) sent
4 files of 1.99 MB a request in a loop and wrote 1 GB in 15 s from one client; ``delete_cache=(600, 600)`` sweeps
files only after 10-20 minutes. Two more routes wrote files that nothing ever removes: a file part under a form
field other than ``files`` stays in the upload folder as a ``tmp...`` file (Gradio moves only ``files``), and
``POST /gradio_api/process_recording`` (Gradio's screen-recording helper, which this page never uses) leaves each
body in the system's temporary folder.

`UploadLimit` (ASGI middleware, installed by `install`) answers those requests itself, with a JSON ``detail``:

* an upload must declare its size (``Content-Length``, which browsers and ``gradio_client`` send; ``411``), may
  hold at most ``max_files`` files (``413``; the page sends one: the Doctor's suite file) and at most that many
  times Gradio's ``max_file_size`` plus `FORM_SLACK` bytes (``413``), and every file must be in the ``files``
  field (``400``). The body is read and checked before Gradio sees any of it, so a refused upload writes nothing;
* one visitor (network address, `playground.fairness.client_key`) may upload at most ``per_address_files`` files
  and ``per_address_bytes`` bytes (the bodies as sent) within a sliding ``window`` of seconds (``429`` with
  ``Retry-After``). Every upload request counts, whatever its answer;
* the files kept in the upload folder take at most ``cache_bytes`` together (each counted `FILE_OVERHEAD` bytes
  more than its size): past it, the oldest uploads are deleted to make room (`UploadCache`), so a flood cannot keep
  other visitors from uploading. Uploads still arriving are counted by their declared size; when those alone fill
  it, a new upload gets ``507``;
* on a public server, ``process_recording`` answers ``404``.

A refused request's body is read and dropped before the answer (as `playground.http_limits.BodySizeLimit` does),
so a client still sending reads it rather than a reset connection.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import OrderedDict, deque
from functools import partial
from typing import Any

from . import fairness, http_limits

UPLOAD_ROUTE = http_limits.UPLOAD_ROUTE
RECORDING_ROUTE = "/gradio_api/process_recording"
# Every answer of `UploadLimit._upload` is on the upload route: plain text, which Gradio's page shows in its toast.
_refuse = partial(http_limits.send_refusal, path=UPLOAD_ROUTE)
#: bytes an upload body may hold besides its files: the form's boundaries and part headers (python-multipart takes
#: at most 8 headers of 4 KB a part)
FORM_SLACK = 64 * 1024
#: bytes counted for each uploaded file on top of its size: the file and the folder Gradio makes for it take a disk
#: block each, so a flood of empty files is bounded too
FILE_OVERHEAD = 4096
#: visitors whose recent uploads are remembered at most (the least recently active are forgotten past it)
MAX_TRACKED_ADDRESSES = 65_536
#: how much of a successful upload's answer (the JSON list of saved paths) is read
_MAX_ANSWER_BYTES = 64 * 1024

_LOCAL = "To load larger or more files, run the playground on your own machine (python app.py)."


def _mb(nbytes: float) -> str:
    return f"{nbytes / 2 ** 20:.3g} MB"


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} seconds"


class AddressWindows:
    """What each visitor uploaded within the last ``window`` seconds: files and bytes, per address.

    Args:
        window: seconds an upload counts against its visitor.
        max_files: files one address may upload within the window (None: no cap).
        max_bytes: bytes one address may upload within the window (None: no cap).
    """

    def __init__(self, window: float, max_files: int | None, max_bytes: int | None):
        self.window = window
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._recent: OrderedDict[str, deque] = OrderedDict()  # address -> deque of (time, files, bytes)

    def _forget(self, now: float) -> None:
        """Drop uploads older than the window, and addresses with none left (least recently active first)."""
        while self._recent:
            address, entries = next(iter(self._recent.items()))
            if len(self._recent) <= MAX_TRACKED_ADDRESSES and entries and entries[-1][0] + self.window > now:
                break
            del self._recent[address]

    def used(self, address: str, now: float) -> tuple[int, int]:
        """(files, bytes) ``address`` uploaded within the window before ``now`` (`time.monotonic` seconds)."""
        self._forget(now)
        entries = self._recent.get(address)
        while entries and entries[0][0] + self.window <= now:
            entries.popleft()
        if not entries:
            return 0, 0
        return sum(e[1] for e in entries), sum(e[2] for e in entries)

    def wait(self, address: str, files: int, nbytes: int, now: float) -> float | None:
        """Seconds until ``address`` may upload ``files`` more files of ``nbytes`` bytes in all (None: it may now;
        ``math.inf``: never, the upload alone is over a cap)."""
        if (self.max_files is not None and files > self.max_files) or \
                (self.max_bytes is not None and nbytes > self.max_bytes):
            return math.inf
        used_files, used_bytes = self.used(address, now)
        wait = None
        for when, f, b in self._recent.get(address, ()):
            if (self.max_files is None or used_files + files <= self.max_files) and \
                    (self.max_bytes is None or used_bytes + nbytes <= self.max_bytes):
                break
            used_files, used_bytes, wait = used_files - f, used_bytes - b, when + self.window - now
        return wait

    def charge(self, address: str, files: int, nbytes: int, now: float) -> None:
        """Count an upload of ``files`` files and ``nbytes`` bytes against ``address`` at ``now``."""
        self._recent.setdefault(address, deque()).append((now, files, nbytes))
        self._recent.move_to_end(address)
        self._forget(now)


class UploadCache:
    """The uploads kept in Gradio's upload folder, oldest first, and the bytes of uploads still arriving, under a
    cap of ``max_bytes`` in all.

    A file Gradio's own sweep (``delete_cache``) removed is still counted until it is the oldest and is dropped
    here, so the count is never below what the folder holds.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.kept: OrderedDict[str, int] = OrderedDict()  # path -> bytes counted
        self.kept_bytes = 0
        self.arriving = 0  # bytes reserved for uploads being read or saved

    def reserve(self, nbytes: int, delete: Any) -> bool:
        """Make room for an upload body of ``nbytes`` bytes, deleting the oldest kept files (``delete(path)``) as
        needed; False (nothing reserved) when uploads still arriving leave no room."""
        while self.kept and self.kept_bytes + self.arriving + nbytes > self.max_bytes:
            self._drop_oldest(delete)
        if self.kept_bytes + self.arriving + nbytes > self.max_bytes:
            return False
        self.arriving += nbytes
        return True

    def release(self, nbytes: int) -> None:
        """An upload reserved with `reserve` ended (saved or not)."""
        self.arriving -= nbytes

    def keep(self, path: str, nbytes: int, delete: Any) -> None:
        """Count a saved file (the same path saved again counts once, as the newest); the oldest other files are
        deleted past the cap."""
        self.kept_bytes -= self.kept.pop(path, 0)
        self.kept[path] = nbytes
        self.kept_bytes += nbytes
        while len(self.kept) > 1 and self.kept_bytes + self.arriving > self.max_bytes:
            self._drop_oldest(delete)

    def _drop_oldest(self, delete: Any) -> None:
        path, nbytes = self.kept.popitem(last=False)
        self.kept_bytes -= nbytes
        delete(path)


class _Form:
    """The file parts of a multipart body: ``files`` is a list of (field name, file name, bytes)."""

    def __init__(self):
        self.files: list[tuple[str, str, int]] = []
        self._name = self._value = b""
        self._disposition = b""
        self._size = 0
        self._file: tuple[str, str] | None = None

    def read(self, body: bytes, content_type: str) -> None:
        """Parse ``body`` (all of it); raises ValueError with a readable reason when it is not a well-formed form."""
        from python_multipart.multipart import MultipartParser, parse_options_header

        kind, options = parse_options_header(content_type)
        if kind != b"multipart/form-data":
            raise ValueError("an upload must be sent as multipart/form-data")
        if b"boundary" not in options:
            raise ValueError("the form has no boundary")
        callbacks = {"on_part_begin": self._begin, "on_header_field": self._header_name,
                     "on_header_value": self._header_value, "on_header_end": self._header_end,
                     "on_headers_finished": self._headers_done, "on_part_data": self._data, "on_part_end": self._end}
        parser = MultipartParser(options[b"boundary"], callbacks)
        try:
            parser.write(body)
            parser.finalize()
        except ValueError as exc:  # python-multipart's parse errors are ValueErrors
            raise ValueError(f"the form could not be read ({exc})") from None

    def _begin(self) -> None:
        self._disposition, self._size, self._file = b"", 0, None

    def _header_name(self, data: bytes, start: int, end: int) -> None:
        self._name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        if self._name.lower() == b"content-disposition":
            self._disposition = self._value
        self._name = self._value = b""

    def _headers_done(self) -> None:
        from python_multipart.multipart import parse_options_header

        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise ValueError('a form part has no "name"')
        if b"filename" in options:
            self._file = (options[b"name"].decode("utf-8", "replace"),
                          options[b"filename"].decode("utf-8", "replace"))

    def _data(self, data: bytes, start: int, end: int) -> None:
        self._size += end - start

    def _end(self) -> None:
        if self._file is not None:
            self.files.append((*self._file, self._size))


class UploadLimit:
    """ASGI middleware: the upload bounds of the module docstring.

    Args:
        app: the ASGI app to wrap (Gradio's; it must be reachable as ``scope["app"]``, as in Starlette, for
            Gradio's ``max_file_size`` and upload folder).
        max_files: files one upload request may hold (None: no cap, nor a cap on its size here).
        per_address_files, per_address_bytes: files and bytes one address may upload within ``window`` seconds
            (None: no cap).
        window: seconds an upload counts against its address.
        cache_bytes: bytes the kept uploads may take together (None: no cap).
        trust_forwarded: take a visitor's address from ``X-Forwarded-For`` (`playground.fairness.client_key`).
        refuse_recordings: answer ``process_recording`` with 404 (a public server).
    """

    def __init__(self, app: Any, max_files: int | None = None, per_address_files: int | None = None,
                 per_address_bytes: int | None = None, window: float = 600.0, cache_bytes: int | None = None,
                 trust_forwarded: bool = False, refuse_recordings: bool = False):
        self.app = app
        self.max_files = max_files
        self.windows = AddressWindows(window, per_address_files, per_address_bytes)
        self.cache = UploadCache(cache_bytes) if cache_bytes is not None else None
        self.trust_forwarded = trust_forwarded
        self.refuse_recordings = refuse_recordings

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            path = scope.get("path", "")
            if http_limits.on_route(path, UPLOAD_ROUTE):
                await self._upload(scope, receive, send)
                return
            if self.refuse_recordings and http_limits.on_route(path, RECORDING_ROUTE):
                await _drain(receive, _declared(scope) or 0)
                await http_limits.send_refusal(send, 404, "This public server does not process screen recordings.", path=path)
                return
        await self.app(scope, receive, send)

    async def _upload(self, scope: dict, receive: Any, send: Any) -> None:
        app = scope.get("app")
        blocks = app.get_blocks() if hasattr(app, "get_blocks") else None
        file_cap = getattr(blocks, "max_file_size", None)
        largest = self.max_files * file_cap + FORM_SLACK if self.max_files is not None and file_cap is not None \
            else None
        declared = _declared(scope)
        if declared is None:
            await _drain(receive, largest or 0)
            await _refuse(send, 411, "An upload must give its size (a Content-Length header): this server does not "
                                     "take uploads sent in chunks.")
            return
        if largest is not None and declared > largest:
            if declared <= http_limits.DRAIN_FACTOR * largest:  # past it the answer goes at once, as for BodySizeLimit
                await _drain(receive, declared)
            await _refuse(send, 413, f"Upload larger than {_mb(self.max_files * file_cap)}: this server takes at "
                                     f"most {self._files_text()} of {_mb(file_cap)} per upload. {_LOCAL}")
            return
        from starlette.requests import HTTPConnection

        address = fairness.client_key(HTTPConnection(scope), self.trust_forwarded)
        now = time.monotonic()
        if address is not None:
            wait = self.windows.wait(address, 1, declared, now)
            if wait is not None:
                await _drain(receive, declared)
                await self._refuse_busy(send, wait, declared)
                return
        if self.cache is not None and not self.cache.reserve(declared, self._deleter(app, blocks)):
            await _drain(receive, declared)
            await _refuse(send, 507, "This server's space for uploads is full with uploads still arriving: try "
                                     "again in a minute.", retry_after=60)
            return
        if address is not None:
            self.windows.charge(address, 1, declared, now)
        saved: list[tuple[str, int]] = []
        try:
            await self._check_and_save(scope, receive, send, address, saved)
        finally:
            if self.cache is not None:
                self.cache.release(declared)
                delete = self._deleter(app, blocks)
                for path, nbytes in saved:
                    self.cache.keep(path, nbytes, delete)

    async def _check_and_save(self, scope: dict, receive: Any, send: Any, address: str | None,
                              saved: list) -> None:
        """Read the whole body, check its files and pass it to Gradio; append to ``saved`` (path, bytes counted)
        for each file Gradio saved."""
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left: nothing was passed on, nothing saved
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        form = _Form()
        content_type = dict(scope.get("headers") or ()).get(b"content-type", b"").decode("latin-1")
        try:
            form.read(body, content_type)
        except ValueError as exc:
            await _refuse(send, 400, f"This upload could not be read: {exc}.")
            return
        if self.max_files is not None and len(form.files) > self.max_files:
            await _refuse(send, 413, f"This server takes at most {self._files_text()} per upload; this one holds "
                                     f"{len(form.files)}. {_LOCAL}")
            return
        stray = [field for field, _name, _size in form.files if field != "files"]
        if stray:
            await _refuse(send, 400, f'Files must be sent in the form field "files", not "{stray[0]}".')
            return
        if address is not None and len(form.files) > 1:  # one file was counted before the body was read
            wait = self.windows.wait(address, len(form.files) - 1, 0, time.monotonic())
            if wait is not None:
                await self._refuse_busy(send, wait, 0)
                return
            self.windows.charge(address, len(form.files) - 1, 0, time.monotonic())
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status, answer = None, []

        async def capture(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and status == 200 \
                    and sum(map(len, answer)) < _MAX_ANSWER_BYTES:
                answer.append(message.get("body", b""))
            await send(message)

        await self.app(scope, replay, capture)
        if status != 200:
            return
        try:
            paths = json.loads(b"".join(answer))
        except ValueError:
            return
        if isinstance(paths, list):  # Gradio answers the saved paths in the order of the form's files
            saved.extend((path, size + FILE_OVERHEAD) for path, (_field, _name, size) in zip(paths, form.files)
                         if isinstance(path, str))

    def _files_text(self) -> str:
        return "one file" if self.max_files == 1 else f"{self.max_files} files"

    async def _refuse_busy(self, send: Any, wait: float, declared: int) -> None:
        windows = self.windows
        caps = [f"{windows.max_files} file{'s' if windows.max_files != 1 else ''}"] if windows.max_files else []
        caps += [_mb(windows.max_bytes)] if windows.max_bytes else []
        allowance = f"{' / '.join(caps)} of uploads per visitor every {_duration(windows.window)}"
        if math.isinf(wait):
            await _refuse(send, 413, f"This upload ({_mb(declared)}) is larger than this server's {allowance}. "
                                     f"{_LOCAL}")
            return
        seconds = max(1, math.ceil(wait))
        await _refuse(send, 429, f"This server takes at most {allowance}: try again in {seconds} s. {_LOCAL}",
                      retry_after=seconds)

    @staticmethod
    def _deleter(app: Any, blocks: Any) -> Any:
        """``delete(path)``: remove an upload that no longer fits (the file, then its folder when empty), only
        inside Gradio's upload folder, and forget it in Gradio's own list of uploads."""
        folder = getattr(app, "uploaded_file_dir", None)
        root = os.path.realpath(folder) if folder else None

        def delete(path: str) -> None:
            if root is None or not os.path.realpath(path).startswith(root + os.sep):
                return
            try:
                os.remove(path)
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass  # gone already (Gradio's sweep), or the folder holds another file
            uploaded = getattr(blocks, "upload_file_set", None)
            if uploaded is not None:
                uploaded.discard(path)

        return delete


def _declared(scope: dict) -> int | None:
    """The request's ``Content-Length`` (None when it has none: a chunked body)."""
    value = dict(scope.get("headers") or ()).get(b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


async def _drain(receive: Any, declared: int) -> None:
    """Read and drop a refused body (up to ``declared`` bytes, and to its end, when shorter), within
    `playground.http_limits.DRAIN_SECONDS`."""
    await http_limits.BodySizeLimit(None, max(declared, 1), drain_factor=1)._drain(receive, 0)


def install(app_kwargs: dict, limits: Any) -> None:
    """Add `UploadLimit` to ``demo.launch(app_kwargs=...)``'s middleware (after those already there, so it sees
    bodies they let through), configured from a `playground.limits.Limits`; nothing when the limits set no upload
    bound and the server is private."""
    bounds = dict(max_files=limits.max_upload_files, per_address_files=limits.uploads_per_address,
                  per_address_bytes=None if limits.upload_mb_per_address is None
                  else int(limits.upload_mb_per_address * 2 ** 20),
                  cache_bytes=None if limits.upload_cache_mb is None else int(limits.upload_cache_mb * 2 ** 20))
    if not limits.public and all(v is None for v in bounds.values()):
        return
    from starlette.middleware import Middleware

    app_kwargs.setdefault("middleware", []).append(
        Middleware(UploadLimit, **bounds, window=limits.upload_window, trust_forwarded=limits.trust_forwarded_for,
                   refuse_recordings=limits.public))
