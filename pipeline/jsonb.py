"""What a jsonb column can hold, and where a value that it cannot hold goes wrong.

jsonb refuses a NUL character, an unpaired surrogate, NaN and the infinities, integers beyond
numeric's digits, and the JSON encoder gives up on nesting deeper than MAX_DEPTH or a circular
value. `find_unstorable` names the first such place as a path into the value, so that a refusal
says which field, before anything is sent to the database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

#: Deeper JSON than this is refused: the encoder psycopg uses recurses once per level and hits
#: Python's recursion limit (1000 frames, some already in use) somewhere above it.
MAX_DEPTH = 500

#: Postgres' numeric type holds at most this many digits before the decimal point.
_NUMERIC_MAX_DIGITS = 131_072

_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def find_unstorable(value: Any) -> str | None:
    """Why the JSON value `value` cannot be stored in a jsonb column, or None when it can.

    The reason names the first offending field in document order, as a path such as
    `scores[2]` or `lots[0].title`: "NUL character in field 'text'".
    """
    # An explicit stack instead of recursion, so that a deep value is reported, not crashed on.
    # "exit" entries take a container off the current path: seeing one again before its exit
    # is a cycle, which json.dumps would refuse; a container shared by two fields is fine.
    stack: list[tuple[str, Any, int] | int] = [("", value, 0)]
    on_path: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            on_path.discard(item)
            continue
        path, node, depth = item
        problem = _scalar_problem(node)
        if problem is not None:
            return f"{problem} {_where(path)}"
        if not isinstance(node, dict | list | tuple):
            continue
        if id(node) in on_path:
            return f"a circular reference {_where(path)}"
        if depth >= MAX_DEPTH:
            return f"nesting deeper than {MAX_DEPTH} levels {_where(path)}"
        if isinstance(node, dict):
            for key in node:
                key_problem = _key_problem(key)
                if key_problem is not None:
                    owner = f"of field '{_shorten(path)}'" if path else "of the top-level object"
                    return f"{key_problem} in a key {owner}"
        on_path.add(id(node))
        stack.append(id(node))
        for child_path, child in reversed(list(_children(path, node))):
            stack.append((child_path, child, depth + 1))
    return None


def _children(
    path: str, node: dict[Any, Any] | list[Any] | tuple[Any, ...]
) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, child in node.items():
            name = str(key)
            if _IDENTIFIER.match(name):
                yield (f"{path}.{name}" if path else name), child
            else:
                yield f"{path}[{_quote(name)}]", child
    else:
        for index, child in enumerate(node):
            yield f"{path}[{index}]", child


def _scalar_problem(node: Any) -> str | None:
    if node is None or isinstance(node, bool | dict | list | tuple):
        return None
    if isinstance(node, str):
        return _text_problem(node)
    if isinstance(node, float):
        if math.isnan(node):
            return "NaN"
        if math.isinf(node):
            return "Infinity" if node > 0 else "-Infinity"
        return None
    if isinstance(node, int):
        # Only a huge number can fail; the bit length rules out everything ordinary cheaply.
        if node.bit_length() < 10_000:
            return None
        try:
            digits = len(str(abs(node)))
        except ValueError:  # longer than sys.get_int_max_str_digits(): json.dumps fails
            return "an integer too long to write as JSON"
        return "an integer too large for jsonb" if digits > _NUMERIC_MAX_DIGITS else None
    return f"a {type(node).__name__}, which is not JSON,"


def _key_problem(key: Any) -> str | None:
    if isinstance(key, str):
        return _text_problem(key)
    if key is None or isinstance(key, bool | int):
        return None  # json.dumps writes these keys as strings
    if isinstance(key, float):
        return None if math.isfinite(key) else "a non-finite number"
    return f"a {type(key).__name__}, which is not JSON,"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "NUL character"  # jsonb (like text) cannot hold U+0000
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        # What os.fsdecode makes of bytes that are not UTF-8; they cannot be encoded to send.
        return f"unpaired surrogate U+{ord(surrogate.group()):04X} (not valid Unicode)"
    return None


def _where(path: str) -> str:
    return f"in field '{_shorten(path)}'" if path else "at the top level"


def _shorten(path: str, limit: int = 120) -> str:
    # A path hundreds of levels deep would bury the reason it is given for.
    return path if len(path) <= limit else f"{path[: limit // 2]}...{path[-limit // 2 :]}"


def _quote(name: str) -> str:
    escaped = name.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    return f'"{escaped}"'
