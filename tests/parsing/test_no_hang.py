"""Templates that make the reference loop forever must not hang ours: an open and a close that are both zero-width
and match at the same place re-fire without consuming text. Each parse runs in a child process with a deadline,
so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from parsing import parse_response
from parsing.streams import fixed_chunks, parse_stream

template, text = json.loads(sys.argv[1]), sys.argv[2]
try:
    one_shot = {"message": parse_response(text, template, prefix="")}
except Exception as exc:
    one_shot = {"error": type(exc).__name__}
streamed = []
for size in (1, 2, 5):
    out = parse_stream(template, "", fixed_chunks(text, size))
    streamed.append({"error": out.error.split(":")[0]} if out.error else {"message": out.message})
print(json.dumps({"one_shot": one_shot, "streamed": streamed}))
"""

ZERO_WIDTH = [
    {"content": {}, "x": {"open_pattern": "(?=<b)", "close_pattern": "(?=<b)"}},
    {"content": {}, "x": {"open_pattern": "(?=<b)", "close_pattern": "(?=<b)", "repeats": True}},
    {"x": {"open_pattern": "(?=<)", "close_pattern": "(?=<)"}, "content": {"close_pattern": "(?=<)"}},
    {"content": {}, "x": {"open_pattern": "^", "close_pattern": "^"}},
]


@pytest.mark.parametrize("fields", ZERO_WIDTH)
@pytest.mark.parametrize("text", ["a<b", "<b", "a<b c<b", "<"])
def test_zero_width_open_and_close_terminate(fields, text):
    template = {"start_anchor": "S", "fields": fields}
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(template), text], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"parsing {text!r} with {fields} did not finish in 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    # Streamed in any chunking, the same outcome as one-shot (a message, or the same kind of error).
    for streamed in result["streamed"]:
        assert streamed == result["one_shot"], (text, fields, result)
