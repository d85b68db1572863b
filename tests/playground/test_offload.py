"""The Doctor's heavy work under the request budget, and its export folders cleaned (issue #10 items 2, 7)."""

import os
import time

import pytest

from parsing.streams import tokenish_chunks
from playground import doctor_panel, export, guard, offload
from playground.limits import Limits
from playground.session import SKELETON_TEMPLATE, Run, template_to_text

TPL = template_to_text(SKELETON_TEMPLATE)


def test_doctor_export_folders_are_removed_after_a_while(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "EXPORT_ROOT", tmp_path / "exports")
    first = doctor_panel.export_files(TPL, "", "mine")
    folder = os.path.dirname(first[0])
    assert os.path.dirname(folder) == str(tmp_path / "exports") and os.path.exists(first[1])
    old = time.time() - export.EXPORT_MAX_AGE - 10
    os.utime(folder, (old, old))
    second = doctor_panel.export_files(TPL, "", "mine")
    assert not os.path.exists(folder) and os.path.exists(second[0])


def test_export_folders_together_stay_under_a_size_cap(tmp_path, monkeypatch):
    """Anyone can press Export again and again (a hub model's tokenizer export is ~20 MB, kept an hour): beyond
    the cap the oldest folders are removed before a new one is made."""
    monkeypatch.setattr(export, "EXPORT_ROOT", tmp_path / "exports")
    monkeypatch.setattr(export, "EXPORT_MAX_BYTES", 1500)
    folders = []
    for age in (30, 20, 10):  # seconds ago, oldest first
        folder = export.fresh_export_dir()
        (folder / "tokenizer.json").write_bytes(b"x" * 600)
        then = time.time() - age
        os.utime(folder, (then, then))
        folders.append(folder)
    newest = export.fresh_export_dir()
    assert [f.exists() for f in folders] == [False, True, True]  # 1,800 bytes > 1,500: the oldest went
    assert newest.exists()


def test_run_checks_stop_at_the_request_budget_with_a_local_command():
    slow = {"start_anchor": "X", "fields": {"x": {"open_pattern": "(a|aa)+z", "close": "</x>"}, "content": {}}}
    import json

    text = ("a" * 24 + " ") * 400
    run = Run(prefix="", chunks=tokenish_chunks(text), template_text=json.dumps(slow))
    guard.configure(Limits.public_space(request_budget=1.0))
    try:
        offload.bounded(len, "warm", what="x", local="y")  # workers started (their start is not counted)
        t0 = time.monotonic()
        with pytest.raises(offload.Cut) as info:
            offload.bounded(offload.checks_job, json.dumps(slow), run.prefix, run.chunks.text,
                            list(run.chunks.ends), None, 3, what="The run checks",
                            local="python -m parsing check template.json cases.jsonl")
        assert time.monotonic() - t0 < 2 * 1.0 + 10  # a free worker, then the budget; slack for a loaded machine
        assert "The run checks stopped after 1 s" in str(info.value)
        assert "python -m parsing check" in str(info.value) and "python app.py" in str(info.value)
        # The pool still answers after the kill. Not under the 1 s budget: the killed worker's replacement may still
        # be importing (seconds on a loaded machine), which failed this call at load ~13.
        guard.configure(Limits.public_space(request_budget=120.0))
        report = offload.bounded(offload.checks_job, TPL, "", "hi<|im_end|>", [2, 12], None, 2, what="x", local="y")
        assert report.message == {"role": "assistant", "content": "hi"}
    finally:
        guard.configure(Limits.private())
