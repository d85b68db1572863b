"""Test kinds, as pytest markers (registered in pytest.ini; ``bash scripts/test.sh`` runs all of them).

- ``browser``: every test under ``tests/browser`` (the page in Debian Chromium through Playwright).
- ``slow``: marked where the test is written: seconds per test (hypothesis differential runs, a real
  server process, model generation, timing budgets).
- ``unit``: everything else, added here: the quick inner loop, ``pytest -m unit``.
"""

from pathlib import Path

import pytest

BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if BROWSER_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser") is None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.unit)
