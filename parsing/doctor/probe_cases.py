"""The probes: model outputs written for each failure class, with the messages they mean.

`build_cases(shape, prompts)` writes, from a template read by `parsing.doctor.probe_formats`, one
`ProbeCase` per probe: the output, the prompt it follows, the expected message (known from how the output
was built), other outcomes that are as good, the known limit of the language where one applies, and a concrete
template change (`apply_fix` applies it). Internal to `parsing.doctor.probe`, which runs the cases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import regex

from .probe_formats import (_Prompt, _Shape, _Unprobeable, _delim, _esc)
from .samples import SampleError, pattern_samples

CLASSES = {
    "a": "generation stops inside a region",
    "b": "delimiter text inside a value",
    "c": "an open marker as ordinary text",
    "d": "whitespace and text around tool calls",
    "e": "repeated blocks",
    "f": "prompt-side state",
    "g": "markers split across stream chunks",
    "h": "drift real models emit",
    "i": "false positives",
}

ERROR = "error"  # an expected outcome: parsing raises (a cut call must not come out as a call)
NO_CALL = "no tool call"  # an accepted outcome: an error, or a message without tool calls and the same reasoning

# Default tools the probes call (JSON schemas in the apply_chat_template format).
DEFAULT_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time in a time zone.",
                                      "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                                     "required": ["tz"]}}},
    {"type": "function", "function": {"name": "save_note", "description": "Save a note.",
                                      "parameters": {"type": "object",
                                                     "properties": {"title": {"type": "string"},
                                                                    "text": {"type": "string"}},
                                                     "required": ["title", "text"]}}},
]


@dataclass
class ProbeCase:
    """One probe: a model output built for one failure class.

    Attributes:
        id: ``"<class>.<name>"``, plus ``[prefix]`` for the prompt-state probes (``"f.answer[thinking_off]"``).
        cls: the class letter (`CLASSES`).
        title: what the output does, in words.
        prefix_name: which prompt prefix it follows (``"(none)"`` for ``prefix=""``).
        prefix: the prompt text.
        output: the raw generation.
        expected: the message the output means (``"error"`` where the right outcome is a raised error).
        accept: further outcomes that are as good (a cut call may raise or come out as no call at all).
        no_blank_content: also fail if the event stream opens a content region that holds only whitespace.
        every_cut: parse under every two-piece cut of the output besides the usual chunkings.
        keep: for an ``accept`` of ``"no tool call"``: keys the message must still carry with these values.
        limit: why the template language cannot pass this probe for this template, when it fails.
        suggestion: a concrete change to the template, when it fails.
        fix: the same change as ``[(json path tuple, new value), ...]`` when it can be applied mechanically
            (`apply_fix`); empty otherwise.
    """

    id: str
    cls: str
    title: str
    prefix_name: str
    prefix: str
    output: str
    expected: Any
    accept: tuple = ()
    no_blank_content: bool = False
    every_cut: bool = False
    keep: dict = field(default_factory=dict)
    limit: str | None = None
    suggestion: str = ""
    fix: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "class": self.cls, "title": self.title, "prefix": self.prefix_name,
                "output": self.output, "expected": self.expected, "accept": list(self.accept)}


# ---------------------------------------------------------------------------------------------
# Building the probes


_REASON = "The user wants the weather, so I call the tool."
_REASON2 = "The tool is slow; I answer from memory instead."
_ANSWER = "It is sunny in Paris."
_ANSWER2 = "Expect 21 degrees."
_BEFORE = "Let me check the weather."
_AFTER = "I asked the weather service."
_SEPS = ("", "\n", " ", "\n\n")


def _msg(**parts: Any) -> dict:
    out = {"role": "assistant"}
    for key, value in parts.items():
        if value not in (None, "", [], {}):
            out[key] = value
    return out


class _Builder:
    def __init__(self, shape: _Shape, prompts: list):
        self.s = shape
        self.prompts = prompts
        self.cases: list[ProbeCase] = []
        self.na: dict[str, str] = {}
        fresh = [p for p in prompts if p.state in ("answer", "reasoning")]
        tool_first = sorted(fresh, key=lambda p: (0 if "tool" in p.name else 1))
        self.main = tool_first[0] if tool_first else None
        self.fresh_answer = next((p for p in prompts if p.state == "answer"), None)
        self.in_reasoning = next((p for p in prompts if p.state == "reasoning"), None)

    # helpers -------------------------------------------------------------------------------

    def msg(self, reasoning=None, content=None, calls=None) -> dict:
        s = self.s
        parts = {}
        if reasoning and s.reasoning:
            parts[s.reasoning] = reasoning
        if content and s.content:
            parts[s.content] = content
        if calls and s.tools:
            parts[s.tools] = calls
        return _msg(**parts)

    def add(self, cid: str, title: str, prompt: _Prompt, output: str, expected: Any, **kw: Any) -> None:
        if prompt.started:
            if not output.startswith(prompt.started):
                return  # this output cannot follow a prompt that began a marker
            output = output[len(prompt.started):]
        suggestion = kw.pop("suggestion", "")
        if isinstance(suggestion, _Fix):
            kw["fix"] = suggestion.changes
            suggestion = suggestion.text
        kw["suggestion"] = suggestion
        self.cases.append(ProbeCase(id=cid, cls=cid[0], title=title, prefix_name=prompt.name, prefix=prompt.text,
                                    output=output, expected=expected, **kw))

    def lead(self, prompt: _Prompt, reasoning: str | None = _REASON) -> tuple[str, str | None]:
        """The reasoning part of a turn for this prompt state: (text, reasoning value)."""
        s = self.s
        if not s.reasoning or prompt.state == "thinking_off":
            return "", None
        if prompt.state == "reasoning":
            value = (prompt.carry + (reasoning or "")).strip()
            return s.reasoning_block(reasoning or "", opened=True), value or None
        if reasoning is None or s.r_open is None or not s.r_open.text:
            return "", None
        return s.reasoning_block(reasoning, opened=False), reasoning

    @staticmethod
    def carried(prompt: _Prompt, text: str) -> str:
        """The reasoning value for ``text`` written after this prompt (what the prompt already wrote comes first)."""
        return (prompt.carry + text).strip() if prompt.state == "reasoning" else text

    def calls(self, spec: list, **kw: Any) -> tuple[str, list]:
        return self.s.call_text(spec, **kw)

    # classes -------------------------------------------------------------------------------

    def build(self) -> None:
        for step in (self.a, self.b, self.c, self.d, self.e, self.f, self.g, self.h, self.i):
            try:
                step()
            except (_Unprobeable, SampleError) as exc:  # a class the probe cannot write for this template
                self.na.setdefault(step.__name__, str(exc))

    def a(self) -> None:
        s, eot = self.s, self.s.end
        if s.reasoning and s.r_close is not None:
            p = self.in_reasoning or self.fresh_answer
            if p is not None and (p.state == "reasoning" or (s.r_open and s.r_open.text)):
                start = "" if p.state == "reasoning" else s.r_open.text + "\n"
                text = "17 is prime: nothing from 2 to 4 divides"
                self.add("a.reasoning_cut", "the model stops mid-thought (token limit)", p, start + text,
                         self.msg(reasoning=self.carried(p, text)))
                if s.eot:
                    done = "17 is prime: nothing from 2 to 4 divides it."
                    self.add("a.reasoning_cut_by_end_of_turn", "the end-of-turn token comes before the reasoning "
                             "close", p, start + done + eot, self.msg(reasoning=self.carried(p, done)),
                             suggestion=_sugg_lookahead_close(s, s.reasoning, s.eot))
            if self.fresh_answer is not None and s.r_open and s.r_open.text:
                self.add("a.after_reasoning_open", "the model stops right after the reasoning opener",
                         self.fresh_answer, s.r_open.text + "\n", self.msg())
        if self.main is not None:
            lead, reasoning = self.lead(self.main)
            text = "The capital of France is"
            self.add("a.answer_cut", "the model stops mid-answer (token limit)", self.main,
                     lead + s.answer(text) if s.content != s.implicit else lead + text,
                     self.msg(reasoning=reasoning, content=text))
        if s.calls is None or self.main is None:
            self.na["a_calls"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        full, _ = self.calls([("get_weather", {"city": "Paris"})], close=False)
        cut = full[: _cut_point(full)]
        limit = None
        if s.content_kind != "json":
            limit = (f"tool calls parsed as {s.content_kind} take whatever complete pairs a cut call has: the "
                     "language cannot tell a cut call from a finished one")
        accept = (NO_CALL,)
        keep = {s.reasoning: reasoning} if reasoning else {}
        self.add("a.call_cut", "the model stops inside a call's arguments: no call may come out", p,
                 lead + s.tool_section(cut, close=False), ERROR, accept=accept, limit=limit, keep=keep,
                 suggestion="parse the call body as json without allow_non_json, so that a cut call raises")
        open_text, _ = s.calls.open_text("get_weather", 0)
        if open_text:
            self.add("a.after_call_open", "the model stops right after a call's open marker", p,
                     lead + s.tool_section(open_text, close=False), ERROR, accept=accept, limit=limit, keep=keep,
                     suggestion="parse the call body as json without allow_non_json, so that an empty call raises")
        calls_text, expected = self.calls([("get_weather", {"city": "Paris"})])
        self.add("a.call_then_token_limit", "a complete call and then nothing (no end-of-turn token)", p,
                 lead + s.tool_section(calls_text), self.msg(reasoning=reasoning, calls=expected),
                 suggestion="give the tool-call field a close the call's own text ends with")

    def b(self) -> None:
        s = self.s
        if s.calls is None:
            self.na["b"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        close = s.calls.close
        markers = []
        if close is not None:
            markers = [t.split()[-1] for t in close.texts + close.triggers + close.separators if t.strip()]
        ends = {s.eot, *s.section, *s.turn_ends}  # turn and section tokens never sit in a value
        markers = list(dict.fromkeys(m for m in markers if m and m not in ends))
        if s.content_kind == "json":
            if not markers:
                self.na["b"] = "the tool-call field has no close text that could appear inside a value"
                return
            text = "A call always ends with " + " or ".join(markers) + " on a new line."
            calls_text, expected = self.calls([("save_note", {"title": "tags", "text": text})])
            self.add("b.call_close_in_json_string", "the call's close marker inside a JSON string argument", p,
                     lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_balanced_close(s))
            code = 'print("' + markers[0] + '")'
            calls_text, expected = self.calls([("save_note", {"title": "code", "text": code})])
            self.add("b.call_close_in_code", "code in an argument prints the close marker", p,
                     lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_balanced_close(s))
            return
        if s.content_kind == "xml-inline":
            term = _tag_terminator(s)
            if term:
                code = 'def end_tag():\n    return "' + term + '"'
                calls_text, expected = self.calls([("save_note", {"title": "tags.py", "text": code})])
                self.add("b.value_close_in_value", f"a parameter value (code) contains {term}", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_tag_lookahead(s))
            if markers:
                text = "In this format a call ends with " + markers[0] + " after its last parameter."
                calls_text, expected = self.calls([("save_note", {"title": "format", "text": text})])
                self.add("b.call_close_in_value", "a parameter value contains the call's close marker", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_close_after_value(s, term))
            return
        self.na["b"] = f"tool calls parsed as {s.content_kind}: no quoting to probe"

    def c(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        if s.reasoning and s.r_open and s.r_open.text and s.content == s.implicit:
            opener = s.r_open.text.strip()
            answer = f"Put them inside a {opener} block and the viewer folds them."
            lead, reasoning = self.lead(p, "The user asks how to hide notes.")
            self.add("c.reasoning_open_in_answer", f"the answer names the reasoning opener {opener}", p,
                     lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                     suggestion=_sugg_anchored_open(s))
        if s.calls is not None and s.reasoning and s.r_close is not None:
            # a draft stops before a closing token that would end the turn (Granite's <|end_of_text|>)
            draft, _ = self.calls([("get_weather", {"city": "Paris"})], close=not s.calls_end_turn)
            thought = "I could write " + draft + " but the user only wants a haiku."
            rp = self.in_reasoning or p
            if rp.state == "reasoning" or (s.r_open and s.r_open.text):
                block = s.reasoning_block(thought, opened=rp.state == "reasoning")
                self.add("c.call_draft_in_reasoning", "a tool call drafted inside the reasoning stays reasoning",
                         rp, block + s.answer(_ANSWER) + s.end, self.msg(reasoning=self.carried(rp, thought), content=_ANSWER),
                         suggestion="do not let the tool-call open end the reasoning region")
        if s.calls is not None and s.content == s.implicit:
            open_text, _ = s.calls.open_text("get_weather", 0)
            marker = _marker_word(open_text)
            if marker:
                lead, reasoning = self.lead(p)
                answer = f"Wrap each call in {marker} tags, one per line."
                self.add("c.call_open_in_answer", f"the answer names the call marker {marker}", p,
                         lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                         suggestion=_sugg_call_open_lookahead(s))

    def d(self) -> None:
        s = self.s
        if s.calls is None:
            self.na["d"] = s.calls_why
            return
        p = self.main
        lead, reasoning = self.lead(p)
        two = [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"})]
        calls_text, expected = self.calls(two, sep="\n\n")
        self.add("d.newlines_between_calls", "blank lines between calls and before the end of turn", p,
                 lead + s.end_after(s.tool_section(calls_text), "\n"), self.msg(reasoning=reasoning, calls=expected),
                 no_blank_content=True, suggestion=_sugg_blank(s))
        one_text, one = self.calls(two[:1])
        if s.content == s.implicit:
            self.add("d.text_before_calls", "text, then the calls", p,
                     lead + _BEFORE + "\n\n" + s.end_after(s.tool_section(one_text)),
                     self.msg(reasoning=reasoning, content=_BEFORE, calls=one),
                     no_blank_content=True, suggestion=_sugg_blank(s))
            accept = tuple(self.msg(reasoning=reasoning, content=_BEFORE + sep + _AFTER, calls=one)
                           for sep in _SEPS[1:])
        if s.content == s.implicit and not s.calls_end_turn:
            self.add("d.text_around_calls", "text, the calls, more text: nothing overwritten", p,
                     lead + _BEFORE + "\n" + s.tool_section(one_text) + "\n" + _AFTER + s.end,
                     self.msg(reasoning=reasoning, content=_BEFORE + _AFTER, calls=one), accept=accept,
                     no_blank_content=True, suggestion=_sugg_repeats(s.content, ""))
        if lead:
            self.add("d.calls_after_reasoning", "reasoning, a blank line, then a call", p,
                     lead + s.end_after(s.tool_section(one_text)), self.msg(reasoning=reasoning, calls=one),
                     no_blank_content=True, suggestion=_sugg_blank(s))

    def e(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        if s.calls is not None:
            three = [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"}),
                     ("get_weather", {"city": "Tokyo"})]
            lead, reasoning = self.lead(p)
            calls_text, expected = self.calls(three)
            self.add("e.several_calls", "three calls in a row", p, lead + s.end_after(s.tool_section(calls_text)),
                     self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_repeats(s.tools))
            if s.section[0] or s.calls.listed:
                first, e1 = self.calls(three[:1])
                second, e2 = self.calls(three[1:2])
                for_list = s.calls.listed and not s.section[0]
                self.add("e.several_tool_sections", "two separate tool sections in one turn", p,
                         lead + s.tool_section(first) + "\n" + s.end_after(s.tool_section(second)),
                         self.msg(reasoning=reasoning, calls=e1 + e2),
                         limit=("each section is one JSON list; a repeated list-valued field nests lists instead of "
                                "joining them" if for_list else None),
                         suggestion=_sugg_repeats(s.tools))
        if s.reasoning and s.r_open and s.r_open.text and s.r_close and s.r_close.text and \
                self.fresh_answer is not None:
            fp = self.fresh_answer
            b1 = s.reasoning_block(_REASON, opened=False)
            b2 = s.reasoning_block(_REASON2, opened=False)
            expected = self.msg(reasoning=_REASON + "\n" + _REASON2, content=_ANSWER)
            accept = [self.msg(reasoning=_REASON + sep + _REASON2, content=_ANSWER) for sep in _SEPS]
            accept += [self.msg(reasoning=_REASON, content=b2.strip() + sep + _ANSWER) for sep in _SEPS]
            self.add("e.second_reasoning_block", "a second reasoning block right after the first: nothing lost", fp,
                     b1 + b2 + s.answer(_ANSWER) + s.end, expected, accept=tuple(accept),
                     suggestion=_sugg_repeats(s.reasoning, "\n"))

    def f(self) -> None:
        s = self.s
        for p in self.prompts:
            tag = f"[{p.name}]"
            lead, reasoning = self.lead(p)
            self.add("f.answer" + tag, f"an answer after this prompt ({p.state})", p,
                     lead + s.answer(_ANSWER) + s.end, self.msg(reasoning=reasoning, content=_ANSWER),
                     suggestion=_sugg_state(s, p))
            if s.calls is not None:
                calls_text, expected = self.calls([("get_weather", {"city": "Paris"})])
                self.add("f.call" + tag, f"a call after this prompt ({p.state})", p,
                         lead + s.end_after(s.tool_section(calls_text)), self.msg(reasoning=reasoning, calls=expected),
                         suggestion=_sugg_state(s, p))

    def g(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        lead, reasoning = self.lead(p, "Tokyo is 東京 — check the weather 🌦️.")
        answer = "Checking 東京 for you 👩‍💻🇫🇷."
        if s.calls is not None and s.content == s.implicit:
            calls_text, expected = self.calls([("get_weather", {"city": "東京 🌸"}), ("get_time", {"tz": "Asia/東京"})])
            out = lead + answer + "\n" + s.end_after(s.tool_section(calls_text))
            exp = self.msg(reasoning=reasoning, content=answer, calls=expected)
        else:
            out = lead + s.answer(answer) + s.end
            exp = self.msg(reasoning=reasoning, content=answer)
        self.add("g.every_cut", "every marker split at every position; CJK and emoji in the text", p, out, exp,
                 every_cut=True, suggestion="a template whose result depends on chunking needs a delimiter that "
                                            "cannot commit early: avoid $ and \\Z in lookaheads")

    def h(self) -> None:
        s = self.s
        p = self.main
        if p is None:
            return
        fp = self.fresh_answer
        if s.reasoning and fp is not None and s.r_open and s.r_open.text and s.r_close and s.r_close.text:
            self.add("h.missing_reasoning_open", "reasoning without its opener, then the close and the answer", fp,
                     _REASON + "\n" + s.r_close.text + "\n\n" + _ANSWER + s.end,
                     self.msg(reasoning=_REASON, content=_ANSWER),
                     limit=("text before the close was already streamed as content, and a region cannot be "
                            "relabelled afterwards; opening the reasoning at the start of the turn (as for models "
                            "that always reason) is the only way, and it is wrong for models that may answer "
                            "directly"),
                     suggestion="open the reasoning region at the start of the turn")
        if s.reasoning_at_start and s.r_open and s.r_open.text and s.r_close and s.r_close.text:
            start = next((q for q in self.prompts if q.state == "reasoning" and not q.carry
                          and not (q.text.rstrip().endswith(s.r_open.text.strip()))), None)
            if start is not None:
                self.add("h.reasoning_opener_written", "a model that always reasons still writes the opener itself",
                         start, s.r_open.text + "\n" + _REASON + "\n" + s.r_close.text + "\n\n" + _ANSWER + s.end,
                         self.msg(reasoning=_REASON, content=_ANSWER),
                         suggestion=_set(s.reasoning, "open_pattern",
                                         f"^\\s*{_esc(s.r_open.text)}|{s.fields[s.reasoning]['open_pattern']}",
                                         "consume the opener when the model writes it"))
        if s.calls is None:
            self.na["h_calls"] = s.calls_why
            return
        lead, reasoning = self.lead(p)
        close = s.calls.close
        if close is not None and close.text and s.eot and close.text != s.eot and not s.calls.listed:
            text, expected = self.calls([("get_weather", {"city": "Paris"})], close=False)
            self.add("h.missing_call_close", "a call without its close marker, then the end of turn", p,
                     lead + s.end_after(s.tool_section(text)), self.msg(reasoning=reasoning, calls=expected),
                     suggestion=_sugg_lookahead_close(s, s.tools, s.eot))
        begin, end = s.section
        if begin:
            text, expected = self.calls([("get_weather", {"city": "Paris"})])
            if end:
                self.add("h.missing_section_close", "a tool section without its close, then the end of turn", p,
                         lead + begin + text + s.end, self.msg(reasoning=reasoning, calls=expected),
                         suggestion="nothing should depend on the section close")
            stray = "Calling the weather tool."
            self.add("h.text_in_tool_section", "text inside the tool section, before the call", p,
                     lead + begin + "\n" + stray + "\n" + text + (end or "") + s.end,
                     self.msg(reasoning=reasoning, calls=expected),
                     accept=(self.msg(reasoning=reasoning, content=stray, calls=expected),),
                     suggestion="let text inside a tool section go to content")
        opens = _delim(s.fields[s.tools], "open")
        if opens is not None and opens.triggers and not s.calls.listed:
            body_value, exp = s.calls.call_value("get_weather", {"city": "Paris"}, 0, {})
            close_text = s.calls.close.text if s.calls.close and s.calls.close.text else ""
            bare = s.body_text(body_value)
            self.add("h.bare_json_call", "a call written as bare JSON, without any marker", p,
                     lead + bare + close_text + s.end if close_text == s.eot else lead + bare + s.end,
                     self.msg(reasoning=reasoning, calls=[exp]), suggestion="accept a bare JSON call at the turn start")
        if s.content_kind == "json":
            self.h_loose_json(p, lead, reasoning)

    def h_loose_json(self, p: Any, lead: str, reasoning: Any) -> None:
        """Argument JSON that real models write and strict JSON rejects (reported against deployed parsers:
        Kimi-K2 double-encoded arguments, DeepSeek-V3 raw newlines in code, Python-dict quotes from quantized
        Mistral). The json content parser is strict, as in the reference, and a transform cannot decode a
        string again, so each is a known limit of the language for a template with plain JSON arguments."""
        s = self.s
        content_args = s.fields[s.tools].get("content_args") or {}
        plain = not content_args.get("unquoted_keys") and not content_args.get("string_delims")
        args = {"city": "Paris"}
        _, expected = self.calls([("get_weather", args)])
        dumped = json.dumps(args)
        text, _ = self.calls([("get_weather", dumped)])
        if plain and json.dumps(dumped) in text:
            self.add("h.arguments_as_json_string", "the arguments written as a JSON string holding the object", p,
                     lead + s.end_after(s.tool_section(text)), self.msg(reasoning=reasoning, calls=expected),
                     limit=("the json content parser decodes once and no transform decodes a string again, so the "
                            "arguments stay a string; decode string arguments in the application"),
                     suggestion="decode string arguments in the application")
        text, _ = self.calls([("get_weather", args)])
        value = json.dumps(args["city"])  # "Paris" in plain JSON, or between the dialect's own string delimiters
        if not plain and content_args.get("string_delims"):
            d_open, d_close = content_args["string_delims"][0]
            value = d_open + args["city"] + d_close
        quoted = "'" + args["city"] + "'"
        if value in text and (not plain or dumped in text):
            self.add("h.single_quoted_json", "a string argument in single quotes (Python-dict style 'Paris')", p,
                     lead + s.end_after(s.tool_section(text.replace(value, quoted).replace('"city"', "'city'"))),
                     self.msg(reasoning=reasoning, calls=expected),
                     limit=("single quotes are not JSON; taking them as a string delimiter (string_delims) would "
                            "break apostrophes inside ordinary JSON strings, so the call raises"),
                     suggestion="repair the arguments in the application when a call fails")
        note = {"text": "line one\nline two"}
        text, expected = self.calls([("save_note", note)])
        escaped = json.dumps(note["text"])
        if plain and escaped in text:
            self.add("h.raw_newline_in_string", "a raw newline inside a JSON string argument (code, notes)", p,
                     lead + s.end_after(s.tool_section(text.replace(escaped, '"' + note["text"] + '"'))),
                     self.msg(reasoning=reasoning, calls=expected),
                     limit=("a raw newline inside a JSON string is a control character that strict JSON (the "
                            "reference's json.loads) rejects, and nothing in a template can escape it first"),
                     suggestion="repair the arguments in the application when a call fails")

    def i(self) -> None:
        s = self.s
        p = self.main
        if p is None or s.content != s.implicit:
            return
        if s.calls is None:
            self.na["i"] = s.calls_why
            return
        lead, reasoning = self.lead(p)
        example = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
        answer = f"A call looks like {example} in the request body."
        self.add("i.json_example_in_answer", "a JSON example in the answer that looks like a call", p,
                 lead + answer + s.end, self.msg(reasoning=reasoning, content=answer),
                 suggestion="open bare-JSON calls only at the start of the turn: (?<=^\\s*) before the pattern")
        fenced = f"Send this:\n```json\n{example}\n```"
        self.add("i.json_in_code_block", "a fenced JSON example in the answer", p,
                 lead + fenced + s.end, self.msg(reasoning=reasoning, content=fenced),
                 suggestion="open bare-JSON calls only at the start of the turn: (?<=^\\s*) before the pattern")


def _cut_point(text: str) -> int:
    """Where to cut a call: inside its arguments, after the first value starts."""
    for marker in ("Paris",):
        i = text.find(marker)
        if i != -1:
            return i + 2
    return max(1, len(text) * 2 // 3)


def _marker_word(open_text: str) -> str:
    text = open_text.strip()
    m = regex.match(r"\S+?(?:>|\]|\|>|｜>)", text)
    return m.group(0) if m else (text.split()[0] if text else "")


def _tag_terminator(s: _Shape) -> str:
    args = s.fields[s.tools].get("content_args") or {}
    try:
        sample = pattern_samples(args["tag_pattern"], {"key": "k", "value": "\x01"})[0].text
    except (SampleError, KeyError):
        return ""
    after = sample.split("\x01", 1)[1] if "\x01" in sample else ""
    return after.strip().split("\n")[0].strip()


# ---------------------------------------------------------------------------------------------
# Suggestions: concrete template changes, written from the template's own delimiters


def _source(fspec: dict, kind: str) -> str | None:
    if kind in fspec:
        raw = fspec[kind]
        lits = [raw] if isinstance(raw, str) else list(raw)
        return "|".join(_esc(x) for x in sorted(lits, key=len, reverse=True))
    return fspec.get(kind + "_pattern")


@dataclass
class _Fix:
    """A suggested template change: ``text`` for people, ``changes`` (JSON path -> new value) to apply it."""

    text: str
    changes: list


def _set(field_name: str, key: str, value: Any, why: str) -> _Fix:
    return _Fix(f"fields.{field_name}: {json.dumps({key: value}, ensure_ascii=False)} ({why})",
                [(("fields", field_name, key), value)])


def apply_fix(spec: dict, changes: list) -> dict:
    """A copy of ``spec`` with the changes of a suggestion applied (``[(path, value), ...]``; setting
    ``close_pattern`` drops ``close`` and the other way round)."""
    out = json.loads(json.dumps(spec))
    for path, value in changes:
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        key = path[-1]
        node[key] = value
        if key in ("open", "close"):
            node.pop(key + "_pattern", None)
        elif key in ("open_pattern", "close_pattern"):
            node.pop(key[:-len("_pattern")], None)
    return out


def _sugg_lookahead_close(s: _Shape, field_name: str, eot: str) -> _Fix:
    src = _source(s.fields[field_name], "close") or ""
    return _set(field_name, "close_pattern", f"{src}|(?={_esc(eot)})",
                "a zero-width close on the end-of-turn token, which stays for the content field to consume")


def _sugg_anchored_open(s: _Shape) -> _Fix:
    src = _source(s.fields[s.reasoning], "open") or ""
    return _set(s.reasoning, "open_pattern", f"^\\s*(?:{src})",
                "the reasoning opens only at the start of the turn, right after the prompt")


BALANCED_JSON = r'(?:[^"\\<]|"(?:[^"\\]|\\.)*")*'


def _sugg_balanced_close(s: _Shape) -> _Fix:
    f = s.fields[s.tools]
    open_text = s.calls.open_text("x", 0)[0] if s.calls else ""
    marker = _esc(_marker_word(open_text) or open_text)
    close = _source(f, "close") or ""
    return _set(s.tools, "close_pattern", f"(?<={marker}{BALANCED_JSON})(?:{close})",
                "the close counts only where the quotes since the open marker are balanced")


def _sugg_tag_lookahead(s: _Shape) -> _Fix:
    args = dict(s.fields[s.tools].get("content_args") or {})
    tag = args.get("tag_pattern", "")
    first = _marker_word(pattern_samples(tag, {"key": "k", "value": "v"})[0].text) if tag else ""
    lead = regex.sub(r"k.*", "", first)
    args["tag_pattern"] = f"{tag}(?=\\s*(?:{_esc(lead)}|$))"
    return _Fix(f"fields.{s.tools}.content_args.tag_pattern: {json.dumps(args['tag_pattern'], ensure_ascii=False)} "
                "(a value ends only at a terminator followed by the next parameter or the end of the call)",
                [(("fields", s.tools, "content_args"), args)])


def _sugg_close_after_value(s: _Shape, term: str) -> _Fix:
    close = _source(s.fields[s.tools], "close") or ""
    return _set(s.tools, "close_pattern", f"(?<={_esc(term)}\\s*)(?:{close})",
                "the call closes only right after a parameter's terminator; add the zero-parameter form as "
                "another lookbehind alternative")


def _sugg_call_open_lookahead(s: _Shape) -> _Fix:
    src = _source(s.fields[s.tools], "open") or ""
    return _set(s.tools, "open_pattern", f"(?:{src})(?=\\s*[{{\\[<])",
                "the marker opens a call only when a call body follows")


def _sugg_blank(s: _Shape) -> _Fix:
    texts, changes = [], []
    for name in (s.tools, s.reasoning):
        if name:
            src = _source(s.fields[name], "close")
            if src:
                fix = _set(name, "close_pattern", f"(?:{src})\\s*", "")
                texts.append(fix.text.replace(" ()", ""))
                changes += fix.changes
    return _Fix("; ".join(texts) + " (closes swallow the whitespace after them, so no blank content region opens)",
                changes)


def _sugg_repeats(field_name: str, join: str | None = None) -> _Fix:
    changes = [(("fields", field_name, "repeats"), True)]
    if join is not None:
        changes.append((("fields", field_name, "join"), join))
    text = f'fields.{field_name}: "repeats": true' + (f', "join": {json.dumps(join)}' if join is not None else "")
    return _Fix(text + " (later blocks are added instead of replacing earlier ones)", changes)


def _sugg_state(s: _Shape, p: _Prompt) -> _Fix | str:
    if p.state == "thinking_off" and s.reasoning:
        src = _source(s.fields[s.reasoning], "open") or ""
        close = _source(s.fields[s.reasoning], "close") or ""
        return _set(s.reasoning, "open_pattern", f"^\\s*(?:{src}|(?={close}))",
                    "a bare reasoning close at the start of the turn opens and closes an empty reasoning region")
    if p.state == "reasoning":
        return "the prompt leaves the parser inside the reasoning: the reasoning close must be watched there"
    return "check start_anchor against this prompt"


def build_cases(shape: _Shape, prompts: list) -> tuple[list, dict]:
    """(the `ProbeCase` list, class key -> why the class could not be written) for a template and its prompts."""
    builder = _Builder(shape, prompts)
    builder.build()
    return builder.cases, builder.na
