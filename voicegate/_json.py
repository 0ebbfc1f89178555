"""Strict JSON: what voicegate reads from outside (an import file, a seat's answer) and from its own files.

Python's `json` accepts things JSON does not have and keeps things it should not:
`NaN`, `Infinity` and `-Infinity` (and `1e999`, which becomes infinity), a key
written twice (the last one silently wins), a lone surrogate (a string that can
never be written out as UTF-8 again), and nesting deep enough to end in a
`RecursionError`. `loads` refuses every one of them with a `ValueError` whose
message is one line; `dumps` refuses to write a non-finite number.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
"""Arrays and objects nested deeper than this are refused (no voicegate file needs more than a few)."""


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of range for a number")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:60]!r}")
        out[key] = value
    return out


def _check(value: Any, max_depth: int) -> None:
    """Depth and UTF-8-writability, walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds a lone surrogate (not UTF-8 text)") from None
        elif isinstance(item, (dict, list)):
            if depth >= max_depth:
                raise ValueError(f"nested more than {max_depth} levels deep")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON; anything `json` would bend is a ValueError with a one-line message."""
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"nested more than {max_depth} levels deep") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    _check(value, max_depth)
    return value


def dumps(data: Any, **kw: Any) -> str:
    """`json.dumps` that refuses NaN and Infinity instead of writing them."""
    return json.dumps(data, allow_nan=False, **kw)
