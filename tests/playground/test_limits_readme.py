"""The README's "Running it publicly" table says what `playground.limits.Limits` does, in both modes."""

from __future__ import annotations

import os
import re

from playground.limits import Limits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows() -> dict[str, tuple[str, str]]:
    """flag -> (public default, private default) from the README table."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    table = text[text.index("| limit | public default | private default |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for flag in re.findall(r"`(--[\w-]+)`", cells[3]):
            rows[flag] = (cells[1], cells[2])
    return rows


def _seconds(value: float | None) -> str:
    if value is None:
        return "none"
    if value >= 3600:
        return f"{value / 3600:g} h"
    if value >= 60:
        return f"{value / 60:g} min"
    return f"{value:g} s"


def test_the_time_limits_in_the_readme_are_the_ones_in_force_per_mode():
    rows = _rows()
    for flag, field in (("--request-budget", "request_budget"), ("--regex-timeout", "regex_timeout"),
                        ("--reference-budget", "reference_budget"), ("--session-ttl", "session_ttl")):
        expected = (_seconds(getattr(Limits.public_space(), field)), _seconds(getattr(Limits.private(), field)))
        assert rows[flag] == expected, flag


def test_the_size_limits_in_the_readme_are_the_ones_in_force_per_mode():
    rows = _rows()
    public, private = Limits.public_space(), Limits.private()
    assert rows["--max-request-mb"] == (f"{public.max_request_bytes >> 20} MB", "none")
    assert private.max_request_bytes is None
    assert rows["--sessions-memory-mb"] == (f"{public.sessions_memory_mb:,} MB", f"{private.sessions_memory_mb:,} MB")
    sizes = [public.max_paste_chars, public.max_prefix_chars, public.max_template_chars, public.max_tools_chars,
             public.max_history_chars]
    assert rows["--max-paste-chars"] == (" / ".join(f"{n:,}" for n in sizes) + " characters", "none")
    assert {private.max_paste_chars, private.max_prefix_chars, private.max_template_chars, private.max_tools_chars,
            private.max_history_chars} == {None}
    assert rows["--max-sessions"] == (f"{public.max_sessions:,} / {public.max_loaded_models}",
                                      f"{private.max_sessions:,} / {private.max_loaded_models}")
    assert rows["--workers"] == (str(public.workers), str(private.workers))
    assert rows["--max-message-chars"] == (f"{public.max_message_chars:,} characters", "none")
    assert private.max_message_chars is None
    assert rows["--max-transform-values"] == (f"{public.max_transform_values:,}", "none")
    assert private.max_transform_values is None
    assert rows["--head-timeout"] == (_seconds(public.head_timeout), "none") and private.head_timeout is None
    assert rows["--max-connections-per-address"] == (f"{public.max_connections_per_address:,}", "none")
    assert private.max_connections_per_address is None
    assert rows["--max-suite-chars"] == (f"2 MB / {public.max_suite_chars:,} characters", "none")
    assert private.max_suite_chars is None and public.max_suite_chars == 2 * 1024 * 1024  # Gradio's "2mb"
    assert rows["--max-connections"] == (f"{public.max_connections:,}", "none") and private.max_connections is None
    assert rows["--max-streams-per-client"] == (f"{public.max_streams_per_client:,}", "none")
    assert private.max_streams_per_client is None
    assert rows["--body-timeout"] == (_seconds(public.body_timeout), "none") and private.body_timeout is None
    pending = f"{public.max_pending_body_mb_per_address:g} MB / {public.max_pending_body_mb:g} MB"
    assert rows["--max-pending-body-mb"] == rows["--max-pending-body-mb-per-address"] == (pending, "none")
    assert private.max_pending_body_mb is None and private.max_pending_body_mb_per_address is None


def test_the_queue_cap_in_the_readme_is_the_one_app_py_gives_gradio():
    """A client that joins jobs and never reads their answers kept 40 paste parses queued ahead of everyone (a
    normal parse then waited 56 s) and every waiting job holds its request body: public servers cap the queue."""
    import argparse
    import sys

    sys.path.insert(0, ROOT)
    import app
    from playground.limits import add_arguments, from_arguments

    rows = _rows()
    public, private = Limits.public_space(), Limits.private()
    assert rows["--max-queue"] == (str(public.max_queue), "none") and private.max_queue is None
    assert rows["--max-jobs-per-client"] == (str(public.max_jobs_per_client), "none")
    assert private.max_jobs_per_client is None
    queue, launch = app.serving_kwargs(public, 8)
    assert queue == {"default_concurrency_limit": 8, "max_size": public.max_queue}
    assert launch["state_session_capacity"] == public.max_sessions and launch["max_file_size"] == "2mb"
    assert launch["app_kwargs"]["middleware"][0].kwargs == {"max_bytes": public.max_request_bytes}
    queue, launch = app.serving_kwargs(private, 8)
    assert queue["max_size"] is None and launch["app_kwargs"] == {} and launch["max_file_size"] is None
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_arguments(parser.parse_args(["--public", "--max-queue", "10"]), "m")[0].max_queue == 10
    assert from_arguments(parser.parse_args(["--public", "--max-queue", "0"]), "m")[0].max_queue is None


def test_the_generation_cap_in_the_readme_is_the_slider_maximum(tiny_model_dir):
    """Max new tokens went up to 32,768 on a public server (minutes of a core or a GPU per turn, 8 turns at once);
    the slider's maximum is the limit in force, so Gradio refuses a larger value in a crafted request too."""
    from playground import guard, ui

    rows = _rows()
    public, private = Limits.public_space(), Limits.private()
    assert rows["--max-new-tokens"] == (f"{public.max_new_tokens:,}", f"{private.max_new_tokens:,}")
    try:
        demo = ui.build_ui(tiny_model_dir, preload=False, limits=public)
        slider = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "max-new-tokens")
        assert slider.maximum == public.max_new_tokens
    finally:
        guard.configure(private)


def test_the_upload_limits_in_the_readme_are_the_ones_in_force_per_mode():
    """Trial 12 wrote 1 GB of uploads to a public server's disk in 15 s: uploads are bounded per request, per
    visitor and on disk (`playground.uploads`), with the flags app.py offers."""
    import argparse

    from playground import uploads
    from playground.limits import add_arguments, from_arguments

    rows = _rows()
    public, private = Limits.public_space(), Limits.private()
    assert rows["--max-upload-files"] == (str(public.max_upload_files), "none") and private.max_upload_files is None
    allowance = (f"{public.uploads_per_address} files / {public.upload_mb_per_address:g} MB per "
                 f"{_seconds(public.upload_window)}")
    for flag in ("--uploads-per-address", "--upload-mb-per-address", "--upload-window"):
        assert rows[flag] == (allowance, "none")
    assert private.uploads_per_address is None and private.upload_mb_per_address is None
    assert rows["--upload-cache-mb"] == (f"{public.upload_cache_mb:g} MB", "none") and private.upload_cache_mb is None
    installed: dict = {}
    uploads.install(installed, public)
    (middleware,) = installed["middleware"]
    assert middleware.cls is uploads.UploadLimit
    assert middleware.kwargs == {"max_files": 1, "per_address_files": public.uploads_per_address,
                                 "per_address_bytes": int(public.upload_mb_per_address * 2 ** 20),
                                 "cache_bytes": int(public.upload_cache_mb * 2 ** 20), "window": 600.0,
                                 "trust_forwarded": public.trust_forwarded_for, "refuse_recordings": True}
    nothing: dict = {}
    uploads.install(nothing, private)
    assert nothing == {}
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    limits = from_arguments(parser.parse_args(["--public", "--upload-cache-mb", "0", "--uploads-per-address", "3",
                                               "--upload-window", "60"]), "m")[0]
    assert (limits.upload_cache_mb, limits.uploads_per_address, limits.upload_window) == (None, 3, 60.0)
