"""How a response template reads as a format: what a model writes where (for the probe suite).

`_Shape` reads a template the way `parsing.doctor.probe` needs it: which field holds the reasoning, the
answer and the tool calls (by the names chat templates read), what each delimiter looks like as text (literals
as written, patterns through `parsing.doctor.samples`), the end-of-turn token (the implicit field's close, or a
close several fields share), tool-section wrappers (implicit closes named like tool tokens), and how to write
a tool call (by inverting the field's ``transform`` and serialising the arguments for its content parser). The
prompt-state helpers read what a prompt prefix leaves the parser in: a fresh turn, inside the reasoning, or
thinking switched off. Internal to the probe suite.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import regex

from .samples import SampleError, pattern_samples

REASONING_NAMES = ("reasoning_content", "reasoning", "thinking", "thought")
_TOOL_WORDS = regex.compile(r"tool|function|action|call", regex.I)
_END_WORDS = regex.compile(r"end|^</|/>$|\|/", regex.I)
_REPLY_WORDS = regex.compile(r"response|result|output|observation", regex.I)
_ANSWER_WORDS = regex.compile(r"answer|response", regex.I)


# ---------------------------------------------------------------------------------------------
# Reading the template: what a model writes where


def _esc(text: str) -> str:
    return regex.escape(text, special_only=True, literal_spaces=True)


@dataclass
class _Delim:
    """A delimiter as text: ``texts`` (what a model writes, the main one first), ``triggers`` (what its
    zero-width alternatives wait for), ``source`` (the delimiter as a regex), ``literal``."""

    texts: list
    triggers: list
    source: str
    literal: bool
    groups: dict = field(default_factory=dict)
    separators: list = field(default_factory=list)

    @property
    def text(self) -> str | None:
        return self.texts[0] if self.texts else None


def _delim(fspec: dict, kind: str, values: dict | None = None) -> _Delim | None:
    if kind in fspec:
        raw = fspec[kind]
        lits = [raw] if isinstance(raw, str) else list(raw)
        return _Delim(lits, [], "|".join(_esc(s) for s in sorted(lits, key=len, reverse=True)), True)
    key = kind + "_pattern"
    if key in fspec:
        samples = pattern_samples(fspec[key], values)
        texts = [s.text for s in samples if s.text and not s.separator]
        separators = [s.text for s in samples if s.separator]
        groups = next((s.groups for s in samples if s.text), samples[0].groups)
        return _Delim(texts or separators, [s.trigger for s in samples if not s.text and s.trigger], fspec[key],
                      False, groups, separators if texts else [])
    return None


class _Unprobeable(Exception):
    """The template gives the probe nothing to write a tool call from; the message says why."""


@dataclass
class _CallFormat:
    """How to write tool calls for the template's tool-call field."""

    name: str
    fspec: dict
    listed: bool  # transform_each: one region holds a JSON list of calls
    plan: list  # (output path, variable root, variable path)
    close: _Delim | None

    def open_text(self, call_name: str, index: int) -> tuple[str, dict]:
        values = {}
        for out_path, root, path in self.plan:
            if root != "content" and not self.listed and not path:
                if out_path == ("function", "name"):
                    values[root] = call_name
        d = _delim(self.fspec, "open", values)
        if d is None or d.text is None:
            return "", (d.groups if d else {})
        return d.text, d.groups

    def call_value(self, call_name: str, args: dict, index: int, groups: dict) -> tuple[Any, dict]:
        """(the body value for one call, the tool call the template should produce)."""
        expected = {"type": "function", "function": {"name": call_name, "arguments": args}}
        body: dict = {}
        body_root: Any = None
        for out_path, root, path in self.plan:
            if out_path == ("function", "name"):
                value: Any = call_name
            elif out_path == ("function", "arguments"):
                value = args
            elif out_path == ("function",):
                value = {"name": call_name, "arguments": args}
            elif out_path == ():
                value = {"type": "function", "function": {"name": call_name, "arguments": args}}
            elif out_path == ("id",):
                if root in groups and not self.listed:
                    value = groups[root]
                else:
                    value = f"call_{index}"
                expected["id"] = value
                if root in groups and not self.listed:
                    continue
            else:
                raise _Unprobeable(f"the transform puts a variable at {'.'.join(out_path)}, "
                                   "which is not part of a standard tool call")
            if root == "content" or self.listed:
                keys = list(path) if root == "content" else [root, *path]
                if not keys:
                    body_root = value
                    continue
                node = body
                for k in keys[:-1]:
                    node = node.setdefault(k, {})
                node[keys[-1]] = value
            elif out_path == ("function", "name") and not path:
                continue  # written into the open delimiter
            else:
                raise _Unprobeable(f"the transform takes {out_path[-1] if out_path else 'the call'} from "
                                   f"the group {root!r}, which the probe cannot fill")
        if body_root is not None:
            if body:
                raise _Unprobeable("the transform mixes the whole body with keys of it")
            return body_root, expected
        return body, expected


def _transform_plan(transform: Any, each: bool) -> list:
    plan: list = []

    def walk(node: Any, out_path: tuple) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, out_path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, out_path + (i,))
        elif isinstance(node, str):
            m = regex.fullmatch(r"\{([A-Za-z_][\w]*)((?:\.[\w-]+)*)\}", node)
            if m:
                path = tuple(p for p in m.group(2).split(".") if p)
                plan.append((out_path, m.group(1), path))

    walk(transform, ())
    if isinstance(transform, str) and not plan:
        raise _Unprobeable("the tool-call transform is a constant string")
    return plan


class _Shape:
    """The template read as a format: which field is which, what each delimiter looks like."""

    def __init__(self, spec: dict, tools: list):
        self.spec = spec
        fields = spec["fields"]
        self.fields = fields
        self.implicit = next((n for n, f in fields.items() if "open" not in f and "open_pattern" not in f), None)
        self.reasoning = next((n for n in REASONING_NAMES if n in fields and n != self.implicit), None)
        self.content = "content" if "content" in fields else self.implicit
        self.tools = "tool_calls" if "tool_calls" in fields and "tool_calls" != self.implicit else None
        self.notes: list[str] = []
        self.tool_specs = tools
        self.tool_names = [t.get("function", t).get("name") for t in tools if isinstance(t, dict)]

        # reasoning delimiters
        self.r_open = self.r_close = None
        self.reasoning_at_start = False
        if self.reasoning:
            f = fields[self.reasoning]
            self.r_open = _delim(f, "open")
            self.r_close = _delim(f, "close")
            if self.r_open is not None and _opens_at_start(f):
                self.reasoning_at_start = True
                self.notes.append(f"{self.reasoning} opens without text at the start of the turn: outputs are "
                                  "written as from a model that always reasons and writes no opener")
        # content, end of turn, tool sections
        self.c_open = self.c_close = None
        self.eot = None
        self.section = (None, None)
        self.answer_wrap = (None, None)
        if self.content is not None and self.content != self.implicit:
            self.c_open = _delim(fields[self.content], "open")
            self.c_close = _delim(fields[self.content], "close")
        self.implicit_closes: list = []
        if self.implicit is not None:
            close = _delim(fields[self.implicit], "close")
            texts = close.texts if close else []
            self.implicit_closes = list(texts)
            r_close_texts = set(self.r_close.texts) if self.r_close else set()
            plain, tool_like, answer_like = [], [], []
            for t in texts:
                if t in r_close_texts:
                    continue
                if _TOOL_WORDS.search(t) and not _REPLY_WORDS.search(t):
                    tool_like.append(t)
                elif _ANSWER_WORDS.search(t) and not _TOOL_WORDS.search(t):
                    answer_like.append(t)
                elif not _TOOL_WORDS.search(t) or not _REPLY_WORDS.search(t):
                    plain.append(t)
            others = [t for t in texts if t not in tool_like and t not in answer_like and t not in r_close_texts]
            self.eot = plain[0] if plain else (others[0] if others else None)
            opens = [t for t in tool_like if not _END_WORDS.search(t)]
            closes = [t for t in tool_like if _END_WORDS.search(t)]
            if opens:
                self.section = (opens[0], closes[0] if closes else None)
            a_opens = [t for t in answer_like if not t.startswith("</")]
            a_closes = [t for t in answer_like if t.startswith("</")]
            if a_opens and a_closes:
                self.answer_wrap = (a_opens[0], a_closes[0])
        # A text that closes two or more fields (or the implicit one) ends the turn: `<|eot_id|>` closing both
        # content and calls, `(?=<|END_OF_TURN_TOKEN|>)` on every region of Command R7B.
        seen: dict = {}
        written: set = set()
        for fspec in fields.values():
            d = _delim(fspec, "close")
            for t in set((d.texts + d.triggers) if d else []):
                seen[t] = seen.get(t, 0) + 1
            written |= set(d.texts if d else [])
        self.turn_ends = set(self.implicit_closes) - {self.section[0], self.section[1]}
        self.turn_ends |= {t for t, n in seen.items() if n >= 2}
        if self.eot is None:
            shared = sorted((t for t, n in seen.items() if n >= 2 and t.strip()), key=lambda t: t not in written)
            self.eot = shared[0] if shared else None
        if self.eot:
            self.notes.append(f"end of turn: {self.eot!r}")
        if self.section[0]:
            self.notes.append(f"tool section: {self.section[0]!r} ... {self.section[1]!r}")
        # tool calls
        self.calls: _CallFormat | None = None
        self.calls_why = "the template has no tool_calls field"
        if self.tools:
            try:
                self.calls = self._call_format(fields[self.tools])
            except (_Unprobeable, SampleError) as exc:
                self.calls_why = f"cannot write a tool call for this template: {exc}"
                self.calls = None

    def _call_format(self, f: dict) -> _CallFormat:
        if "transform" not in f:
            raise _Unprobeable("the tool_calls field has no transform, so its values are not tool calls")
        each = bool(f.get("transform_each"))
        plan = _transform_plan(f["transform"], each)
        content = f.get("content", "text")
        if content not in ("json", "xml-inline", "kv-lines"):
            raise _Unprobeable(f"tool calls parsed as {content!r} text carry no arguments object")
        if content != "json" and each:
            raise _Unprobeable("transform_each needs a JSON list body")
        close = _delim(f, "close")
        fmt = _CallFormat(self.tools, f, each, plan, close)
        return fmt

    # -- writing text ------------------------------------------------------------------------

    @property
    def content_kind(self) -> str:
        return self.fields[self.tools].get("content", "text") if self.tools else ""

    def body_text(self, value: Any) -> str:
        f = self.fields[self.tools]
        args = f.get("content_args") or {}
        kind = f.get("content", "text")
        if kind == "json":
            return _json_text(value, args)
        if not isinstance(value, dict):
            raise _Unprobeable(f"a {kind} body must hold the arguments object")
        if kind == "xml-inline":
            parts = []
            for k, v in value.items():
                samples = pattern_samples(args["tag_pattern"], {"key": k, "value": v})
                parts.append(samples[0].text)
            return "\n" + "\n".join(parts) + ("\n" if parts else "")
        sep = args.get("kv_sep", ":")
        line_sep = args.get("line_sep", "\n")
        return "\n" + line_sep.join(f"{k}{sep} {v}" for k, v in value.items()) + "\n"

    def call_text(self, calls: list, sep: str = "\n", close: bool = True) -> tuple[str, list]:
        """Text of tool calls (``[(name, args), ...]``) and the tool calls they mean."""
        fmt = self.calls
        if fmt is None:
            raise _Unprobeable(self.calls_why)
        close_text = fmt.close.text if (fmt.close and fmt.close.text and close) else ""
        if fmt.listed:
            open_text, groups = fmt.open_text(calls[0][0], 0)
            values, expected = [], []
            for i, (name, args) in enumerate(calls):
                value, exp = fmt.call_value(name, args, i, groups)
                values.append(value)
                expected.append(exp)
            return open_text + self.body_text(values) + close_text, expected
        pieces, expected = [], []
        separator = fmt.close.separators[0] if fmt.close and fmt.close.separators else None
        open_delim = _delim(fmt.fspec, "open")
        bare_next = bool(separator and open_delim and open_delim.triggers)
        for i, (name, args) in enumerate(calls):
            open_text, groups = fmt.open_text(name, i)
            if i and bare_next:
                open_text = ""  # after a separator the next call starts bare (Llama 3: `{...}; {...}`)
            value, exp = fmt.call_value(name, args, i, groups)
            body = self.body_text(value)
            if self.content_kind == "json" and open_text.endswith(">") and close_text.startswith("<"):
                body = f"\n{body}\n"  # tag-style markers: the JSON sits on its own line (Hermes, Qwen)
            last = i == len(calls) - 1
            # A call that ends where the next begins (Magistral's `(?=\[TOOL_CALLS\])`) carries the turn's end
            # token only after the last call.
            ends_turn = close_text in self.turn_ends and bool(fmt.close and fmt.close.triggers)
            end = close_text if last or (separator is None and not ends_turn) else ""
            pieces.append(open_text + body + end)
            expected.append(exp)
        if separator is not None:
            return (separator + " ").join(pieces), expected
        return sep.join(pieces), expected

    def end_after(self, text: str, blank: str = "") -> str:
        """``text`` then the end of turn, unless the text already ends with a token that ends the turn (a call
        closed by ``<|eom_id|>``): the model stops there."""
        if any(text.endswith(t) for t in self.turn_ends):
            return text
        return text + blank + self.end

    def tool_section(self, calls_text: str, close: bool = True) -> str:
        begin, end = self.section
        if not begin:
            return calls_text
        return begin + calls_text + (end if close and end else "")

    def answer(self, text: str) -> str:
        if self.content != self.implicit and self.c_open is not None and self.c_open.text:
            close = self.c_close.text if self.c_close and self.c_close.text else ""
            return self.c_open.text + text + close
        begin, end = self.answer_wrap
        if begin:
            return f"{begin}\n{text}\n{end}"
        return text

    def reasoning_block(self, text: str, opened: bool) -> str:
        """Reasoning text with its delimiters; ``opened``: the prompt already opened the region."""
        start = "" if (opened or self.reasoning_at_start) else self.r_open.text + "\n"
        close = self.r_close.text if self.r_close and self.r_close.text else ""
        return f"{start}{text}\n{close}\n\n"

    @property
    def calls_end_turn(self) -> bool:
        """True when a call ends only where the turn ends (closed by the end token or by the next call): nothing
        can follow the calls."""
        close = self.calls.close if self.calls else None
        if close is None:
            return True
        texts = [t for t in close.texts if t.strip()]
        return not texts or all(t in self.turn_ends for t in texts)

    @property
    def end(self) -> str:
        return self.eot or ""


def _opens_at_start(fspec: dict) -> bool:
    """True when the field's open matches with no text at the start of any turn (the model always reasons)."""
    source = fspec.get("open_pattern")
    if source is None:
        return False
    try:
        m = regex.compile(source, regex.DOTALL).match("It is sunny.", timeout=1.0)
    except (regex.error, TimeoutError):
        return False
    return m is not None and m.end() == 0


def _json_text(value: Any, args: dict) -> str:
    unquoted = bool(args.get("unquoted_keys"))
    delims = args.get("string_delims") or []
    if not unquoted and not delims:
        return json.dumps(value, ensure_ascii=False)

    def enc(v: Any) -> str:
        if isinstance(v, dict):
            keys = [(k if unquoted and regex.fullmatch(r"[A-Za-z_]\w*", k) else json.dumps(k)) for k in v]
            return "{" + ",".join(f"{k}:{enc(x)}" for k, x in zip(keys, v.values())) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        if isinstance(v, str) and delims:
            return delims[0][0] + v + delims[0][1]
        return json.dumps(v, ensure_ascii=False)

    return enc(value)


# ---------------------------------------------------------------------------------------------
# Prompt state


@dataclass
class _Prompt:
    name: str
    text: str
    state: str  # "answer": the model starts fresh; "reasoning": inside the reasoning; "thinking_off"
    synthetic: bool = False
    started: str = ""  # the start of a marker the prompt already wrote (Functionary's `>>>`)
    carry: str = ""  # reasoning text the prompt already wrote after the opener (Seed-OSS's budget tag)


def _anchor_tail(spec: dict, prefix: str) -> str | None:
    if "start_anchor" in spec:
        anchors = spec["start_anchor"]
        anchors = [anchors] if isinstance(anchors, str) else anchors
        source = "|".join(_esc(a) for a in sorted(anchors, key=len, reverse=True))
    else:
        source = spec["start_anchor_pattern"]
    last = None
    for m in regex.finditer(source, prefix, regex.DOTALL):
        last = m
    return None if last is None else prefix[last.end():]


def _prompt_state(shape: _Shape, tail: str) -> str | None:
    bare = tail.strip()
    if not bare:
        return "reasoning" if shape.reasoning_at_start else "answer"
    if shape.reasoning and shape.r_open is not None:
        opens = [t.strip() for t in shape.r_open.texts if t.strip()]
        closes = [t.strip() for t in (shape.r_close.texts if shape.r_close else []) if t.strip()]
        if any(bare.startswith(o) for o in opens) and not any(c in bare for c in closes):
            return "reasoning"  # the prompt opened the reasoning (and maybe began it: Seed-OSS's budget tag)
        for c in closes:
            if bare == c or any(regex.fullmatch(_esc(o) + r"\s*" + _esc(c), bare) for o in opens):
                return "thinking_off"
    return None


def _prompts(shape: _Shape, spec: dict, prefixes: dict | None) -> tuple[list, list]:
    prompts, skipped = [], []
    if prefixes:
        for name, text in prefixes.items():
            tail = _anchor_tail(spec, text)
            if tail is None:
                skipped.append(f"prefix {name!r}: the start anchor does not occur in it")
                continue
            state = _prompt_state(shape, tail)
            started = ""
            if state is None and tail.strip() and any(t.startswith(tail) and t != tail for t in _open_texts(shape)):
                state, started = "answer", tail  # the model goes on writing a marker the prompt began
            if state is None:
                skipped.append(f"prefix {name!r}: it ends with {tail!r} after the start anchor, which the probe "
                               "cannot read as a reasoning state")
                continue
            carry = _after_opener(shape, tail) if state == "reasoning" else ""
            prompts.append(_Prompt(name, text, state, started=started, carry=carry))
        if any(p.state != "thinking_off" for p in prompts):
            return prompts, skipped
        skipped.append("no given prefix leaves a fresh turn: probes also run after prompts written from the anchor")
    anchor = _anchor_text(spec)
    prompts.append(_Prompt("(probe) fresh turn", anchor, "reasoning" if shape.reasoning_at_start else "answer", True))
    if shape.reasoning and shape.r_open is not None and shape.r_open.text and shape.r_close and shape.r_close.text:
        prompts.append(_Prompt("(probe) prefilled reasoning", anchor + shape.r_open.text + "\n", "reasoning", True))
        prompts.append(_Prompt("(probe) thinking off", anchor + shape.r_open.text + "\n\n" + shape.r_close.text
                               + "\n\n", "thinking_off", True))
    return prompts, skipped


def _after_opener(shape: _Shape, tail: str) -> str:
    bare = tail.lstrip()
    for o in (t.strip() for t in (shape.r_open.texts if shape.r_open else []) if t.strip()):
        if bare.startswith(o):
            return bare[len(o):].lstrip()
    return ""


def _open_texts(shape: _Shape) -> list:
    out = []
    for fspec in shape.fields.values():
        try:
            d = _delim(fspec, "open", {"name": "get_weather"})
        except SampleError:
            d = None
        out.extend(d.texts if d else [])
    return out


def _anchor_text(spec: dict) -> str:
    if "start_anchor" in spec:
        anchors = spec["start_anchor"]
        return anchors if isinstance(anchors, str) else anchors[0]
    try:
        samples = pattern_samples(spec["start_anchor_pattern"])
        return next((s.text for s in samples if s.text), "")
    except SampleError:
        return ""
