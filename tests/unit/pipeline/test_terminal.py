"""What reaches a terminal: control characters escaped, everything else as it is, JSON still the
same JSON value."""

from __future__ import annotations

import json
import logging
import re

import pytest

from pg_pipeline.terminal import TerminalFormatter, printable, printable_json, printable_lines

#: What a terminal acts on: C0 and C1 controls, DEL, line separators, bidi controls
ACTS_ON = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

HOSTILE = [
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # OSC 0: the window title
    ("\x1b]52;c;cm0gLXJmIH4=\x07", "\\x1b]52;c;cm0gLXJmIH4=\\x07"),  # OSC 52: the clipboard
    ("ok\r\x1b[2Kfake", "ok\\r\\x1b[2Kfake"),  # a line rewritten
    ("a\nb\tc", "a\\nb\\tc"),  # a row faked
    ("\x9b2J", "\\x9b2J"),  # CSI as one 8-bit control
    ("abc\u202edef", "abc\\u202edef"),  # right-to-left override
    ("caf\u00e9 \U0001f600 \u65e5\u672c", "caf\u00e9 \U0001f600 \u65e5\u672c"),  # left alone
    ("bad\udcffbyte", "bad\\udcffbyte"),  # a byte that was not UTF-8
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_printable_escapes_what_a_terminal_would_obey_and_keeps_the_rest(
    text: str, shown: str
) -> None:
    assert printable(text) == shown
    assert not ACTS_ON.search(printable(text))


def test_printable_lines_keeps_line_breaks_and_escapes_everything_else() -> None:
    assert printable_lines("first\r\nsecond\x1b]0;x\x07") == "first\\r\nsecond\\x1b]0;x\\x07"


def test_printable_takes_any_value() -> None:
    assert printable(ValueError("no\x1bpe")) == "no\\x1bpe"


def test_printable_json_is_the_same_json_value_with_nothing_a_terminal_obeys() -> None:
    value = {"t\x1b": [text for text, _ in HOSTILE], "accent": "caf\u00e9"}
    for indent in (None, 2):
        out = printable_json(value, indent=indent)
        assert json.loads(out) == value
        assert not ACTS_ON.search(out.replace("\n", ""))
        assert "caf\u00e9" in out  # readable, not \u00e9


def test_log_records_are_escaped_but_keep_their_lines() -> None:
    record = logging.LogRecord(
        "pipeline", logging.ERROR, __file__, 1, "schedule %s failed", ("x\x1b]0;t\x07",), None
    )
    line = TerminalFormatter("%(message)s").format(record)
    assert line == "schedule x\\x1b]0;t\\x07 failed"
