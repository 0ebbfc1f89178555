"""`voicegate score`: the `gate.score` use case, printed as a table, one line, or JSON."""

from __future__ import annotations

import sys
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
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when no candidate ships.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="One summary line instead of the table.")] = False,
) -> None:
    """Score stored generations: both floors, DISAGREE, copying, damage; save and append the verdicts.

    --json prints the result with every number at full precision (the registered rule's, as scores.json);
    --junit FILE writes one test case per candidate and axis for CI (also under --dry-run: FILE is yours).
    """
    from voicegate.cli import _machine
    from voicegate.cli._synthetic import synthetic_note
    from voicegate.gate import ScoreOutcome, score
    from voicegate.scoring import result_text

    shown: list[ScoreOutcome] = []

    def show(scored: ScoreOutcome) -> None:
        shown.append(scored)
        # Printed before anything is written, so the numbers show even if recording is refused.
        # After an amendment, the decision in force is the amended one: it is what is shown,
        # with what it was amended from (--json keeps the registered rule's result, scores.json's).
        # --json prints every number at full precision; the table, scores.json and the record round.
        if scored.in_force is not None:
            (fail if as_json or quiet else typer.echo)(f"note: {scored.in_force.note()}")
        synthetic = synthetic_note(scored.spec.run_dir)   # first: every number below is made of synthetic text
        if synthetic:
            (fail if as_json or quiet else typer.echo)(synthetic)
        if as_json:
            sys.stdout.write(result_text(scored.full or scored.result))
            _machine.mark_emitted()
        elif quiet:
            from voicegate.report import ship_line

            typer.echo(f"{scored.shown.gate}: {ship_line(scored.shown)}")
        else:
            from voicegate.report import print_score

            print_score(scored.shown)  # with the seat-integrity line when the run checked it
            for note in scored.notes:
                typer.echo(note)

    outcome = score(workspace, gate, dry_run=dry_run, on_scored=show)
    if junit is not None and shown:
        # The decision in force (after an amendment, the amended one): what CI should show as passing.
        decided = shown[-1].shown
        _machine.write_junit(junit, _machine.junit_xml(f"voicegate score {decided.gate}", _machine.score_cases(decided),
                                                       _machine.score_properties(decided)))
    if as_json or quiet:
        # After recording, not before: a refused recording is one line on stderr, nothing more.
        for warning in outcome.result.warnings:
            fail(f"warning: {warning}")
    out = sys.stderr if as_json else sys.stdout
    if not quiet:
        for line in outcome.recorded:
            out.write(line + "\n")
    if strict and outcome.result.ships is None:
        raise GateFailed(f"{outcome.spec.gate}: no candidate ships under {outcome.result.rule}")
