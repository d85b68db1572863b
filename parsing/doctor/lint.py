"""Lint: warnings for response templates that load fine but will hurt.

Every warning carries the JSON path of the fault (`TemplateError.path`'s dotted style,
``fields.content``, ``fields.tool_calls.close[1]``, ``start_anchor``) and a
suggested fix. The checks are pure template analysis (the `regex` module on
the template's own strings and on a few built-in sample texts); only the
start-anchor check looks at a tokenizer, and only through the generation
prompt its chat template renders (see `generation_prompt`).

Warning codes (`LintWarning.code`):

- ``wrong-type``: a value of another JSON type than the spec's (``"repeats": "false"``), which the reference
  loads anyway and reads by Python truthiness (`parsing.doctor.schema.wrong_types`).
- ``missing-role``: no ``defaults.role`` (and no ``role`` field), so parsed messages have no ``role`` key, which
  chat templates read for every message.
- ``reasoning-field-name``: reasoning stored under another key than ``reasoning_content`` (the key most chat
  templates read, e.g. Qwen3's) or ``thinking`` (gpt-oss's chat template; the only one vLLM's response_template
  parser reads, see `parsing.doctor.compat`); with a tokenizer, also a reasoning field named one of the two
  while its chat template reads the other (``message.thinking`` in gpt-oss's).
- ``field-overwrite``: a non-repeating field can be opened again, and its
  second value replaces the first (the classic case: whitespace after a block
  reopens the implicit content field, whose empty value replaces real content).
- ``delimiter-prefix``: a delimiter of one field is a prefix of (or equal to)
  a delimiter of another field.
- ``missing-close``: an explicit field without ``close``/``close_pattern`` runs
  to the end of the stream and swallows every later block.
- ``close-in-json``: the close delimiter of a ``json`` field matches text that
  occurs inside ordinary JSON bodies, or fires on its own text inside a JSON string value
  (``{"s": "see </tool_call>"}``), so the region closes too early.
- ``invalid-regex`` (severity ``error``): a regex in ``content_args`` (``tag_pattern``, also in a nested ``value_parser``'s args)
  does not compile, has no ``key`` group, or is missing where ``xml-inline`` needs it: the loader accepts it (as
  transformers does) and every region of the field then fails to parse.
- ``unknown-content-arg``: a ``content_args`` key the field's content parser does not read (a typo such as
  ``strin_delims``: it is silently ignored), a ``value_parser`` key other than ``name``/``args``, or a
  ``value_parser`` naming no content parser (severity ``error``: every such region fails). The known keys come from `parsing.content.CONTENT_ARGS`.
- ``empty-match``: a pattern can match the empty string.
- ``anchor-not-in-generation-prompt``: the start anchor does not occur in the
  generation prompt the tokenizer's chat template produces.
- ``unknown-transform-variable``: a transform placeholder names a variable the
  field will not have (only ``content`` and the open pattern's named groups
  exist; a ``close_pattern``'s groups are not variables in transformers), so
  every region of the field fails with KeyError at close.
- ``search-start-anchor``: a delimiter pattern uses ``\\G`` (the position where a
  search starts), which transformers moves with every chunk boundary, so its
  streamed results depend on how the output was cut.
- ``typed-tool-arguments``: an ``xml-inline``/``kv-lines`` field whose values become tool-call ``arguments``
  (its transform puts ``{content}`` under an ``arguments`` key) types them with a ``value_parser`` (``json``,
  ``int``, ``float``, ``bool``...): ``"12345"`` becomes ``12345`` before the tool schema is read, and values
  that are not strings are never re-cast (spec section 7), so a parameter the schema types as string gets a
  number, a boolean or null. Left as text, each string argument is cast by its parameter's schema.

The compatibility section comes from `parsing.doctor.compat` (would transformers
and vLLM's ``response_template`` parser accept the template); the generation
prompt from `parsing.doctor.chat_template`. Delimiters are the ones the loaded
`CompiledTemplate` already compiled: lint analyses exactly what the parser runs.
"""

from __future__ import annotations

import difflib
import json
import re as _stdlib_re
import re._parser as _re_parser  # the stdlib's regex syntax tree (widths of a pattern's trailing parts)
from dataclasses import asdict, dataclass, field
from typing import Any

import regex

from ..content import CONTENT_ARGS, VALUE_PARSER_KEYS
from ..template import CompiledTemplate, Delimiter, load_template, regex_fault
from ..transform import PLACEHOLDER
from .chat_template import REASONING_KEY, generation_prompt
from .compat import VLLM_REASONING_KEY, Compatibility, compatibility
from .probe_cases import BALANCED_JSON
from .schema import wrong_types

__all__ = ["LintReport", "LintWarning", "SEVERITIES", "lint", "start_anchor_warnings"]

#: Lint severities, most severe first; ``python -m parsing lint`` exits 1 on an error or a warning.
SEVERITIES = ("error", "warning", "info")

_REGEX_FLAGS = regex.DOTALL  # as the parser compiles patterns (content_args.tag_pattern is compiled here)
_REGEX_TIMEOUT = 1.0  # seconds per search on the built-in samples
# A field name or open delimiter that says "reasoning".
_REASONING_WORD = regex.compile(r"(?i)reason|think|thought|analysis|scratchpad")
# ...but not a closing tag such as `</think>` or `[/THINK]` or `<|END_THINKING|>`.
_CLOSING_TAG = regex.compile(r"(?i)^\s*(?:</|\[/|<\|?end)")
# An open that addresses a function is a tool-call open, even when it also names the reasoning channel
# (gpt-oss models sometimes call from the analysis channel: `<|channel|>analysis to=functions.x`).
_CALL_WORD = regex.compile(r"(?i)to=functions|tool_?call|function")

# Bodies a JSON-content region receives in practice: nested objects and arrays,
# pretty-printed JSON, strings holding code, markup and quotes.  A close
# delimiter that matches inside one of them closes the region too early.
JSON_BODY_SAMPLES = (
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    '{"name": "search", "arguments": {"filters": {"tags": ["a", "b"], "range": [1, 2]}, "q": "x"}}',
    '{\n  "name": "run",\n  "arguments": {\n    "opts": {\n      "deep": true\n    }\n  }\n}',
    '[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": null}}]',
    '{"name": "python", "arguments": {"code": "def f(x):\\n    return {\\"k\\": [x]}\\n"}}',
    '{"name": "write", "arguments": {"html": "<div class=\\"a\\">hi</div>", "note": "use `}` or \'quotes\'"}}',
)


@dataclass(frozen=True)
class LintWarning:
    """One finding.

    Attributes:
        code: the warning kind (see the module docstring for the list).
        path: dotted JSON path into the template (``""`` = the template as a whole).
        message: what is wrong and what it will do to parsed messages.
        fix: a suggested change to the template.
        severity: ``"error"`` (every parse that reaches the fault fails: a content_args regex that does not
            compile, a value_parser naming no parser), ``"warning"`` (will hurt real outputs) or ``"info"`` (hurts
            only some outputs; worth a look).
    """

    code: str
    path: str
    message: str
    fix: str
    severity: str = "warning"

    def to_dict(self) -> dict:
        """The warning as a plain JSON-able dict with the attribute names as keys."""
        return asdict(self)


@dataclass
class LintReport:
    """What `lint` returns: the warnings (in check order) and the compatibility section."""

    warnings: list[LintWarning] = field(default_factory=list)
    compatibility: list[Compatibility] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        """The warning codes, in order (handy in tests and summaries)."""
        return [w.code for w in self.warnings]

    def to_dict(self) -> dict:
        """``{"warnings": [warning dicts], "compatibility": [compatibility dicts]}``."""
        return {
            "warnings": [w.to_dict() for w in self.warnings],
            "compatibility": [c.to_dict() for c in self.compatibility],
        }

    def format(self) -> str:
        """A readable multi-line text report (used by the CLI and the playground)."""
        lines = []
        if not self.warnings:
            lines.append("No lint warnings.")
        for w in self.warnings:
            where = w.path or "(template)"
            lines.append(f"{w.severity.upper()} [{w.code}] {where}: {w.message}")
            lines.append(f"    fix: {w.fix}")
        for c in self.compatibility:
            verdict = "accepted" if c.accepted else "NOT accepted"
            lines.append(f"{c.target}: {verdict} (per {c.basis})" + "".join(f"\n    - {r}" for r in c.reasons))
        return "\n".join(lines)


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class _Delim:
    """One delimiter as lint sees it: a single literal of a literal list, or a whole pattern.

    ``compiled`` is the parser's own `Delimiter` (from the loaded `CompiledTemplate`); a pattern is searched
    with its compiled regex, a literal with plain string search: nothing is compiled again.
    """

    field: str
    kind: str  # "open" | "close"
    path: str
    literal: str | None  # one literal, or None for a pattern
    compiled: Delimiter

    @property
    def pattern(self) -> Any:
        """The compiled regex of a pattern delimiter."""
        return self.compiled.regex

    @property
    def shown(self) -> str:
        return json.dumps(self.literal if self.literal is not None else self.compiled.source, ensure_ascii=False)

    def find(self, text: str) -> tuple[int, int] | None:
        """``(start, end)`` of the first match in `text` (None if none, or if a pattern runs past its time)."""
        if self.literal is not None:
            i = text.find(self.literal)
            return None if i < 0 else (i, i + len(self.literal))
        m = _search(self.pattern, text)
        return None if m is None else m.span()


def _delimiters(compiled: CompiledTemplate) -> list[_Delim]:
    out = []
    for name, fld in compiled.fields.items():
        raw_field = compiled.spec["fields"][name]
        for kind, delim in (("open", fld.open), ("close", fld.close)):
            if delim is None:
                continue
            if delim.literals is None:
                out.append(_Delim(name, kind, f"fields.{name}.{kind}_pattern", None, delim))
                continue
            raw = raw_field[kind]
            for lit in delim.literals:
                path = f"fields.{name}.{kind}" + ("" if isinstance(raw, str) else f"[{raw.index(lit)}]")
                out.append(_Delim(name, kind, path, lit, delim))
    return out


def _has_close(fspec: dict) -> bool:
    return "close" in fspec or "close_pattern" in fspec


def _is_explicit(fspec: dict) -> bool:
    return "open" in fspec or "open_pattern" in fspec


def _first_literal(fspec: dict, kind: str) -> str | None:
    raw = fspec.get(kind)
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw:
        return raw[0]
    return None


def _delim_text(fspec: dict, kind: str) -> str:
    lit = _first_literal(fspec, kind)
    if lit is not None:
        return json.dumps(lit, ensure_ascii=False)
    return f"/{fspec[kind + '_pattern']}/"


def _search(pattern, text: str, pos: int = 0, **kw):
    try:
        return pattern.search(text, pos, timeout=_REGEX_TIMEOUT, **kw)
    except TimeoutError:
        return None


# --------------------------------------------------------------------------- the checks


def _check_types(spec: dict) -> list[LintWarning]:
    out = []
    for p in wrong_types(spec):
        fix = f"make it {p.expected}"
        if p.expected == "true or false":
            meant = str(p.value).strip().lower()
            meant = "false" if meant in ("false", "0", "no", "off", "none", "null") else \
                "true" if meant in ("true", "1", "yes", "on") else None
            now = json.dumps(bool(p.value))
            fix = (f"write {meant} without quotes" + (f" ({now} is what it does now)" if meant != now else "")
                   if meant else f"write true or false without quotes ({now} is what it does now)")
        out.append(LintWarning("wrong-type", p.path, p.message, f"At {p.path}, {fix}."))
    return out


def _check_role(spec: dict) -> list[LintWarning]:
    defaults = spec.get("defaults")
    if (isinstance(defaults, dict) and "role" in defaults) or "role" in spec["fields"]:
        return []
    return [LintWarning(
        "missing-role", "defaults",
        "Parsed messages have no 'role' key: a chat template reads message['role'] for every message, so "
        "appending a parsed message to the chat and rendering it again fails or drops the message.",
        'Add "defaults": {"role": "assistant"} to the template.',
    )]


def _check_reasoning_name(spec: dict) -> list[LintWarning]:
    out = []
    for name, fspec in spec["fields"].items():
        if name in (REASONING_KEY, VLLM_REASONING_KEY):  # the two names consumers read (see the docstring)
            continue
        by_name = bool(_REASONING_WORD.search(name))
        opens = [fspec["open"]] if isinstance(fspec.get("open"), str) else list(fspec.get("open") or [])
        if "open_pattern" in fspec:
            opens.append(fspec["open_pattern"])
        by_open = [o for o in opens
                   if _REASONING_WORD.search(o) and not _CLOSING_TAG.search(o) and not _CALL_WORD.search(o)]
        if not (by_name or by_open):
            continue
        why = (f"the name '{name}' says reasoning" if by_name
               else f"its open delimiter {json.dumps(by_open[0], ensure_ascii=False)} marks reasoning")
        out.append(LintWarning(
            "reasoning-field-name", f"fields.{name}",
            f"Field '{name}' looks like the reasoning field ({why}), but consumers read reasoning from "
            f"'{REASONING_KEY}' (most chat templates, e.g. Qwen3's) or '{VLLM_REASONING_KEY}' (gpt-oss's chat "
            f"template, and the only name vLLM's response_template parser accepts): a parsed message appended to "
            f"the chat loses its reasoning when re-rendered.",
            f"Rename the field '{name}' to the key your chat template reads: '{REASONING_KEY}', or "
            f"'{VLLM_REASONING_KEY}' (also for vLLM; see the compatibility section).",
        ))
    return out


def _reads_key(chat_template: str, key: str) -> bool:
    """True if a Jinja chat template reads ``message.KEY`` / ``message['KEY']`` / ``message.get('KEY')`` (the
    message loop variable; a content block's ``block.thinking`` is another thing)."""
    k = regex.escape(key)
    pattern = rf"""\bmessage(?:\.{k}\b|\[\s*['"]{k}['"]|\.get\(\s*['"]{k}['"])"""
    return regex.search(pattern, chat_template) is not None


def _chat_template_text(tokenizer: Any) -> str:
    """The tokenizer's chat template source (every named template joined), or ``""``."""
    source = getattr(tokenizer, "chat_template", None)
    if isinstance(source, dict):
        return "\n".join(v for v in source.values() if isinstance(v, str))
    return source if isinstance(source, str) else ""


def _check_reasoning_read(spec: dict, chat_template: str) -> list[LintWarning]:
    """The reasoning field is named for one consumer, and the tokenizer's chat template reads the other name."""
    names = (REASONING_KEY, VLLM_REASONING_KEY)
    out = []
    for name in names:
        other = names[1 - names.index(name)]
        if name in spec["fields"] and _reads_key(chat_template, other) and not _reads_key(chat_template, name):
            out.append(LintWarning(
                "reasoning-field-name", f"fields.{name}",
                f"The tokenizer's chat template reads reasoning from '{other}', not '{name}': a parsed message "
                f"appended to the chat loses its reasoning when re-rendered.",
                f"Rename the field '{name}' to '{other}'"
                + (" (vLLM's response_template parser reads 'thinking' too)." if other == VLLM_REASONING_KEY
                   else ", or render 'thinking' in the chat template (vLLM reads only 'thinking').")))
    return out


def _check_overwrite(spec: dict) -> list[LintWarning]:
    out = []
    fields = spec["fields"]
    # Repeating blocks (tool calls) first: the example below reads best with them.
    explicit_with_close = sorted((n for n, f in fields.items() if _is_explicit(f) and _has_close(f)),
                                 key=lambda n: not fields[n].get("repeats"))
    for name, fspec in fields.items():
        if fspec.get("repeats"):
            continue
        if not _is_explicit(fspec):
            # The implicit field: it is re-entered after every explicit region that closes and after
            # its own close; any text there (a newline is enough) opens it again.
            reentry = []
            if explicit_with_close:
                other = fields[explicit_with_close[0]]
                reentry.append(f"after a {explicit_with_close[0]} block (closed by {_delim_text(other, 'close')})")
            if _has_close(fspec):
                reentry.append(f"after its own close {_delim_text(fspec, 'close')}")
            if not reentry:
                continue
            example = ""
            if explicit_with_close:
                other = fields[explicit_with_close[0]]
                o, c = _first_literal(other, "open"), _first_literal(other, "close")
                if o is not None and c is not None:
                    example = (f" For example {json.dumps('Answer.' + o + '...' + c + chr(10), ensure_ascii=False)} "
                               f"parses to {name}='' (dropped), not 'Answer.'.")
            out.append(LintWarning(
                "field-overwrite", f"fields.{name}",
                f"The implicit field '{name}' does not repeat, so any text {' or '.join(reentry)} (even a "
                f"newline) opens it again and the new value replaces the earlier one.{example}",
                f'Add "repeats": true and "join": "" to fields.{name}, so later pieces are appended '
                f"instead of replacing earlier ones (vLLM's response_template parser refuses join on content: "
                f'for it, "repeats": true alone; it joins the streamed pieces itself).',
                # Text after the field's own close (usually the stop token) is rare; after a block it is common.
                severity="warning" if explicit_with_close else "info",
            ))
        elif _has_close(fspec) and not _opens_only_at_start(fspec):
            out.append(LintWarning(
                "field-overwrite", f"fields.{name}",
                f"Field '{name}' does not repeat: if the model emits a second {_delim_text(fspec, 'open')} block, "
                f"its value replaces the first one.",
                f'If the model can emit several blocks, add "repeats": true (a list) or "repeats": true with '
                f'"join": "\\n" (one string) to fields.{name}.',
                severity="info",
            ))
    return out


def _opens_only_at_start(fspec: dict) -> bool:
    """True when every alternative of the field's open_pattern starts with ``^`` or ``\\A``: the region can open
    only at the start of the parsed text (right after the prompt), so a second block cannot replace the first."""
    source = fspec.get("open_pattern")
    if not isinstance(source, str):
        return False
    try:
        import re._constants as c  # Python 3.11+
        import re._parser as sre_parse
    except ImportError:  # pragma: no cover - older Pythons
        import sre_constants as c  # type: ignore
        import sre_parse  # type: ignore
    try:
        items = list(sre_parse.parse(source, _stdlib_re.DOTALL))
    except Exception:  # syntax only the regex module knows
        return False
    branches = items[0][1][1] if len(items) == 1 and items[0][0] is c.BRANCH else [items]
    starts = (c.AT_BEGINNING, c.AT_BEGINNING_STRING)
    return all(branch and branch[0][0] is c.AT and branch[0][1] in starts for branch in branches)


def _literal_vs_pattern(lit: str, pattern) -> str | None:
    """How a literal and a pattern overlap at the same start: 'equal', 'pattern-prefix' (the pattern matches a
    proper prefix of the literal), 'literal-prefix' (the literal is a proper prefix of a possible match), or None."""
    try:
        full = pattern.fullmatch(lit, timeout=_REGEX_TIMEOUT)
        if full is not None:
            return "equal"
        m = pattern.match(lit, timeout=_REGEX_TIMEOUT)
        if m is not None and 0 < m.end() < len(lit):
            return "pattern-prefix"
        p = pattern.fullmatch(lit, partial=True, timeout=_REGEX_TIMEOUT)
        if p is not None and p.partial:
            return "literal-prefix"
    except TimeoutError:
        return None
    return None


def _watched_together(spec: dict, pair: tuple[_Delim, _Delim]) -> bool:
    """Whether an overlap of (shorter, longer) can change what fires.

    Explicit opens and the implicit field's close are watched at the same time; an explicit region's close is
    watched alone, so two closes never compete, and an explicit close only hurts an open it eats the start of.
    """
    short, long = pair
    kinds = (short.kind, long.kind)
    if kinds == ("close", "close"):
        return False
    if kinds == ("open", "close") and _is_explicit(spec["fields"][long.field]):
        return False
    return True


def _check_delimiter_prefix(spec: dict, delims: list[_Delim]) -> list[LintWarning]:
    out = []
    seen = set()
    for a in delims:
        for b in delims:
            if a.field == b.field or (b.path, a.path) in seen or (a.path, b.path) in seen:
                continue
            relation = None  # (shorter, longer) or "equal"
            if a.literal is not None and b.literal is not None:
                if a.literal == b.literal:
                    relation = "equal"
                elif b.literal.startswith(a.literal):
                    relation = (a, b)
                elif a.literal.startswith(b.literal):
                    relation = (b, a)
            elif a.literal is not None or b.literal is not None:
                lit, pat = (a, b) if a.literal is not None else (b, a)
                kind = _literal_vs_pattern(lit.literal, pat.pattern)
                if kind == "equal":
                    relation = "equal"
                elif kind == "pattern-prefix":
                    relation = (pat, lit)
                elif kind == "literal-prefix":
                    relation = (lit, pat)
            # two patterns: not analysed (undecidable in general)
            if relation is None:
                continue
            pairs = [(a, b), (b, a)] if relation == "equal" else [relation]
            if not any(_watched_together(spec, pair) for pair in pairs):
                continue
            seen.add((a.path, b.path))
            if relation == "equal":
                first, second = sorted((a, b), key=lambda d: d.path)
                message = (f"{first.path} and {second.path} can match the same text {first.shown}: only one of "
                           f"them can ever fire there ({first.kind}/{second.kind} of different fields).")
                fix = "Give each field its own delimiter, or merge the two fields."
                path = second.path
            else:
                short, long = relation
                message = (f"The {short.kind} delimiter {short.shown} of '{short.field}' is a prefix of the "
                           f"{long.kind} delimiter {long.shown} of '{long.field}': ")
                if short.kind == "close" and long.kind == "open":
                    message += (f"closing '{short.field}' consumes the start of {long.shown}, so '{long.field}' "
                                f"cannot open right after it")
                elif short.kind == "open" and long.kind == "open":
                    message += (f"text such as {json.dumps((short.literal or '') + '…', ensure_ascii=False)} that "
                                f"is not the longer delimiter opens '{short.field}' instead, and a stream cut "
                                f"between the two is ambiguous until more text arrives")
                else:
                    message += "which one fires depends on the surrounding text and on where chunks are cut"
                fix = (f"Make the delimiters distinct (e.g. include the closing '>' or the token boundary in "
                       f"{short.shown}), or use a close_pattern/open_pattern with a lookahead that excludes "
                       f"{long.shown}.")
                path = short.path
            out.append(LintWarning("delimiter-prefix", path, message, fix))
    return out


def _check_missing_close(spec: dict) -> list[LintWarning]:
    out = []
    for name, fspec in spec["fields"].items():
        if _is_explicit(fspec) and not _has_close(fspec):
            others = [n for n, f in spec["fields"].items() if n != name and _is_explicit(f)]
            swallowed = f" (including every later {', '.join(others)} block)" if others else ""
            out.append(LintWarning(
                "missing-close", f"fields.{name}",
                f"Field '{name}' opens with {_delim_text(fspec, 'open')} but has no close: once open it runs to "
                f"the end of the stream and swallows all text after it{swallowed}.",
                f"Add a close (or close_pattern) to fields.{name}: its end marker, or the turn's end token; "
                f"a lookahead close_pattern such as (?=<next open>) ends it where the next block starts.",
            ))
    return out


def _placeholders(transform: Any, path: str):
    """Yield ``(root_name, json_path)`` for every whole-string placeholder in a transform."""
    if isinstance(transform, dict):
        for key, value in transform.items():
            yield from _placeholders(value, f"{path}.{key}")
    elif isinstance(transform, list):
        for i, value in enumerate(transform):
            yield from _placeholders(value, f"{path}[{i}]")
    elif isinstance(transform, str):
        whole = PLACEHOLDER.fullmatch(transform)
        if whole:
            yield whole.group(1).split(".")[0], path


def _group_names(delim: Delimiter | None) -> set[str]:
    return set(delim.regex.groupindex) if delim is not None else set()


def _check_transform_variables(compiled: CompiledTemplate) -> list[LintWarning]:
    out = []
    for name, fspec in compiled.spec["fields"].items():
        if "transform" not in fspec or fspec.get("transform_each"):
            continue  # with transform_each the variables are each element's keys: only known at parse time
        fld = compiled.fields[name]
        available = {"content"} | _group_names(fld.open)
        close_groups = _group_names(fld.close)
        for root, path in _placeholders(fspec["transform"], f"fields.{name}.transform"):
            if root in available:
                continue
            why = (f"'{root}' is a named group of the close_pattern, and transformers only makes the open "
                   "pattern's groups transform variables" if root in close_groups else
                   f"there is no variable '{root}'")
            out.append(LintWarning(
                "unknown-transform-variable", path,
                f"The placeholder '{{{root}}}' cannot be filled: {why}. Available: {sorted(available)}. Every "
                f"'{name}' region will fail with KeyError when it closes.",
                f"Use one of {sorted(available)}" + (", or capture the value in the open_pattern instead"
                                                     if root in close_groups else
                                                     ", or add a named group (?P<" + root + ">...) to the "
                                                     "open_pattern") + ".",
            ))
    return out


def _builds_arguments(fspec: dict) -> bool:
    """Whether the field's transform puts its parsed body (``{content}``) under an ``arguments`` key: its values
    become a tool call's arguments (what spec section 7 casts by the tool schema)."""
    return any(root == "content" and path.rsplit(".", 1)[-1] == "arguments"
               for root, path in _placeholders(fspec.get("transform"), "transform"))


def _value_parser_effect(name: str, args: Any) -> str:
    """What value_parser ``name`` does to argument values, in a clause (spec section 5)."""
    if name == "json":
        lenient = isinstance(args, dict) and args.get("allow_non_json") is True
        return ('"12345" becomes 12345, "true" becomes true and "null" becomes null'
                + ("" if lenient else ", and a value that is not JSON text (\"Paris\") fails the region"))
    if name in ("int", "float"):
        return f'"12345" becomes {"12345" if name == "int" else "12345.0"}, and any value that is not a number fails the region'
    if name == "bool":
        return 'every value becomes true or false ("Paris" becomes false)'
    return f"every value is parsed by the {name} content parser into a structure"


def _check_typed_arguments(spec: dict) -> list[LintWarning]:
    out = []
    for name, fspec in spec["fields"].items():
        content, args = fspec.get("content", "text"), fspec.get("content_args")
        vp = args.get("value_parser") if isinstance(args, dict) else None
        if content not in ("xml-inline", "kv-lines") or not isinstance(vp, dict) or not _builds_arguments(fspec):
            continue
        parser = vp.get("name", "text")
        if parser == "text" or parser not in CONTENT_ARGS:  # text keeps strings; an unknown name is an error above
            continue
        out.append(LintWarning(
            "typed-tool-arguments", f"fields.{name}.content_args.value_parser",
            f"value_parser {json.dumps(parser)} types the tool-call arguments of field '{name}' from their text, "
            f"before the tool schema is read: {_value_parser_effect(parser, vp.get('args'))}. The tool schema casts "
            f"string arguments only and never re-casts the others, so a parameter the schema types as string (a zip "
            f"code, a title \"true\") gets a number, a boolean or null.",
            "Remove the value_parser (values stay text) and pass the tool schemas (tools=...): each string argument "
            "is then cast by its parameter's schema (integer, number, boolean, null, object, array), and a "
            "parameter typed string keeps its text."))
    return out


def _turn_ends(delims: list[_Delim], field_name: str) -> set:
    """The close texts of the other fields (a literal close, or the literals a close pattern's matches start
    with): the end-of-turn token such as ``<|eot_id|>``. The model stops there, so meeting one inside a string
    cuts the call whatever this field's close says."""
    ends = set()
    for d in delims:
        if d.kind == "close" and d.field != field_name:
            if d.literal is not None:
                ends.add(d.literal)
            elif d.compiled.prefilter is not None:
                ends.update(d.compiled.prefilter.literals)
    return ends


def _close_in_string(spec: dict, delims: list[_Delim], d: _Delim) -> LintWarning | None:
    """``close-in-json`` for a close that fires on its own text inside a JSON string value. The close's literal
    text is tried (a literal close; for a pattern, the literals every match starts with, `Delimiter.prefilter`),
    placed in a string value after the field's open text; end-of-turn tokens are left out (`_turn_ends`)."""
    prefilter = d.compiled.prefilter
    markers = [d.literal] if d.literal is not None else list(prefilter.literals if prefilter is not None else ())
    ends = _turn_ends(delims, d.field)
    fspec = spec["fields"][d.field]
    open_text = _first_literal(fspec, "open") or ""
    for marker in markers:
        if not marker.strip() or marker in ends:
            continue
        body = '{"name": "write", "arguments": {"text": "see ' + marker + ' here"}}'
        hit = d.find(open_text + body + marker + "\n<more text>")
        if hit is None or hit[0] >= len(open_text) + len(body) or hit[0] == hit[1]:
            continue  # a zero-width hit is a lookahead for a turn end (the close stops before it)
        snippet = body[max(0, hit[0] - len(open_text) - 20): hit[1] - len(open_text) + 10]
        escape = lambda text: regex.escape(text, special_only=True, literal_spaces=True)  # noqa: E731
        balanced = f"(?<={escape(open_text)}{BALANCED_JSON})" if open_text else f"(?<=^\\s*{BALANCED_JSON})"
        close = escape(marker) if d.literal is not None else f"(?:{d.compiled.source})"
        suggestion = f"{balanced}{close}\\s*"
        return LintWarning(
            "close-in-json", d.path,
            f"The close delimiter {d.shown} of the json field '{d.field}' also fires inside a JSON string value "
            f"({json.dumps(snippet, ensure_ascii=False)}): a call whose argument mentions it (code, docs, a quoted "
            f"tag) is cut there and its JSON fails to parse.",
            f"Count the close only where the quotes since the open are balanced, as the library templates do: "
            f"close_pattern {json.dumps(suggestion, ensure_ascii=False)} (in place of "
            f"{'close' if d.literal is not None else 'the close_pattern'}).",
        )
    return None


def _check_close_in_json(spec: dict, delims: list[_Delim]) -> list[LintWarning]:
    out = []
    for d in delims:
        fspec = spec["fields"][d.field]
        if d.kind != "close" or fspec.get("content", "text") != "json":
            continue
        found = len(out)
        for sample in JSON_BODY_SAMPLES:
            # Text follows the body in a real stream, so `$`-style anchors must not count as a hit.
            hit = d.find(sample + "\n<more text>")
            if hit is not None and hit[0] < len(sample):
                snippet = sample[max(0, hit[0] - 20): hit[1] + 10]
                out.append(LintWarning(
                    "close-in-json", d.path,
                    f"The close delimiter {d.shown} of the json field '{d.field}' matches inside ordinary JSON "
                    f"({json.dumps(snippet, ensure_ascii=False)}): the region closes in the middle of the body "
                    f"and the JSON fails to parse.",
                    "Close on a marker that JSON cannot contain (the format's end token), or use a close_pattern "
                    "anchored to what follows the body, e.g. a lookahead for the next block or the turn end.",
                ))
                break
        if len(out) == found:
            in_string = _close_in_string(spec, delims, d)
            if in_string is not None:
                out.append(in_string)
    return out


def _args_nodes(path: str, parser: Any, args: Any):
    """``(path, parser name, args)`` for a content_args object and every nested value_parser's args in it."""
    if not isinstance(args, dict):
        return
    yield path, parser, args
    nested = args.get("value_parser")
    if isinstance(nested, dict) and "value_parser" in CONTENT_ARGS.get(parser, ()):
        yield from _args_nodes(f"{path}.value_parser.args", nested.get("name", "text"), nested.get("args", {}))


def _unknown_keys(args: dict, known, path: str, says, otherwise: str) -> list[LintWarning]:
    """An ``unknown-content-arg`` warning for each key of ``args`` not in ``known``, at ``path.<key>``, with
    ``says(key)`` as its message and the closest known key as the fix (else ``otherwise``)."""
    out = []
    for key in [k for k in args if k not in known]:
        close = difflib.get_close_matches(str(key), known, n=1)
        out.append(LintWarning("unknown-content-arg", f"{path}.{key}", says(key),
                               f"Rename it to {json.dumps(close[0])}." if close else otherwise))
    return out


def _check_content_args(spec: dict) -> list[LintWarning]:
    out = []
    for name, fspec in spec["fields"].items():
        for path, parser, args in _args_nodes(f"fields.{name}.content_args", fspec.get("content", "text"),
                                              fspec.get("content_args")):
            known = CONTENT_ARGS.get(parser)
            if known is None:  # only a nested value_parser can name one (the loader checks a field's content)
                vp_path = path[: -len(".args")]
                out.append(LintWarning(
                    "unknown-content-arg", f"{vp_path}.name",
                    f"value_parser names the content parser {json.dumps(parser)}, which does not exist: every "
                    f"region of field '{name}' with a value fails (KeyError).",
                    f"Use one of {', '.join(CONTENT_ARGS)}.", severity="error"))
                continue
            out += _unknown_keys(args, known, path, lambda key: (
                f"The {parser} content parser does not read {json.dumps(key)} (it reads {', '.join(known)}), so "
                f"this setting of field '{name}' is silently ignored."), "Remove it, or use one of the keys above.")
            nested = args.get("value_parser")
            if isinstance(nested, dict) and "value_parser" in known:
                out += _unknown_keys(nested, VALUE_PARSER_KEYS, f"{path}.value_parser", lambda key: (
                    f"A value_parser has only the keys {', '.join(VALUE_PARSER_KEYS)}; {json.dumps(key)} is ignored "
                    f"in field '{name}'."), "Remove it.")
            if parser == "xml-inline":
                out += _check_tag_pattern(name, path, args)
    return out


def _check_tag_pattern(name: str, path: str, args: dict) -> list[LintWarning]:
    tag = args.get("tag_pattern")
    if tag is None:
        return [LintWarning(
            "invalid-regex", path,
            f"The xml-inline content parser of field '{name}' needs a tag_pattern; without one every region fails "
            f"(ValueError).",
            "Add tag_pattern, a regex with named groups key and value, e.g. "
            + json.dumps(r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>") + ".", severity="error")]
    if not isinstance(tag, str):
        return []  # wrong-type says so
    try:
        compiled = regex.compile(tag, _REGEX_FLAGS)
    except regex.error as exc:
        why, pos = regex_fault(tag, exc)  # where the fault is, not where `regex` gave up (the end)
        pointer = f" ({json.dumps(tag[:pos], ensure_ascii=False)} <- here)" if pos is not None else ""
        return [LintWarning(
            "invalid-regex", f"{path}.tag_pattern",
            f"tag_pattern does not compile: {why}{pointer}. The template loads (transformers does not "
            f"check it either), but every region of field '{name}' fails to parse.",
            "Fix the regex (an unclosed group or bracket, a bad escape); it needs named groups key and value.",
            severity="error")]
    if "key" not in compiled.groupindex:
        return [LintWarning(
            "invalid-regex", f"{path}.tag_pattern",
            f"tag_pattern has no named group 'key', so every region of field '{name}' with a match fails "
            f"(ValueError).",
            "Name the group that captures the parameter name (?P<key>...), and the value (?P<value>...).",
            severity="error")]
    return []


def _matches_empty_inside(pattern) -> bool:
    """True if `pattern` matches the empty string and can do so in the middle of a text.

    Pure anchors such as ``^``/``\\A`` (start of the stream: how ERNIE-style templates open reasoning at the
    very beginning) or ``$``/``\\Z`` (end of the stream) match the empty string only at an edge, which is
    deliberate; ``\\s*``, ``(?:x)?`` or ``(?m)^`` match it between any two characters.
    """
    try:
        if pattern.fullmatch("", timeout=_REGEX_TIMEOUT) is None:
            return False
        for probe, pos in (("ab", 1), ("a\nb", 1), ("a\nb", 2), ("a b", 1), ("a b", 2)):
            m = pattern.match(probe, pos, timeout=_REGEX_TIMEOUT)
            if m is not None and m.end() == pos:
                return True
    except TimeoutError:
        return False
    return False


def _check_empty_match(compiled: CompiledTemplate, delims: list[_Delim]) -> list[LintWarning]:
    spec = compiled.spec
    patterns = [(d.path, d.pattern, d.kind) for d in delims if d.literal is None]
    if compiled.start_anchor.literals is None:
        patterns.append(("start_anchor_pattern", compiled.start_anchor.regex, "anchor"))
    for name, fspec in spec["fields"].items():
        tag = (fspec.get("content_args") or {}).get("tag_pattern")
        if isinstance(tag, str):
            try:
                patterns.append((f"fields.{name}.content_args.tag_pattern", regex.compile(tag, _REGEX_FLAGS), "tag"))
            except regex.error:
                pass
    effect = {
        "open": "the region opens at every position, so no text ever reaches the other fields",
        "close": "the region can close at once, before its body (an empty value)",
        "anchor": "the anchor matches at the very end of every prefix, so the prompt's prefilled part "
                  "(e.g. an opening <think>) is cut away",
        "tag": "it yields entries with an empty key or value between real tags",
    }
    out = []
    for path, pattern, kind in patterns:
        if _matches_empty_inside(pattern):
            out.append(LintWarning(
                "empty-match", path,
                f"The pattern {json.dumps(pattern.pattern, ensure_ascii=False)} can match the empty string: "
                f"{effect[kind]}.",
                "Require at least one character: replace `*` by `+` or `?` by a required part, or anchor the "
                "pattern on a real marker.",
            ))
    return out


_SEARCH_START = regex.compile(r"(?<!\\)(?:\\\\)*\\G")  # \G not preceded by an escaping backslash


def _check_search_start(spec: dict, delims: list[_Delim]) -> list[LintWarning]:
    out = []
    for d in delims:
        if d.literal is None and _SEARCH_START.search(d.compiled.source):
            out.append(LintWarning(
                "search-start-anchor", d.path,
                f"The pattern {d.shown} uses \\G, which anchors at the position where a search starts. "
                f"transformers restarts its search at every chunk boundary, so a streamed parse can match where the "
                f"one-shot parse does not: results change with chunking.",
                "Anchor on text instead: match the previous delimiter or the start of the stream (^), or drop \\G.",
            ))
    return out


def _tail_spans(items) -> bool:
    """True if the trailing items of a parsed pattern (`re._parser` nodes, last item last) can grow a match by
    several characters at once: an optional or repeated part whose one pass reads two or more characters, reached
    from the end through parts that may match nothing. A one-character repeat (``\\s*``) cannot: the next
    character is either taken or not, so a match that stops before the edge is final."""
    for op, av in reversed(list(items)):
        name = str(op)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue  # zero width: never part of what a longer match adds
        if name in ("MAX_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, body = av
            if lo < hi and body.getwidth()[1] >= 2:
                return True
            if _tail_spans(body.data) and hi != 0:
                return True
            if lo > 0 and body.getwidth()[0] > 0:
                return False
            continue
        if name == "MIN_REPEAT":  # lazy: the match takes its minimum, in one shot as in a stream
            lo, _hi, body = av
            if lo > 0 and body.getwidth()[0] > 0:
                return False
            continue
        if name == "SUBPATTERN":
            body = av[-1]
            if _tail_spans(body.data):
                return True
            if body.getwidth()[0] > 0:
                return False
            continue
        if name == "BRANCH":
            branches = av[1]
            if any(_tail_spans(b.data) for b in branches):
                return True
            if min(b.getwidth()[0] for b in branches) > 0:
                return False
            continue
        return False  # a character (class) or anything else that reads text: the match ends here
    return False


def _check_optional_tail(delims: list[_Delim]) -> list[LintWarning]:
    out = []
    for d in delims:
        if d.literal is not None:
            continue
        try:
            tree = _re_parser.parse(d.compiled.source)
        except Exception:  # regex-module-only syntax: not analysed
            continue
        if not _tail_spans(tree.data):
            continue
        out.append(LintWarning(
            "optional-tail", d.path,
            f"The {d.kind} pattern {d.shown} ends in an optional or repeated part that spans several characters. "
            f"transformers' streaming parser commits a match that stops before the end of the text received, so "
            f"when a chunk boundary falls inside that part (a tokenizer that splits the marker, or one-character "
            f"chunks) it takes the shorter match and the rest of the tail goes to the next region (e.g. into "
            f"content). Its one-shot parse and our engine are not affected.",
            f"Give the tail its own field (a field whose empty value is dropped) or make it required, so that "
            f"every match of the {d.kind} ends where the {d.kind} ends.",
        ))
    return out


def _check_anchor(compiled: CompiledTemplate, prompt: str, suffix_start: int) -> list[LintWarning]:
    pattern = compiled.start_anchor.regex  # literals: the escaped alternation, longest first, as the parser uses
    path = "start_anchor" if compiled.start_anchor.literals is not None else "start_anchor_pattern"
    last = None
    pos = 0
    while True:
        m = _search(pattern, prompt, pos)
        if m is None:
            break
        last = m
        pos = m.end() if m.end() > m.start() else m.end() + 1
        if pos > len(prompt):
            break
    generation = prompt[suffix_start:]
    if last is not None and last.end() > suffix_start:
        return []
    where = ("does not occur in the rendered prompt at all" if last is None
             else "only matches earlier turns, not the generation prompt")
    return [LintWarning(
        "anchor-not-in-generation-prompt", path,
        f"The start anchor {where}: the generation prompt is {json.dumps(generation, ensure_ascii=False)}. "
        f"The parser will then read " + ("the whole prefix" if last is None else "an earlier turn") +
        " as part of the new message.",
        _anchor_fix(compiled, path, generation),
    )]


def _anchor_fix(compiled: CompiledTemplate, path: str, generation: str) -> str:
    """The suggested start anchor: the generation prompt, less an opening tag it prefills (e.g. Qwen3's
    ``<think>\n``), which must stay in the parsed part so that its region opens."""
    cut = _prefilled_open_start(compiled, generation)
    shown = json.dumps(generation[:cut], ensure_ascii=False)
    if cut == len(generation):
        return f"Set {path} to what the generation prompt ends with, e.g. {shown}."
    tag = json.dumps(generation[cut:], ensure_ascii=False)
    return (f"Set {path} to what the generation prompt ends with, before the opening tag it prefills, e.g. {shown} "
            f"(the prefilled {tag} must stay in the parsed part so that its region opens).")


def _prefilled_open_start(compiled: CompiledTemplate, generation: str) -> int:
    """Where the shortest tail of the generation prompt (at most 200 characters) that an open delimiter matches
    from its start, leaving only blanks, begins (as the open would see it right after the anchor); else
    ``len(generation)``."""
    opens = [fld.open for fld in compiled.fields.values() if fld.open is not None]
    for start in range(len(generation) - 1, max(-1, len(generation) - 201), -1):
        tail = generation[start:]
        if not tail.strip():
            continue
        for delim in opens:
            try:
                m = delim.regex.match(tail, timeout=0.05)
            except TimeoutError:  # a runaway user pattern: no suggestion from it
                m = None
            if m is not None and m.end() > 0 and not tail[m.end():].strip():
                return start
    return len(generation)


# --------------------------------------------------------------------------- public API


def start_anchor_warnings(template: Any, tokenizer: Any) -> list[LintWarning]:
    """Lint's start-anchor check alone (``anchor-not-in-generation-prompt``): whether the template's start anchor
    occurs in the generation prompt `tokenizer`'s chat template renders (`generation_prompt`). Cheap: one
    rendering and one search, for callers such as the playground's export that need only this.

    Returns an empty list when the anchor is there, or when the chat template cannot render (nothing to check;
    `lint` reports that case as an ``info``). Raises `parsing.TemplateError` for a template that does not load.
    """
    compiled = load_template(template)
    try:
        prompt, start = generation_prompt(tokenizer)
    except Exception:  # noqa: BLE001 - a chat template can raise anything; no prompt, nothing to check
        return []
    return _check_anchor(compiled, prompt, start)


def lint(template: Any, *, tokenizer: Any = None, generation_prompt_text: tuple[str, int] | str | None = None,
         reference: bool | None = None) -> LintReport:
    """Find problems in a template that loads but will hurt real outputs.

    Args:
        template: anything `parsing.load_template` takes (a dict, JSON text, a path, a compiled template).
        tokenizer: optional; with a chat template, the start anchor is checked against the generation prompt
            it renders (see `generation_prompt`). A tokenizer whose chat template cannot render a one-message
            conversation gives an ``info`` warning instead.
        generation_prompt_text: alternatively the rendered prompt itself, either ``(prompt, start)`` as
            `generation_prompt` returns or a bare string that is all generation prompt (``start = 0``).
        reference: passed to `parsing.doctor.compat.compatibility`.

    Returns:
        a `LintReport`: the warnings (severity ``error``, then ``warning``, then ``info``; within each, check order:
        wrong JSON types, reasoning name, overwrite, delimiter prefixes, missing close, transform variables,
        content_args (regexes, key names), typed tool-call arguments, close in JSON, empty matches, \\G, optional tails,
        start anchor) and the compatibility
        section.

    Raises:
        parsing.TemplateError: the template does not load (a ``ValueError``); lint needs a valid template.
        OSError: a path that cannot be read.
    """
    compiled = load_template(template)
    spec = compiled.spec
    delims = _delimiters(compiled)
    warnings: list[LintWarning] = []
    warnings += _check_types(spec)
    warnings += _check_role(spec)
    warnings += _check_reasoning_name(spec)
    warnings += _check_overwrite(spec)
    warnings += _check_delimiter_prefix(spec, delims)
    warnings += _check_missing_close(spec)
    warnings += _check_transform_variables(compiled)
    warnings += _check_content_args(spec)
    warnings += _check_typed_arguments(spec)
    warnings += _check_close_in_json(spec, delims)
    warnings += _check_empty_match(compiled, delims)
    warnings += _check_search_start(spec, delims)
    warnings += _check_optional_tail(delims)
    gp = generation_prompt_text
    if gp is None and tokenizer is not None:
        try:
            gp = generation_prompt(tokenizer)
        except Exception as exc:  # a chat template can raise anything (jinja2, ValueError, TypeError)
            warnings.append(LintWarning(
                "anchor-not-in-generation-prompt", "start_anchor" if "start_anchor" in spec else
                "start_anchor_pattern",
                f"Could not render a generation prompt with the tokenizer's chat template "
                f"({type(exc).__name__}: {exc}), so the start anchor was not checked.",
                "Load a tokenizer with a chat template to check the anchor.", severity="info"))
    if tokenizer is not None:
        warnings += _check_reasoning_read(spec, _chat_template_text(tokenizer))
    if isinstance(gp, str):
        gp = (gp, 0)
    if gp is not None:
        warnings += _check_anchor(compiled, gp[0], gp[1])
    warnings.sort(key=lambda w: SEVERITIES.index(w.severity))  # stable: check order within each severity
    return LintReport(warnings, compatibility(compiled, reference=reference))
