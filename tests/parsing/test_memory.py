"""With spans off the scan buffer stays bounded however long the stream (a structural check, not a timing)."""

from parsing import ResponseParser

TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open_pattern": r"<tool_call>\s*", "close": "</tool_call>", "content": "json"},
        "content": {"close": "<|im_end|>"},
    },
}


def buffer_after(n_chars, template):
    parser = ResponseParser(template, "")
    parser.feed("<think>")
    piece = "lorem ipsum < dolor </thin sit amet "
    sent = 0
    while sent < n_chars:
        parser.feed(piece[: 4])
        parser.feed(piece[4:])
        sent += len(piece)
    return len(parser._buf)


def test_scan_buffer_does_not_grow_with_emitted_text():
    small = buffer_after(20_000, TEMPLATE)
    large = buffer_after(400_000, TEMPLATE)
    # Bounded by the lookbehind margin plus the trimming period, independent of the stream length.
    assert large <= 8192 and small <= 8192


def test_literal_only_template_keeps_no_consumed_text():
    literal = {k: v for k, v in TEMPLATE.items()}
    literal["fields"] = dict(TEMPLATE["fields"], tool_calls={"open": "<tool_call>", "close": "</tool_call>"})
    assert buffer_after(50_000, literal) <= len("</thin")


def test_caret_patterns_keep_the_whole_stream_to_stay_exact():
    caret = {"start_anchor": "X", "fields": {"x": {"open_pattern": "^<x>", "close": "</x>"}, "content": {}}}
    parser = ResponseParser(caret, "")
    for _ in range(3000):
        parser.feed("abcd")
    parser.feed("<x>")
    message, _ = parser.finalize()
    assert message == {"content": "abcd" * 3000 + "<x>"}


def test_a_parser_and_its_message_are_freed_as_soon_as_the_last_reference_goes():
    """No reference cycle: a time-budgeted parser once stored its budgeted ``feed``/``finalize`` as bound methods
    on itself, so it (and a transform result of ~90 MB on a public server, trial 9) lived until a full garbage
    collection. Checked with the cyclic collector off: only reference counting frees it."""
    import gc
    import weakref

    template = {"start_anchor": "S", "fields": {"content": {"transform": {"a": ["{content}"] * 3}}}}
    for kw in ({}, {"time_budget": 30.0}, {"time_budget": 30.0, "spans": True, "recover": True, "max_values": 100}):
        was = gc.isenabled()
        gc.disable()
        try:
            parser = ResponseParser(template, "S", **kw)
            parser.feed("hello")
            message, _ = parser.finalize()
            assert message == {"content": {"a": ["hello"] * 3}}
            gone = weakref.ref(parser)
            del parser
            assert gone() is None, kw
        finally:
            if was:
                gc.enable()


def test_fast_path_chunks_reach_the_body_in_order_across_tail_joins():
    """`feed`'s fast path leaves its chunks in `_tail`; the region's body gets them when the tail is joined (every
    `TAIL_CHUNKS` chunks, and before any other path routes text), so a region longer than many tails and body blocks,
    ended by a cut-off close that routes text before it, keeps every character in order: with regex delimiters (the
    tail kept as lookbehind context) and with literals only."""
    from transformers.utils.chat_parsing import parse_response as reference_parse

    from parsing.parser import BODY_BLOCK, TAIL_CHUNKS

    literal = dict(TEMPLATE, fields=dict(TEMPLATE["fields"], tool_calls={"open": "<tool_call>", "close": "</tool_call>"}))
    words = [f"w{i:05d} " for i in range(TAIL_CHUNKS * BODY_BLOCK // 8 + 7)]  # 4-character chunks, no '<'
    reasoning = "".join(words)
    answer = "".join(reversed(words))
    output = "<think>" + reasoning + "abc</think>" + answer + "<|im_end|>"
    for template in (TEMPLATE, literal):
        parser = ResponseParser(template, "")
        chunks = ["<think>"] + [reasoning[i:i + 4] for i in range(0, len(reasoning), 4)]
        chunks += ["abc</thi", "nk>"] + [answer[i:i + 4] for i in range(0, len(answer), 4)] + ["<|im_end|>"]
        events = [e for chunk in chunks for e in parser.feed(chunk)]
        message, final = parser.finalize()
        assert message == reference_parse(output, template, prefix="")
        assert message["reasoning_content"] == (reasoning + "abc").strip()
        streamed = "".join(e["text"] for e in events + final if e["type"] == "region_chunk")
        assert streamed == reasoning + "abc" + answer
