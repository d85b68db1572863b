"""``python -m parsing draft``: JSON on stdout and exit 0, or the reason on stderr and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import examples
from parsing.__main__ import main

QWEN3 = examples.FAMILIES_DIR / "qwen3" / "chat_template.jinja"


def run(*args):
    return subprocess.run([sys.executable, "-m", "parsing", "draft", *args], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])


def test_draft_prints_the_template():
    r = run(str(QWEN3))
    assert r.returncode == 0, r.stderr
    template = json.loads(r.stdout)
    assert template["start_anchor"] == "<|im_start|>assistant\n"
    assert set(template["fields"]) == {"reasoning_content", "tool_calls", "content"}


def test_report_holds_evidence_and_checks(capsys):
    assert main(["draft", str(QWEN3), "--report"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"template", "confidence", "evidence", "checks", "renderings", "notes", "format"} <= set(out)
    assert out["confidence"]["tool_calls"] == 1.0
    assert all(c["passed"] for c in out["checks"])


def test_tokenizer_folder_and_special_tokens(tmp_path, capsys):
    fam = examples.load_family("deepseek_r1")
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": fam.chat_template(), "bos_token": "<｜begin▁of▁sentence｜>",
        "eos_token": {"content": "<｜end▁of▁sentence｜>", "special": True},
        "added_tokens_decoder": {"1": {"content": "<think>", "special": False}}}), encoding="utf-8")
    assert main(["draft", "--tokenizer", str(folder), "--report"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["renderings"]["prompt"]["text"].startswith("<｜begin▁of▁sentence｜>")
    # the answer ends at the eos the tokenizer names (the template writes it after every answer)
    assert out["template"]["fields"]["content"]["close_pattern"].endswith("<｜end▁of▁sentence｜>")
    # the same through a chat template file plus --special-tokens
    jinja = tmp_path / "ct.jinja"
    jinja.write_text(fam.chat_template(), encoding="utf-8")
    assert main(["draft", str(jinja), "--special-tokens", str(folder)]) == 0
    assert json.loads(capsys.readouterr().out) == out["template"]
    # a named set of chat templates: the default one
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": [
        {"name": "tool_use", "template": "{{ raise_exception('not this one') }}"},
        {"name": "default", "template": fam.chat_template()}], "bos_token": "<s>"}), encoding="utf-8")
    assert main(["draft", "--tokenizer", str(folder)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("args,reason", [
    (["/no/such/file.jinja"], "cannot read chat template"),
    (["--tokenizer", "/no/such/folder"], "is not a folder"),
    ([], "give a chat template file"),
])
def test_unusable_input_exits_2(capsys, args, reason):
    assert main(["draft", *args]) == 2
    captured = capsys.readouterr()
    assert reason in captured.err and captured.out == ""


def test_a_chat_template_that_cannot_be_analysed_exits_2(tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{{ raise_exception('This template only renders tool calls.') }}", encoding="utf-8")
    r = run(str(bad))
    assert r.returncode == 2 and r.stdout == ""
    assert "cannot be analysed" in r.stderr and "This template only renders tool calls." in r.stderr


def test_tokenizer_folder_without_chat_template(tmp_path, capsys):
    (tmp_path / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    assert main(["draft", "--tokenizer", str(tmp_path)]) == 2
    assert "has no chat_template" in capsys.readouterr().err


def test_a_chat_template_reading_bos_token_names_the_option_that_supplies_it(tmp_path, capsys):
    jinja = tmp_path / "ct.jinja"
    jinja.write_text(examples.load_family("deepseek_r1").chat_template(), encoding="utf-8")
    assert main(["draft", str(jinja)]) == 2
    err = capsys.readouterr().err
    assert "'bos_token' is undefined" in err
    assert "--special-tokens TOKENIZER_FOLDER" in err and "--tokenizer TOKENIZER_FOLDER" in err
    # the hint is right: with the tokenizer's special tokens the same file drafts
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}), encoding="utf-8")
    assert main(["draft", str(jinja), "--special-tokens", str(folder)]) == 0
    capsys.readouterr()


def test_an_undefined_name_that_is_no_token_gets_no_token_hint(tmp_path, capsys):
    jinja = tmp_path / "ct.jinja"
    jinja.write_text("{{ missing_thing.x }}{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    assert main(["draft", str(jinja)]) == 2
    assert "--special-tokens" not in capsys.readouterr().err


def test_a_chat_template_that_needs_gigabytes_stops_at_the_memory_limit(tmp_path):
    """`{{ 'a' * 10000000000 }}` ran past 60 s at 5.7 GB: one C call no time budget interrupts (trial 12, F11)."""
    huge = tmp_path / "huge.jinja"
    huge.write_text("{{ 'a' * 10000000000 }}", encoding="utf-8")
    r = run(str(huge), "--max-memory-mb", "256")
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert "needed more than 256 MB of memory" in r.stderr and "--max-memory-mb" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_render_step_longer_than_the_budget_is_killed(tmp_path, capsys, monkeypatch):
    from parsing.doctor import draft_cli

    monkeypatch.setattr(draft_cli, "KILL_GRACE_S", 0.001)
    slow = tmp_path / "slow.jinja"  # every render scans 300 MB in one C call: far past 2 ms
    slow.write_text("{{ ('a' * 300000000).count('b') }}{% for m in messages %}{{ m.content }}{% endfor %}",
                    encoding="utf-8")
    assert main(["draft", str(slow), "--time-budget", "0.001"]) == 2
    err = capsys.readouterr().err
    assert "Stopped at the time budget: drafting did not return within 0.001 s" in err, err
    assert main(["draft", str(QWEN3)]) == 0  # the next draft in the same process is unaffected
