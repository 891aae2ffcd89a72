"""Text on its way to a terminal: control characters shown escaped, never obeyed.

Tenant ids, schedule names, errors, payloads and file names come from whoever enqueues or
uploads, and a terminal obeys what they hold: OSC 0 sets the window title and OSC 52 the
clipboard, a carriage return or a cursor movement rewrites a line, a newline fakes a row, a bidi
override reorders one. Every human-readable output of the CLI goes through `printable` (a table
cell, a name in a message) or `printable_lines` (a message of several lines, a log record); JSON
output stays JSON, through `printable_json`.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

__all__ = ["TerminalFormatter", "printable", "printable_json", "printable_lines"]

# What a terminal may act on, beyond the C0 controls: DEL and the C1 controls (U+009B is CSI on
# a terminal that reads 8-bit controls), the line and paragraph separators, the bidi marks,
# embeddings, overrides and isolates, and lone surrogates (bytes that were not UTF-8, which
# cannot even be written to a UTF-8 stream).
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
_CONTROL_KEEPING_NEWLINES = re.compile(f"[\x00-\x09\x0b-\x1f{_BEYOND_C0}]")
# json.dumps escapes the C0 controls itself, and writes the rest raw with ensure_ascii=False.
_CONTROL_IN_JSON = re.compile(f"[{_BEYOND_C0}]")

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def printable(text: object) -> str:
    """`text` (or str() of it) on one line, its control characters escaped as Python writes
    them: `\\x1b`, `\\r`, `\\n`, `\\u202e`. The rest, accents and emoji included, as it is."""
    value = text if isinstance(text, str) else str(text)
    return _CONTROL.sub(_escaped, value)


def printable_lines(text: object) -> str:
    """Like `printable`, keeping its line breaks: for a message of several lines."""
    value = text if isinstance(text, str) else str(text)
    return _CONTROL_KEEPING_NEWLINES.sub(_escaped, value)


def printable_json(value: Any, **dumps: Any) -> str:
    """json.dumps(value, ensure_ascii=False, **dumps), with what a terminal would act on still
    escaped (as `\\u009b`): the same JSON value, readable accents, no control reaching the
    screen."""
    return _CONTROL_IN_JSON.sub(_json_escaped, json.dumps(value, ensure_ascii=False, **dumps))


class TerminalFormatter(logging.Formatter):
    """Log records with their control characters escaped: a record quotes job errors, schedule
    names and tenants, and a worker's log is read on terminals too."""

    def format(self, record: logging.LogRecord) -> str:
        return printable_lines(super().format(record))
