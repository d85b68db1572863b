"""Save the edited template into a copy of the loaded tokenizer, zip it, and check the round trip."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import parsing


EXPORT_ROOT = Path(tempfile.gettempdir()) / "response-template-playground-exports"
EXPORT_MAX_AGE = 3600  # seconds an export folder is kept (its download has long been served by then)


def fresh_export_dir(prefix: str = "export-") -> Path:
    """A new folder under `EXPORT_ROOT` for one export (tokenizer, Doctor files); folders older than
    `EXPORT_MAX_AGE` seconds are removed first, so exports never pile up on the server's disk."""
    EXPORT_ROOT.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in EXPORT_ROOT.iterdir():
        try:
            if now - old.stat().st_mtime > EXPORT_MAX_AGE:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
    return Path(tempfile.mkdtemp(prefix=prefix, dir=EXPORT_ROOT))


@dataclass
class ExportResult:
    """``folder``: the saved tokenizer folder; ``zip_path``: a zip of it; ``roundtrip_ok``: whether
    reloading the folder gave back the same ``response_template``; ``message``: a readable summary."""

    folder: Path
    zip_path: Path
    roundtrip_ok: bool
    message: str


def export_template(tokenizer, template_text: str, base_dir: str | Path | None = None,
                    name: str = "tokenizer-with-response-template") -> ExportResult:
    """Write ``template_text`` into a deep copy of ``tokenizer`` with ``save_pretrained``, zip the folder,
    reload it with ``AutoTokenizer.from_pretrained`` and compare ``response_template``.

    The shared tokenizer is never modified.  ``base_dir``: where to write (default: a new temp dir).
    Raises `parsing.TemplateError` for an invalid template, ValueError when no tokenizer is loaded,
    OSError when writing fails.
    """
    if tokenizer is None:
        raise ValueError("No tokenizer is loaded: load a model first.")
    parsing.loads_template(template_text)  # validate first: never export a broken template
    spec = json.loads(template_text)
    base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix="rt-export-"))
    folder = base / name
    if folder.exists():
        shutil.rmtree(folder)
    tok = copy.deepcopy(tokenizer)
    tok.response_template = spec
    tok.save_pretrained(folder)
    zip_path = Path(shutil.make_archive(str(base / name), "zip", root_dir=folder))
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(str(folder))
    got = getattr(reloaded, "response_template", None)
    ok = got == spec
    if ok:
        msg = f"✓ Saved and reloaded: response_template round-trips ({len(json.dumps(spec))} bytes of JSON)."
    else:
        msg = "✗ Saved, but reloading gave a different response_template: " + json.dumps(got)[:300]
    return ExportResult(folder=folder, zip_path=zip_path, roundtrip_ok=ok, message=msg)
