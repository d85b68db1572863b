"""Upload bounds on a public server (trial 12, F8): a real ``app.py --public`` on loopback, real HTTP uploads.

The trial's client wrote 1 GB into Gradio's upload folder in 15 s (4 files of 1.99 MB a request, each under the
2 MB file cap): uploads skip the queue and its per-visitor caps. Here the server runs with low upload limits
(`playground.uploads`): one file a request, 3 files / 2 MB a visitor per hour, 4 MB of uploads kept on disk. Each
test is a visitor of its own (its own ``X-Forwarded-For`` address, read with ``--trust-forwarded-for``). The
server's upload folder and temporary folder are the test's own, so what they hold is counted exactly.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from parsing.doctor import suites as doctor_suites
from tests.serving import start_app

MB = 2 ** 20
CACHE_MB = 4  # --upload-cache-mb
PER_ADDRESS_FILES = 3  # --uploads-per-address
PER_ADDRESS_MB = 2  # --upload-mb-per-address
FILE_CAP = 2 * MB  # Gradio's max_file_size on a public server ("2mb")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from gradio_client import Client

    base = tmp_path_factory.mktemp("uploads")
    folders = {"GRADIO_TEMP_DIR": str(base / "gradio"), "TMPDIR": str(base / "tmp")}
    os.makedirs(folders["TMPDIR"])
    saved = {k: os.environ.get(k) for k in folders}
    os.environ.update(folders)  # start_app passes the environment on to the server
    try:
        proc, url = start_app(["--public", "--no-preload", "--trust-forwarded-for", "--max-upload-files", "1",
                               "--uploads-per-address", str(PER_ADDRESS_FILES), "--upload-mb-per-address",
                               str(PER_ADDRESS_MB), "--upload-cache-mb", str(CACHE_MB), "--upload-window", "3600"],
                              base / "server.log", lambda url: Client(url, verbose=False).close())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield url, folders["GRADIO_TEMP_DIR"], folders["TMPDIR"]
    proc.kill()
    proc.wait(timeout=30)


def _files(folder: str) -> dict[str, int]:
    """Every file under ``folder``: path -> bytes."""
    return {os.path.join(d, n): os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(folder)
            for n in names}


def _upload(url: str, address: str, files: list[tuple[str, bytes]], field: str = "files") -> httpx.Response:
    return httpx.post(url + "gradio_api/upload", files=[(field, (name, data)) for name, data in files],
                      headers={"X-Forwarded-For": address}, timeout=60)


def _detail(response: httpx.Response) -> str:
    """The reason of a refusal: plain text on the upload route (Gradio's page puts an upload answer's body in its
    toast as it comes), Starlette's JSON ``{"detail": ...}`` elsewhere."""
    if response.request.url.path.endswith("/gradio_api/upload"):
        assert response.headers["content-type"] == "text/plain; charset=utf-8", response.text
        return response.text
    assert response.headers["content-type"] == "application/json", response.text
    return response.json()["detail"]


def test_the_trials_request_is_refused_and_writes_nothing(server):
    url, folder, _tmp = server
    before = _files(folder)
    data = os.urandom(1_990_000)  # the trial's 4 files of 1.99 MB, each under the 2 MB file cap
    answer = _upload(url, "192.0.2.1", [(f"u0_{k}.jsonl", data) for k in range(4)])
    assert answer.status_code == 413
    assert "at most one file of 2 MB per upload" in _detail(answer) and "python app.py" in _detail(answer)
    assert _files(folder) == before


def test_more_files_than_one_in_a_small_request_are_refused_before_anything_is_saved(server):
    url, folder, _tmp = server
    before = _files(folder)
    answer = _upload(url, "192.0.2.2", [("a.jsonl", b"{}\n"), ("b.jsonl", b"{}\n")])
    assert answer.status_code == 413
    assert _detail(answer).startswith("This server takes at most one file per upload; this one holds 2.")
    assert _files(folder) == before


def test_a_file_over_the_cap_is_refused_from_its_declared_size(server):
    url, folder, _tmp = server
    before = _files(folder)
    answer = _upload(url, "192.0.2.3", [("big.jsonl", b"x" * (FILE_CAP + 70 * 1024))])
    assert answer.status_code == 413 and "Upload larger than 2 MB" in _detail(answer)
    assert _files(folder) == before


def test_a_file_outside_the_files_field_is_refused_and_leaves_no_temporary_file(server):
    """Gradio saves every file part as a temporary file but moves only those of ``files``: the others stayed in
    the upload folder, where its sweep never looks."""
    url, folder, _tmp = server
    before = _files(folder)
    answer = _upload(url, "192.0.2.4", [("x.jsonl", b"{}\n" * 1000)], field="other")
    assert answer.status_code == 400 and '"files", not "other"' in _detail(answer)
    assert _files(folder) == before


def test_an_upload_sent_in_chunks_is_refused(server):
    url, folder, _tmp = server
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.jsonl\"\r\n\r\n{{}}\r\n"
            f"--{boundary}--\r\n").encode()
    before = _files(folder)
    answer = httpx.post(url + "gradio_api/upload", content=iter([body]), timeout=60,
                        headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                 "X-Forwarded-For": "192.0.2.5"})
    assert answer.status_code == 411 and "Content-Length" in _detail(answer)
    assert _files(folder) == before


def test_screen_recordings_are_not_processed(server):
    """Gradio's ``process_recording`` kept every body in the temporary folder for good (the page never uses it)."""
    url, _folder, tmp = server
    before = _files(tmp)
    answer = httpx.post(url + "gradio_api/process_recording", files=[("video", ("a.mp4", b"\0" * 100_000))],
                        headers={"X-Forwarded-For": "192.0.2.6"}, timeout=60)
    assert answer.status_code == 404 and "screen recordings" in _detail(answer)
    assert _files(tmp) == before


def test_one_visitor_uploads_at_most_its_files_per_window(server):
    url, _folder, _tmp = server
    for n in range(PER_ADDRESS_FILES):
        assert _upload(url, "192.0.2.10", [(f"s{n}.jsonl", b"{}\n")]).status_code == 200
    refused = _upload(url, "192.0.2.10", [("s.jsonl", b"{}\n")])
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0
    assert _detail(refused).startswith(f"This server takes at most {PER_ADDRESS_FILES} files / {PER_ADDRESS_MB} MB "
                                       f"of uploads per visitor every 60 minutes: try again in ")
    assert _upload(url, "192.0.2.11", [("s.jsonl", b"{}\n")]).status_code == 200  # another visitor still can


def test_one_visitor_uploads_at_most_its_bytes_per_window(server):
    url, _folder, _tmp = server
    assert _upload(url, "192.0.2.12", [("a.jsonl", b"a" * 1_000_000)]).status_code == 200
    # 2.2 MB in all would pass the 2 MB allowance, with one file of the 3 left
    assert _upload(url, "192.0.2.12", [("b.jsonl", b"b" * 1_200_000)]).status_code == 429
    assert _upload(url, "192.0.2.12", [("c.jsonl", b"c" * 900_000)]).status_code == 200  # 1.9 MB in all


def test_the_upload_folder_keeps_at_most_its_cap_and_drops_the_oldest(server):
    url, folder, _tmp = server
    saved = []
    for n in range(3):  # 1.5 MB each, from three visitors: the third needs the first one's room
        data = bytes([n]) * 1_500_000
        answer = _upload(url, f"192.0.2.{20 + n}", [(f"e{n}.jsonl", data)])
        assert answer.status_code == 200, answer.text
        saved.append(answer.json()[0])
        assert sum(_files(folder).values()) <= CACHE_MB * MB
    on_disk = _files(folder)
    assert saved[0] not in on_disk and on_disk[saved[1]] == on_disk[saved[2]] == 1_500_000


def test_a_flood_from_many_visitors_keeps_the_folder_under_its_cap(server):
    """The trial's flood, one file a request (what is still accepted) from a new address each time."""
    url, folder, _tmp = server
    data = os.urandom(1_990_000)
    for n in range(12):
        assert _upload(url, f"198.51.100.{n + 1}", [(f"u{n}.jsonl", data)]).status_code == 200
    total = sum(_files(folder).values())
    assert 1_990_000 <= total <= CACHE_MB * MB  # 23.9 MB were accepted


def test_the_doctor_still_loads_a_suite_after_the_caps(server, tmp_path):
    """The page's one upload (the Doctor's suite file) through ``gradio_client``, as the page sends it: one file to
    ``/gradio_api/upload``, then the upload event. The folder is full from the tests above (files are dropped to
    make room); a visitor past its own allowance gets the reason."""
    from gradio_client import Client, handle_file

    url, folder, _tmp = server
    cases = [{"prefix": "<|im_start|>assistant\n", "output": "hi<|im_end|>",
              "expected": {"role": "assistant", "content": "hi"}}]
    suite = tmp_path / "cases.jsonl"
    suite.write_text(doctor_suites.dumps_suite(cases), encoding="utf-8")
    client = Client(url, verbose=False, headers={"X-Forwarded-For": "192.0.2.30"})
    try:
        text, note = client.predict(handle_file(str(suite)), api_name="/do_upload")
        assert [json.loads(line) for line in text.splitlines()] == \
            [json.loads(doctor_suites.dumps_case(c)) for c in cases]
        assert "Loaded 1 case(s)." in note
        assert sum(_files(folder).values()) <= CACHE_MB * MB
        for _ in range(PER_ADDRESS_FILES - 1):
            client.predict(handle_file(str(suite)), api_name="/do_upload")
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.predict(handle_file(str(suite)), api_name="/do_upload")
        assert refused.value.response.status_code == 429
    finally:
        client.close()
