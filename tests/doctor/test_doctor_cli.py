"""`python -m parsing check TEMPLATE CASES.jsonl` run as a subprocess: exit 0 / 1 / 2 and readable output."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from parsing.doctor.suites import Case, save_suite

from doctor_templates import CHATML_PROMPT, CLEAN, GUIDE

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOOD = Case(CHATML_PROMPT, "<think>hm</think>Hi.<|im_end|>",
            {"role": "assistant", "reasoning_content": "hm", "content": "Hi."}, name="reasoning")
OVERWRITE = Case(CHATML_PROMPT, 'Answer.<tool_call>{"name": "f", "arguments": {}}</tool_call>\n',
                 {"role": "assistant", "content": "Answer.",
                  "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
                 name="whitespace after a call")


def check(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "parsing", "check", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def files(tmp_path):
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(CLEAN))
    guide = tmp_path / "guide.json"
    guide.write_text(json.dumps(GUIDE))
    cases = save_suite(tmp_path / "cases.jsonl", [GOOD, OVERWRITE])
    return clean, guide, cases


def test_all_pass_exits_0(files):
    clean, _, cases = files
    rc, out, err = check(clean, cases)
    assert rc == 0, out + err
    assert "PASS  #1 reasoning" in out and "2 cases: 2 passed, 0 failed" in out


def test_a_failure_exits_1_with_the_diff(files):
    _, guide, cases = files
    rc, out, _ = check(guide, cases, "--chunkings", "2")
    assert rc == 1
    assert "FAIL  #2 whitespace after a call" in out
    assert 'content: missing (expected "Answer.")' in out
    assert "1 passed, 1 failed" in out


def test_json_report_and_lint(files):
    _, guide, cases = files
    rc, out, _ = check(guide, cases, "--json", "--lint", "--chunkings", "1")
    assert rc == 1
    report = json.loads(out)
    assert report["passed"] is False and len(report["cases"]) == 2
    assert len(report["cases"][0]["runs"]) == 2
    assert "field-overwrite" in {w["code"] for w in report["lint"]["warnings"]}


def test_template_from_tokenizer_config_folder(files, tmp_path):
    _, _, cases = files
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "response_template": CLEAN}))
    rc, out, err = check(folder, cases)
    assert rc == 0, out + err


@pytest.mark.parametrize("config", [{"eos_token": "<|im_end|>", "chat_template": "{{ x }}"}, {},
                                    {"response_template": None}])
def test_a_tokenizer_config_without_a_template_is_named_not_read_as_one(tmp_path, config):
    """A tokenizer folder (or its tokenizer_config.json) without response_template: every command that takes a
    TEMPLATE says so (exit 2), instead of reading the whole config as the template."""
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for target in (folder, folder / "tokenizer_config.json"):
        for command in ("check", "lint", "probe"):
            extra = [tmp_path / "unused.jsonl"] if command == "check" else []
            proc = subprocess.run([sys.executable, "-m", "parsing", command, str(target), *map(str, extra)],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 2, (command, proc.stderr)
            assert f"tokenizer_config.json in {folder} has no response_template" in proc.stderr, proc.stderr
            assert "Unknown keys" not in proc.stderr and "fields" not in proc.stderr


@pytest.mark.parametrize("template_text, message", [
    ("{not json", "is not JSON"),
    (json.dumps({"fields": {}}), "invalid template"),
    (json.dumps({"start_anchor": "A", "fields": {"c": {"open_pattern": "(unclosed"}}}), "fields.c.open_pattern"),
])
def test_bad_template_exits_2(files, tmp_path, template_text, message):
    _, _, cases = files
    bad = tmp_path / "bad.json"
    bad.write_text(template_text)
    rc, out, err = check(bad, cases)
    assert rc == 2 and message in err and "Traceback" not in err


def test_bad_cases_exit_2(files, tmp_path):
    clean, _, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prefix": "", "output": "x", "expected": {}}\n{"prefix": ""\n')
    rc, _, err = check(clean, bad)
    assert rc == 2 and "bad.jsonl:2:" in err and "not valid JSON" in err and "Traceback" not in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    rc, _, err = check(clean, empty)
    assert rc == 2 and "no cases" in err
    rc, _, err = check(clean, tmp_path / "missing.jsonl")
    assert rc == 2 and "cannot read cases file" in err
    rc, _, err = check(tmp_path / "missing.json", empty)
    assert rc == 2 and "cannot read template" in err


def test_usage_errors_exit_2(files):
    clean, _, cases = files
    assert check(clean)[0] == 2
    assert check(clean, cases, "--chunkings", "-1")[0] == 2


def test_every_command_names_the_fault_the_same_way(tmp_path):
    bad = tmp_path / "empty_anchor.json"
    bad.write_text(json.dumps({"start_anchor": "", "fields": {"content": {}}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    errors = set()
    for command in ("check", "lint", "probe"):
        extra = [tmp_path / "unused.jsonl"] if command == "check" else []
        proc = subprocess.run([sys.executable, "-m", "parsing", command, str(bad), *map(str, extra)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (command, proc.stderr)
        errors.add(proc.stderr.strip())
    assert len(errors) == 1, errors  # one wording, with the JSON path of the fault
    assert errors.pop().startswith(f"error: invalid template {bad}: start_anchor: ")


def test_a_reader_that_leaves_early_gets_no_traceback():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "parsing", "probe", "examples/families/qwen3/template.json",
                             "--verbose"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()  # like `| head -1`
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
    assert proc.returncode in (0, 1)  # the probe's own verdict or the closed pipe, never a crash


def test_a_family_transcripts_file_is_written_as_a_suite_that_check_runs(tmp_path):
    """A family's transcripts.jsonl names its prefixes and records known limits, so `check` refuses it with the
    way out; scripts/family_cases.py writes it as a suite (hermes: error outcomes included, as expected_error),
    which passes against the family's template and fails against another family's."""
    import examples

    family = examples.load_family("hermes")
    hermes = ROOT / "examples/families/hermes"
    code, _, err = check(hermes / "template.json", hermes / "transcripts.jsonl")
    assert code == 2 and "scripts/family_cases.py" in err, err
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "scripts/family_cases.py", "hermes"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["name"] for line in lines] == [t.id for t in family.transcripts]  # none left out
    errors = {t.id: t.outcome["error"] for t in family.transcripts if "error" in t.outcome}
    assert errors and {line["name"]: line["expected_error"] for line in lines if "expected_error" in line} == errors
    first = next(t for t in family.transcripts if t.id == lines[0]["name"])
    assert lines[0]["prefix"] == family.prefixes[first.prefix_name]  # the prefix as text, not its name
    suite = tmp_path / "hermes.cases.jsonl"
    suite.write_text(proc.stdout)
    code, out, err = check(hermes / "template.json", suite)
    assert code == 0, out + err
    assert f"{len(lines)} cases: {len(lines)} passed" in out
    code, out, _ = check(ROOT / "examples/families/gpt_oss/template.json", suite)  # another format: failures
    assert code == 1


def test_family_cases_names_an_unknown_family():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "scripts/family_cases.py", "no_such_family"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no family 'no_such_family'" in proc.stderr and "qwen3" in proc.stderr


def test_a_lone_surrogate_is_reported_as_its_escape_not_a_traceback(tmp_path):
    # a stream cut inside an emoji's surrogate pair, logged as JSON: "\ud83d" with no partner (trial 12)
    cases = tmp_path / "surrogate.jsonl"
    cases.write_text(json.dumps({"prefix": "", "output": "hi \ud83d", "expected": {"role": "assistant",
                                                                                   "content": "hi"}}) + "\n")
    template = tmp_path / "t.json"
    template.write_text(json.dumps(CLEAN))
    rc, out, err = check(template, cases, "--chunkings", "0")
    assert rc == 1 and "Traceback" not in err, err
    assert 'content: expected "hi" got "hi \\ud83d"' in out, out
    rc, out, err = check(template, cases, "--chunkings", "0", "--json")
    assert rc == 1 and "Traceback" not in err, err
    got = json.loads(out)["cases"][0]["runs"][0]["message"]
    assert got["content"] == "hi \ud83d", got  # the JSON report carries the surrogate as its escape


def test_json_nested_too_deeply_is_unusable_input_not_a_traceback(files, tmp_path):
    clean, _, cases = files
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"prefix": "", "output": "x", "expected": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    rc, _, err = check(clean, deep)
    assert rc == 2 and "Traceback" not in err, err
    assert err.strip() == f"error: bad cases file: {deep}:1: nested too deeply to read (arrays or objects inside " \
                          "each other about a thousand levels deep)", err
    deep_template = tmp_path / "deep.json"
    deep_template.write_text("[" * 100_000 + "]" * 100_000)
    rc, _, err = check(deep_template, cases)
    assert rc == 2 and err.startswith(f"error: template {deep_template} is JSON nested too deeply"), err
