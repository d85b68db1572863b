"""`import parsing` needs nothing heavier than `regex`."""

import subprocess
import sys


def test_import_is_light():
    code = ("import sys, parsing, parsing.hf; parsing.parse_response('a', {'start_anchor': 'X', 'fields': "
            "{'content': {}}}, prefix=''); heavy = [m for m in ('transformers', 'torch', 'numpy', 'gradio') "
            "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
