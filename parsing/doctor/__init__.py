"""Template doctor: lint, run checks, round trips against a chat template, and test suites.

Library side of the playground's Doctor panel and of ``python -m parsing check``.
Importing it needs only `parsing` (``regex`` and the stdlib); the round trip
imports transformers only to load a tokenizer from a path. ``import parsing`` does not import
this package.

- `parsing.doctor.lint`: `lint` (warnings with JSON paths and fixes), with the compatibility section from
  `parsing.doctor.compat` (`compatibility`: would transformers and vLLM accept it) and the generation prompt
  from `parsing.doctor.chat_template` (`generation_prompt`).
- `run_checks` (`parsing.doctor.checks`): overwritten values, regions open at end of
  stream, results that change with chunking, for one recorded run.
- `parsing.doctor.roundtrip`: `roundtrip` renders sample messages with a tokenizer's
  chat template, parse the assistant turn back, diff.
- `load_suite` / `save_suite` / `run_suite` (`parsing.doctor.suites`): JSONL test cases.
- `parsing.doctor.probe`: the probe suite; the module is callable, ``parsing.doctor.probe(template,
  prefixes=..., tools=...)`` returns a `ProbeReport` (the same as ``parsing.doctor.probe.probe``).

The functions `lint` and `roundtrip` are not re-exported here: ``parsing.doctor.lint`` and
``parsing.doctor.roundtrip`` are the submodules (``from parsing.doctor.lint import lint``).
Stream helpers (chunkers, `parse_stream`, `merged_events`) are public in `parsing.streams`.
"""

from . import probe
from .chat_template import generation_prompt
from .checks import ChecksReport, Finding, run_checks
from .compat import Compatibility, compatibility
from .diff import DiffEntry, diff_values, format_diff
from .lint import LintReport, LintWarning
from .probe import ProbeReport
from .roundtrip import RoundTripCase, RoundTripReport, sample_cases
from .suites import (Case, CaseResult, SuiteFormatError, SuiteReport, append_case, dumps_suite, export_suite,
                     load_suite, loads_suite, run_suite, save_suite, suite_path_for)

__all__ = [
    "Case", "CaseResult", "ChecksReport", "Compatibility", "DiffEntry", "Finding", "LintReport", "LintWarning",
    "ProbeReport", "RoundTripCase", "RoundTripReport", "SuiteFormatError", "SuiteReport", "append_case", "compatibility",
    "diff_values", "dumps_suite", "export_suite", "format_diff", "generation_prompt", "load_suite",
    "loads_suite", "probe", "run_checks", "run_suite", "sample_cases", "save_suite", "suite_path_for",
]
