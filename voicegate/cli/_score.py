"""`voicegate score`: the `gate.score` use case, printed as a table, one line, or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from voicegate._errors import GateFailed
from voicegate.cli._app import Gate, Workspace, app, fail
from voicegate.cli._machine import AsJson, JunitFile


@app.command("score")
def score_cmd(
    gate: Gate,
    workspace: Workspace = None,
    as_json: AsJson = False,
    junit: JunitFile = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Score without recording a verdict (no scores.json, no score entry); the first numbers "
                          "shown are anchored at HEAD in one record entry. A --junit FILE is still written.")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Exit 1 when no candidate ships under the rule in force.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="One summary line instead of the table.")] = False,
) -> None:
    """Score stored generations: every rule's floor, DISAGREE, copying, damage; save and append the verdicts.

    After an amendment that re-scored these generations, its rule is the one in force: the table, the
    line, --json, --junit and --strict all say what ships under it (and whether it is a post-hoc correction).
    --json prints the result in force with every number at full precision, the registered rule beside it;
    --junit FILE writes the gate's outcome and each candidate's axes as test cases (also under --dry-run).
    """
    from voicegate.cli import _machine
    from voicegate.cli._synthetic import synthetic_note
    from voicegate.gate import GateState, ScoreOutcome, score

    shown: list[GateState] = []

    def show(scored: ScoreOutcome) -> None:
        state = scored.standing
        shown.append(state)
        note = state.note()
        synthetic = synthetic_note(scored.spec.run_dir)   # first: every number below is made of synthetic text
        if synthetic:
            (fail if as_json or quiet else typer.echo)(synthetic)
        if as_json:
            # The document waits for the end: a refusal after scoring leaves only the error document.
            if note:
                fail(f"note: {note}")
            return
        # Printed before anything is written, so the numbers show even if recording is refused.
        if quiet:
            from voicegate.report import ship_line

            if note:
                fail(f"note: {note}")
            rates = "" if state.error_rates is None else f"; error rates: {state.error_rates.statement}"
            shipped = ship_line(state.result) if state.look is None else state.look.ship_line()
            typer.echo(f"{state.gate}: {shipped}{state.tag()}{rates}")
        else:
            from voicegate.report import print_score

            if note:
                typer.echo(f"note: {note}")
            if state.error_rates is not None:   # a gate registered before error rates were stated prints as it did
                typer.echo(state.standing().line())
            # with the seat-integrity line when the run checked it; a sequential design's look says what ships
            print_score(state.result, ships=None if state.look is None else state.look.ship_line())
            for line in scored.notes:
                typer.echo(line)

    if junit is not None:  # refused before anything is scored or written, as `report --out` is
        from voicegate.spec import check_output_path, load_spec, workspace_root

        _machine.check_junit(junit)
        check_output_path(load_spec(workspace_root(workspace), gate), junit, "--junit")
    outcome = score(workspace, gate, dry_run=dry_run, on_scored=show)
    state = shown[-1] if shown else outcome.standing
    if junit is not None:
        _machine.write_junit(junit, _machine.score_junit(state))
    if as_json or quiet:
        # After recording, not before: a refused recording is one line on stderr, nothing more.
        for warning in outcome.result.warnings:
            fail(f"warning: {warning}")
    if not quiet:
        for line in outcome.recorded:
            typer.echo(line, err=as_json)
    if as_json:
        _machine.emit(state.to_json())
    if strict and state.failed:
        raise GateFailed(state.failure())
