"""A template text that is not JSON says what is wrong and where, in our words (trial 9): a number longer than
Python reads and a leading byte-order mark no longer show Python's advice (``sys.set_int_max_str_digits()``,
``decode using utf-8-sig``)."""

from __future__ import annotations

import sys

import pytest

from parsing import TemplateError, loads_template

VALID = '{"start_anchor": "S", "fields": {"content": {}}}'


def test_a_number_longer_than_python_reads_is_located():
    digits = sys.get_int_max_str_digits() + 700
    text = '{"start_anchor": "S",\n  "note": "' + "7" * (digits + 5) + '",\n  "fields": {"content": {"x": ' + \
        "9" * digits + "}}}"
    with pytest.raises(TemplateError) as info:
        loads_template(text)
    err = info.value
    assert f"a number with {digits:,} digits" in str(err) and "set_int_max_str_digits" not in str(err)
    assert (err.line, err.column) == (3, text.splitlines()[2].index("9") + 1)  # not the digits inside the string


def test_a_byte_order_mark_is_named_and_located():
    with pytest.raises(TemplateError) as info:
        loads_template("\ufeff" + VALID)
    err = info.value
    assert "byte-order mark" in str(err) and "utf-8-sig" not in str(err) and (err.line, err.column) == (1, 1)
    assert loads_template(VALID)  # the same text without it is a template


def test_other_json_errors_keep_json_s_words_and_place():
    text = '{"start_anchor": "S",\n "fields": {"content": {}},}'
    with pytest.raises(TemplateError) as info:
        loads_template(text)
    assert "Expecting property name" in str(info.value)
    assert (info.value.line, info.value.column) == (2, len(text.splitlines()[1]))  # the last "}": no name after ","

