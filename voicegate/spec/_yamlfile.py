"""Reading a user's YAML file (compose, LiteLLM config) into data, with one-line refusals."""

from __future__ import annotations

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
