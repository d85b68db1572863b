"""Save the edited template into a copy of the loaded tokenizer, zip it, and check the round trip."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import parsing


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
