"""Run checks: what went wrong, or would go wrong with other chunks, in one recorded run.

A run is the prompt prefix, the generated text (as the chunks it arrived in),
the template and the tools. `run_checks` parses it with spans and reports:

- ``overwrite``: a non-repeating field closed twice; the second value replaced
  the first (both values are in the finding).
- ``open-at-end``: a region that has a close delimiter was still open when the
  stream ended (output cut by ``max_new_tokens``, or a stop token that is the
  close and never reached the text).
- ``chunking``: the one-shot result differs from the result of the recorded
  chunks or of a random chunking (message, error, or the event list after
  merging adjacent chunks of one region).
- ``region-error``: a region's body did not parse (the run is parsed with
  ``recover=True`` so the other checks still see the rest).
- ``parse-error``: the parse raised (e.g. a required field is missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..streams import Outcome, boundaries, chunkings, merged_events, parse_stream
from ..template import load_template
from .diff import diff_values, same_value, show_value

__all__ = ["Finding", "ChecksReport", "run_checks"]


@dataclass(frozen=True)
class Finding:
    """One problem in a run.

    Attributes:
        code: ``overwrite``, ``open-at-end``, ``chunking``, ``region-error`` or ``parse-error``.
        field: the field concerned, or None.
        message: one readable sentence.
        details: code-specific data, JSON-able: ``overwrite``: ``previous``, ``value`` (the values),
            ``previous_span``, ``span`` (``[start, end]`` of the two regions in the parsed stream);
            ``open-at-end``: ``body`` (the raw text the region got), ``close`` (its close delimiter source),
            ``start`` (where the region began); ``chunking``: ``cuts`` (chunk boundaries in the output),
            ``one_shot``, ``chunked`` (the two results), ``diff`` (list of diff dicts), ``what``
            (``"message"`` or ``"events"``); ``region-error``: ``message``, ``raw``; ``parse-error``: ``error``.
        severity: ``"error"``, ``"warning"`` or ``"info"``.
    """

    code: str
    field: str | None
    message: str
    details: dict = field(default_factory=dict)
    severity: str = "warning"

    def to_dict(self) -> dict:
        """``{"code", "field", "message", "severity", "details"}``."""
        return {"code": self.code, "field": self.field, "message": self.message, "severity": self.severity,
                "details": self.details}


@dataclass
class ChecksReport:
    """The findings of `run_checks` plus the one-shot outcome they were computed from."""

    findings: list[Finding]
    message: dict | None
    error: str | None
    chunkings_tried: int

    @property
    def codes(self) -> list[str]:
        """The finding codes, in order."""
        return [f.code for f in self.findings]

    @property
    def ok(self) -> bool:
        """True when there is no finding."""
        return not self.findings

    def to_dict(self) -> dict:
        """JSON-able form: ``{"ok", "message", "error", "chunkings_tried", "findings": [...]}``."""
        return {"ok": self.ok, "message": self.message, "error": self.error,
                "chunkings_tried": self.chunkings_tried, "findings": [f.to_dict() for f in self.findings]}

    def format(self) -> str:
        """Readable text: one paragraph per finding, or a one-line all-clear."""
        if not self.findings:
            return f"No problems found (one-shot and {self.chunkings_tried} chunkings agree)."
        lines = []
        for f in self.findings:
            lines.append(f"{f.severity.upper()} [{f.code}] {f.message}")
            if f.code == "chunking" and f.details.get("diff"):
                lines.append(f"    chunk boundaries: {f.details['cuts']}")
                for d in f.details["diff"]:
                    lines.append(f"    {d['path'] or '(message)'}: one-shot {show_value(d.get('expected'))} / "
                                 f"chunked {show_value(d.get('actual'))}")
        return "\n".join(lines)


def _parse(template: Any, prefix: str, chunks: list[str], tools: list | None) -> Outcome:
    return parse_stream(template, prefix, chunks, tools=tools, spans=True, recover=True)


def _overwrites(template: Any, outcome: Outcome) -> list[Finding]:
    out = []
    last: dict[str, dict] = {}
    for ev in outcome.events:
        if ev.get("type") != "region_close":
            continue
        name = ev["field"]
        spec = template.fields[name]
        if spec.repeats or spec.join is not None:
            continue
        if name in last:
            prev = last[name]
            dropped = " (then dropped from the message as empty)" if ev["value"] in ("", None, [], {}) else ""
            out.append(Finding(
                "overwrite", name,
                f"'{name}' was set twice: {show_value(ev['value'], 60)} replaced "
                f"{show_value(prev['value'], 60)}{dropped}.",
                {"previous": prev["value"], "value": ev["value"],
                 "previous_span": [prev.get("start"), prev.get("end")], "span": [ev.get("start"), ev.get("end")]},
            ))
        last[name] = ev
    return out


def _open_at_end(template: Any, outcome: Outcome) -> list[Finding]:
    parser = outcome.parser
    if parser is None or not outcome.ok:
        return []
    end = len(parser.stream_text)
    closes = {(d["field"], d["start"], d["end"]) for d in parser.delimiters if d["kind"] == "close"}
    out = []
    opens: dict[str, int] = {}
    for ev in outcome.events:
        if ev.get("type") == "region_open":
            opens[ev["field"]] = ev.get("start", end)
        if ev.get("type") not in ("region_close", "region_error"):
            continue
        name = ev["field"]
        spec = template.fields[name]
        if spec.close is None or ev.get("start") != end or ev.get("end") != end or (name, end, end) in closes:
            continue
        if _zero_width_close_at(spec.close, parser.stream_text, end):
            continue  # e.g. `\Z`: the close is the end of the stream itself
        start = opens.get(name, end)
        body = parser.stream_text[start:end]
        # The explicit open delimiter is part of [start, end) for explicit regions; show only the body.
        delim = next((d for d in reversed(parser.delimiters) if d["kind"] == "open" and d["field"] == name
                      and d["start"] == start), None)
        if delim is not None:
            body = parser.stream_text[delim["end"]:end]
        implicit = name == template.implicit
        out.append(Finding(
            "open-at-end", name,
            f"'{name}' was still open at the end of the stream: its close {_as_written(spec.close)} never came"
            + (" (a stop token that is stripped from the text?)" if implicit else " (output cut short?)") + ".",
            {"body": body, "close": spec.close.source, "start": start},
            severity="info" if implicit else "warning",
        ))
    return out


def _as_written(delim: Any) -> str:
    """A delimiter as the template wrote it, for messages: a literal as the text it is (``'<|im_end|>X'``, several
    joined by "or"), a regex as ``pattern `...` `` as written, backslashes single (a literal's `source` is its
    regex-escaped alternation)."""
    if delim.literals is not None:
        return " or ".join(repr(lit) for lit in delim.literals)
    return f"pattern `{delim.source}`"


def _zero_width_close_at(close: Any, text: str, pos: int) -> bool:
    try:
        m = close.regex.match(text, pos, timeout=1.0)
    except TimeoutError:
        return False
    return m is not None and m.end() == pos


def _errors(outcome: Outcome) -> list[Finding]:
    out = []
    for ev in outcome.events:
        if ev.get("type") == "region_error":
            out.append(Finding("region-error", ev["field"], f"'{ev['field']}' did not parse: {ev['message']}",
                               {"message": ev["message"], "raw": ev["raw"]}, severity="error"))
    if outcome.error is not None:
        out.append(Finding("parse-error", None, f"Parsing failed: {outcome.error}", {"error": outcome.error},
                           severity="error"))
    return out


def _compare(reference: Outcome, other: Outcome, label: str) -> Finding | None:
    ref, got = reference.result(), other.result()
    cuts = boundaries(other.chunks)
    if not same_value(ref, got):
        diff = [d.to_dict() for d in diff_values(ref, got)]
        return Finding(
            "chunking", None,
            f"The {label} gives a different result than the one-shot parse.",
            {"cuts": cuts, "one_shot": ref, "chunked": got, "diff": diff, "what": "message"}, severity="error")
    ref_ev, got_ev = merged_events(reference.events), merged_events(other.events)
    if not same_value(ref_ev, got_ev):
        diff = [d.to_dict() for d in diff_values(ref_ev, got_ev)]
        return Finding(
            "chunking", None,
            f"The {label} gives the same message but different events than the one-shot parse.",
            {"cuts": cuts, "one_shot": ref_ev, "chunked": got_ev, "diff": diff, "what": "events"})
    return None


def run_checks(template: Any, prefix: str, output: str | list[str], *, tools: list | None = None,
               chunkings_count: int = 3, seed: int = 0) -> ChecksReport:
    """Check one run: overwritten values, regions open at the end, chunking dependence, parse errors.

    Args:
        template: anything `parsing.load_template` takes.
        prefix: the prompt before generation (``""`` to opt out).
        output: the generated text, or the chunks it arrived in (the recorded chunking is then compared too).
        tools: tool schemas, as for the parser.
        chunkings_count: random chunkings compared with the one-shot parse.
        seed: seeds the random chunkings (a finding's ``cuts`` reproduce it).

    Returns:
        a `ChecksReport`. At most one ``chunking`` finding is reported (the first chunking that differs).

    Raises:
        parsing.TemplateError: the template does not load.
    """
    compiled = load_template(template)
    chunks = [output] if isinstance(output, str) else list(output)
    text = "".join(chunks)
    one_shot = _parse(compiled, prefix, [text], tools)
    findings = _errors(one_shot)
    findings += _overwrites(compiled, one_shot)
    findings += _open_at_end(compiled, one_shot)
    candidates = []
    if len(chunks) > 1:
        candidates.append(("recorded chunking", chunks))
    candidates += [("random chunking", c) for c in chunkings(text, chunkings_count, seed)]
    for label, pieces in candidates:
        finding = _compare(one_shot, _parse(compiled, prefix, pieces, tools), label)
        if finding is not None:
            findings.append(finding)
            break
    return ChecksReport(findings, one_shot.message, one_shot.error, len(candidates))
