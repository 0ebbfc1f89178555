"""`voicegate score`: score the stored generations, print the table, save scores.json, append verdicts."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from voicegate._atomic import write_atomic
from voicegate._errors import GateFailed, VoicegateError
from voicegate.cli._app import Gate, Workspace, app, fail
from voicegate.run._manifest import read_manifest
from voicegate.run._store import read_rows
from voicegate.spec._registration import check_registered
from voicegate.spec._spec import load_spec
from voicegate.spec._workspace import workspace_root


def result_json(result: dict[str, Any]) -> str:
    """The bytes of scores.json and of `--json`: same result, same bytes."""
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"



def load_generations(spec) -> list[dict[str, Any]]:
    try:
        rows = read_rows(spec.generations_path)
    except ValueError as exc:
        raise VoicegateError(f"{spec.generations_path}: a row is not valid JSON ({exc})") from None
    if not rows:
        raise VoicegateError(f"no generations for {spec.gate} at {spec.generations_path} "
                             f"(run `voicegate generate {spec.gate}` or `voicegate import`)")
    return rows


@app.command("score")
def score_cmd(
    gate: Gate,
    workspace: Workspace = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Score without writing anything.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when no candidate ships.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="One summary line instead of the table.")] = False,
) -> None:
    """Score stored generations: both floors, DISAGREE, copying, damage; save and append the verdicts."""
    from voicegate.scoring import score_gate

    spec = load_spec(workspace_root(workspace), gate)
    registration = check_registered(spec)
    rows = load_generations(spec)
    result = score_gate(spec, rows, cache_dir=spec.run.cache, write_cache=not dry_run)
    text = result_json(result)

    if as_json:
        sys.stdout.write(text)
    elif quiet:
        from voicegate.report._table import ship_line

        typer.echo(f"{spec.gate}: {ship_line(result)}")
    else:
        from voicegate.report._table import print_score

        print_score(result)
    for warning in result["warnings"]:
        if as_json or quiet:
            fail(f"warning: {warning}")

    if not dry_run:
        write_atomic(spec.run.scores, text)
        from voicegate.artifacts import record_score

        lines = record_score(spec, registration, result, read_manifest(spec.run_dir) or {})
        out = sys.stderr if as_json else sys.stdout
        if not quiet:
            for line in lines:
                out.write(line + "\n")
    if strict and result["ships"] is None:
        raise GateFailed(f"{spec.gate}: no candidate ships under {result['rule']}")
