"""`voicegate demo`: a whole gate on an embedded stand-in seat."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voicegate.cli._app import app


@app.command("demo")
def demo_cmd(
    directory: Annotated[Path | None, typer.Argument(help="A new, empty directory (default: a temp dir).")] = None,
) -> None:
    """Run register, generate, score, ship, amend, verify and report on an embedded default."""
    from voicegate.demo._run import run_demo

    run_demo(directory, typer.echo)
