"""Save the edited template into a copy of the loaded tokenizer (via `parsing.hf`), zip it, report the round trip."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import parsing
from parsing.hf import RoundTripError, save_template_to_tokenizer


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
    """Write ``template_text`` into a copy of ``tokenizer`` with `parsing.hf.save_template_to_tokenizer`
    (``save_pretrained``, then ``AutoTokenizer.from_pretrained`` to compare ``response_template``) and zip the folder.

    The shared tokenizer is never modified.  ``base_dir``: where to write (default: a new temp dir).
    Raises `parsing.TemplateError` for an invalid template, ValueError when no tokenizer is loaded,
    OSError when writing fails.  A template that does not round-trip is reported in the result, not raised.
    """
    if tokenizer is None:
        raise ValueError("No tokenizer is loaded: load a model first.")
    spec = parsing.loads_template(template_text).spec  # validate first: never export a broken template
    base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix="rt-export-"))
    folder = base / name
    if folder.exists():
        shutil.rmtree(folder)
    try:
        save_template_to_tokenizer(tokenizer, spec, folder)
        ok = True
        msg = f"Saved and reloaded: response_template round-trips ({len(json.dumps(spec))} bytes of JSON)."
    except RoundTripError as exc:
        ok = False
        msg = "Saved, but reloading gave a different response_template: " + json.dumps(exc.reloaded)[:300]
    zip_path = Path(shutil.make_archive(str(base / name), "zip", root_dir=folder))
    return ExportResult(folder=folder, zip_path=zip_path, roundtrip_ok=ok, message=msg)
