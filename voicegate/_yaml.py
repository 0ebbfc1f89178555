"""Reading a user's YAML file (compose, LiteLLM config) into data, with one-line refusals."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from voicegate._errors import VoicegateError


def read_yaml(path: Path, what: str) -> Any:
    """yaml.safe_load of `path`; a missing or broken file is a VoicegateError naming `what`."""
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise VoicegateError(f"{path}: not valid YAML: nested too deeply") from None
    except FileNotFoundError:
        raise VoicegateError(f"{what} not found: {path}") from None
    except UnicodeDecodeError:
        raise VoicegateError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise VoicegateError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None


@functools.lru_cache(maxsize=1)
def _strict_loader() -> type[Any]:
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """yaml.SafeLoader that refuses a key written twice in one mapping.

        PyYAML keeps the last of two equal keys without a word; in a spec the first
        one would silently stop counting, so it is refused instead. Otherwise the
        data is exactly what `yaml.safe_load` gives (the spec's hash depends on it).
        """

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[tuple[str, Any], int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    try:
                        first = seen.get((type(key).__name__, key))
                    except TypeError:  # an unhashable key: SafeLoader refuses it below
                        continue
                    if first is not None:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key!r} (first at line {first})", key_node.start_mark)
                    seen[(type(key).__name__, key)] = line
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


MAX_DEPTH = 64
MAX_VALUES = 500_000
"""A spec or probes file is a few levels deep and a few thousand values at most; beyond these
limits it is refused instead of exhausting the stack or, through aliases (`&a [*b, *b]`), memory."""


def _limits_problem(data: Any) -> str | None:
    """Depth and expanded size of loaded YAML, walked without recursion (aliases counted each time)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"more than {MAX_VALUES:,} values once its aliases are expanded"
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children)
    return None


def load_strict(text: str) -> Any:
    """Parse YAML text as `yaml.safe_load` does, refusing duplicate mapping keys, runaway nesting and
    alias bombs (each a yaml.YAMLError). Each call gets its own copy of the data."""
    import copy

    return copy.deepcopy(_parsed(text))


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> Any:
    """One parse per distinct text: a command reads its spec several times (resolve, the registration checks, the
    ledger's record of it), and PyYAML's pure-Python parser takes tens of milliseconds a spec. A refusal is not
    cached (lru_cache keeps only returns)."""
    import yaml

    try:
        data = yaml.load(text, Loader=_strict_loader())  # a SafeLoader subclass: no arbitrary objects
    except RecursionError:
        raise yaml.error.MarkedYAMLError(problem="nested too deeply") from None
    problem = _limits_problem(data)
    if problem is not None:
        raise yaml.error.MarkedYAMLError(problem=problem)
    return data
