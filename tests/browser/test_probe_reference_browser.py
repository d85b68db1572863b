"""The Doctor's probes also run transformers' parser (on by default): a template whose call close has an optional
tail shows, in both colour schemes and legibly, the probes only transformers' streaming parser fails, and Lint
names the pattern; unticked, the probes run on our engine alone (trial 11: the playground showed only green)."""

import json

from contrast import assert_readable
from test_doctor_panel import open_doctor, set_code

from tests.playground.test_probe_panel import TAILED


def test_probes_show_what_only_transformers_gets_wrong(scheme_page):
    page = scheme_page
    set_code(page, "template", json.dumps(TAILED, indent=2))
    open_doctor(page)
    assert page.is_checked("#doctor-probe-reference input")
    page.click("#doctor-probe-btn")
    page.wait_for_selector("#doctor-probe .probe-reference-fail", timeout=90000)
    assert "fail only in transformers' parser" in page.inner_text("#doctor-probe .probe-reference")
    assert "transformers reference" in page.inner_text("#doctor-probe")
    assert_readable(page, ["#doctor-probe .probe-reference"], min_checked=1)
    page.click("#doctor-lint-btn")
    page.wait_for_function("() => document.querySelector('#doctor-lint').innerText.includes('optional-tail')",
                           timeout=60000)
    # unticked: our engine alone, no verdict on transformers
    page.click("#doctor-probe-reference input")
    page.click("#doctor-probe-btn")
    page.wait_for_function("() => { const r = document.querySelector('#doctor-probe .probe-report');"
                           " return r && !document.querySelector('#doctor-probe .probe-reference')"
                           " && !document.querySelector('#doctor-probe').innerText.includes('transformers reference'); }",
                           timeout=90000)
