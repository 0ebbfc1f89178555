"""The `voicegate` command line: a thin typer layer over the library."""

from voicegate.cli._app import app, main
from voicegate.cli import _register, _generate, _score, _entries, _report, _seat, _demo  # noqa: F401,E402

__all__ = ["app", "main"]
