"""Template doctor: lint, run checks, round trips against a chat template, and test suites.

Library side of the playground's Doctor panel and of ``python -m parsing check``.
Importing it needs only the engine (``regex`` and the stdlib); the round trip
imports transformers only to load a tokenizer from a path. ``import parsing`` does not import
this package.

- `lint` / `compatibility` (`parsing.doctor.lint`): warnings with JSON paths and fixes.
- `run_checks` (`parsing.doctor.checks`): overwritten values, regions open at end of
  stream, results that change with chunking, for one recorded run.
- `roundtrip` (`parsing.doctor.roundtrip`): render sample messages with a tokenizer's
  chat template, parse the assistant turn back, diff.
- `load_suite` / `save_suite` / `run_suite` (`parsing.doctor.suites`): JSONL test cases.

Note: the functions `lint` and `roundtrip` exported here shadow the submodules of the same name as attributes
of this package; import module-level names with ``from parsing.doctor.lint import ...``.
"""

from .checks import ChecksReport, Finding, run_checks
from .diff import DiffEntry, diff_values, format_diff
from .lint import Compatibility, LintReport, LintWarning, compatibility, generation_prompt, lint
from .roundtrip import RoundTripCase, RoundTripReport, roundtrip, sample_cases
from .suites import (Case, CaseResult, SuiteFormatError, SuiteReport, append_case, dumps_suite, export_suite,
                     load_suite, loads_suite, run_suite, save_suite, suite_path_for)

__all__ = [
    "Case", "CaseResult", "ChecksReport", "Compatibility", "DiffEntry", "Finding", "LintReport", "LintWarning",
    "RoundTripCase", "RoundTripReport", "SuiteFormatError", "SuiteReport", "append_case", "compatibility",
    "diff_values", "dumps_suite", "export_suite", "format_diff", "generation_prompt", "lint", "load_suite",
    "loads_suite", "roundtrip", "run_checks", "run_suite", "sample_cases", "save_suite", "suite_path_for",
]
