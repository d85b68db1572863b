"""The side-by-side check (`playground.reference`): transformers' parser fed the same chunks as ours."""

import json

from parsing.streams import tokenish_chunks
from playground import reference
from playground.reference import reference_check
from playground.session import SKELETON_TEMPLATE, Run, parse_run, template_to_text

TPL = template_to_text(SKELETON_TEMPLATE)
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUT = 'Hmm.\n</think>\nSure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>'


def test_a_disagreement_is_reported():
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL)
    view = parse_run(run)
    view.message = dict(view.message, content="tampered")
    chk = reference_check(run, view)
    assert not chk["agree"] and "message differs" in chk["differences"][0]


def _catastrophic_run():
    spec = json.loads(TPL)
    spec["fields"]["reasoning_content"] = {"open": "<think>", "close_pattern": "(a|aa)+$"}
    out = "<think>\n" + "a" * 40 + "b</think>"
    return Run(prefix="<|im_start|>assistant\n", chunks=tuple(tokenish_chunks(out)), template_text=json.dumps(spec))


def test_reference_check_skips_quickly_when_our_parse_timed_out():
    import time

    run = _catastrophic_run()
    view = parse_run(run)
    assert any(e.get("timeout") for e in view.errors)
    t0 = time.monotonic()
    chk = reference_check(run, view)
    assert time.monotonic() - t0 < 1.0
    assert chk["skipped"] and not chk["agree"] and not chk["differences"]


def test_reference_check_runs_transformers_under_a_time_budget():
    import time

    from playground.render import check_html
    from playground.session import ParseView

    run = _catastrophic_run()
    t0 = time.monotonic()
    chk = reference_check(run, ParseView(final=True))  # a view without our timeout: the reference runs
    took = time.monotonic() - t0
    assert took < reference.REFERENCE_BUDGET_S + 2, took
    assert chk["skipped"] == ("reference check skipped: the transformers parser exceeded the time budget "
                              f"({reference.REFERENCE_BUDGET_S:g}s) on this template")
    assert not chk["differences"] and chk["ref_error"] is None
    html_ = check_html(chk)
    assert "exceeded the time budget" in html_ and "Traceback" not in html_ and "differs" not in html_
