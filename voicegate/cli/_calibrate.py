"""`voicegate calibrate GATE --seeds K`: the `gate.calibrate` use case, printed as a table or JSON."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from voicegate.cli._app import Gate, Workspace, app


@app.command("calibrate")
def calibrate_cmd(
    gate: Gate,
    seeds: Annotated[int, typer.Option("--seeds", metavar="K", help="Seeds per arm in each draw (fewer than the "
                                       "pilot stores).")],
    draws: Annotated[int, typer.Option("--draws", metavar="N", help="Random K-seed draws to re-decide.")] = 1000,
    rng_seed: Annotated[int, typer.Option("--seed", metavar="RNG", min=0, help="Seed of the draws (same seed, "
                                          "same draws).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON, with the per-seed distances "
                                          "it used (per arm and target).")] = False,
    looks: Annotated[str | None, typer.Option("--looks", metavar="N,N,...", help="Simulate this sequential design "
                                              "(seeds per arm at each look, boundaries as register would record "
                                              "them) on the pilot; default: the design the pilot registers, if any."
                                              )] = None,
    workspace: Workspace = None,
) -> None:
    """Error rates of a pilot: re-decide K-seed draws of its stored seeds under every rule; records no verdict."""
    from voicegate._errors import VoicegateError
    from voicegate.gate import calibrate

    try:
        asked = None if looks is None else [int(n) for n in looks.split(",")]
    except ValueError:
        raise VoicegateError(f"--looks {looks}: seeds per arm at each look, comma-separated (3,5,8)") from None
    result = calibrate(workspace, gate, seeds=seeds, draws=draws, rng_seed=rng_seed, looks=asked)
    if as_json:
        from voicegate.cli._machine import emit

        emit(result.to_json())
    else:
        typer.echo(result.text())
    out = sys.stderr if as_json else sys.stdout
    for line in result.said:
        out.write(line + "\n")
    if result.path is not None:
        out.write(f"wrote {result.path}\n")
