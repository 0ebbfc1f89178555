"""`voicegate demo`: a whole gate on an embedded stand-in seat."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voicegate.cli._app import Gate, Workspace, app, seat_app


@app.command("demo")
def demo_cmd(
    directory: Annotated[Path | None, typer.Argument(metavar="DIR", help="A new, empty directory (default: a temp dir).")] = None,
) -> None:
    """Run register, generate, score, ship, amend, verify and report on an embedded default."""
    from voicegate.demo._run import run_demo

    run_demo(directory, typer.echo)


@seat_app.command("simulate")
def simulate_cmd(
    gate: Gate,
    workspace: Workspace = None,
    token_time: Annotated[float, typer.Option(min=0.0, help="Seconds per token the stand-in spends decoding.")] = 0.0,
) -> None:
    """Dry-run a spec's generation on the stand-in seat: counts, runtime, file layout. Writes nothing here."""
    from voicegate.generate._simulate import simulate
    from voicegate.spec._workspace import workspace_root

    for line in simulate(workspace_root(workspace), gate, token_time=token_time).lines():
        typer.echo(line)
