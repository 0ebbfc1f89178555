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


def load_strict(text: str) -> Any:
    """Parse YAML text as `yaml.safe_load` does, refusing duplicate mapping keys (a yaml.YAMLError)."""
    import yaml

    return yaml.load(text, Loader=_strict_loader())  # a SafeLoader subclass: no arbitrary objects
