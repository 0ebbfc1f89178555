"""The `voicegate` command line: a thin typer layer over the library."""

from voicegate.cli import _calibrate, _demo, _entries, _generate, _register, _report, _score, _seat  # noqa: F401
from voicegate.cli._app import app, main

__all__ = ["app", "main"]
