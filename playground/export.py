"""Save the edited template into a copy of the loaded tokenizer (via `parsing.hf`), zip it, report the round trip."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import parsing
from parsing.doctor.lint import start_anchor_warnings
from parsing.hf import RoundTripError, save_template_to_tokenizer


EXPORT_ROOT = Path(tempfile.gettempdir()) / "response-template-playground-exports"
EXPORT_MAX_AGE = 3600  # seconds an export folder is kept (its download has long been served by then)
# Bytes all export folders may hold: a tokenizer export of a hub model is ~20 MB (folder and zip), and anyone can
# press Export again and again; the oldest folders go first beyond it (Gradio serves the download from its own
# copy of the zip, made when the handler returns).
EXPORT_MAX_BYTES = 512 << 20


def _tree_bytes(path: Path) -> int:
    total = 0
    for f in path.rglob("*"):
        try:
            total += f.stat().st_size if f.is_file() else 0
        except OSError:
            pass
    return total


def fresh_export_dir(prefix: str = "export-") -> Path:
    """A new folder under `EXPORT_ROOT` for one export (tokenizer, Doctor files); folders older than
    `EXPORT_MAX_AGE` seconds are removed first, then the oldest while all of them hold more than
    `EXPORT_MAX_BYTES`, so exports never pile up on the server's disk."""
    EXPORT_ROOT.mkdir(parents=True, exist_ok=True)
    now = time.time()
    kept = []
    for old in EXPORT_ROOT.iterdir():
        try:
            mtime = old.stat().st_mtime
        except OSError:
            continue
        if now - mtime > EXPORT_MAX_AGE:
            shutil.rmtree(old, ignore_errors=True)
        else:
            kept.append((mtime, old))
    sizes = [(mtime, old, _tree_bytes(old)) for mtime, old in sorted(kept)]
    total = sum(size for _m, _o, size in sizes)
    for _mtime, old, size in sizes:
        if total <= EXPORT_MAX_BYTES:
            break
        shutil.rmtree(old, ignore_errors=True)
        total -= size
    return Path(tempfile.mkdtemp(prefix=prefix, dir=EXPORT_ROOT))


@dataclass
class ExportResult:
    """``folder``: the saved tokenizer folder; ``zip_path``: a zip of it; ``roundtrip_ok``: whether
    reloading the folder gave back the same ``response_template``; ``message``: a readable summary;
    ``warning``: what will go wrong with this model although the export worked (``""`` if nothing): the start
    anchor never occurs in the generation prompt its chat template renders."""

    folder: Path
    zip_path: Path
    roundtrip_ok: bool
    message: str
    warning: str = ""


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
    warning = " ".join(f"Warning: {w.message} {w.fix}" for w in start_anchor_warnings(spec, tokenizer))
    return ExportResult(folder=folder, zip_path=zip_path, roundtrip_ok=ok, message=msg, warning=warning)
