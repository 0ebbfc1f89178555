"""`voicegate amend`, `ship`, `verify` and `import`: the commands that append, check and bring in."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from voicegate._errors import GateFailed, VoicegateError
from voicegate.cli._app import Gate, Workspace, app, gate_arg
from voicegate.cli._machine import AsJson, JunitFile

# The built-in floor rules, written out: `--help` must not import the spec package (yaml, the
# schema) to list them. tests/cli/test_frictions.py holds this text to spec/_rules.RULES.
RULES_HELP = ("The floor rule to re-score under, one registered before the amendment. Built in: "
              "global-max-spread (v1, registered 2026-09-16: floor = the largest seed spread of ANY arm in the "
              "run); pairwise-max-spread (v1, registered 2026-09-17: floor = max(spread(candidate), "
              "spread(base))); welch-t (v1, registered 2026-12-06: floor = t(1-0.01, Welch df) × SE of "
              "mean(base) − mean(candidate) over seeds: a one-sided Welch t test whose power grows with seeds); "
              "welch-t-min-effect (v1, registered 2026-12-07: floor = ε + t(1-0.01, Welch df) × SE, ε = "
              "floor.smallest_effect base-seed SDs: a one-sided Welch test that the effect exceeds the smallest that "
              "matters; nearer X tested at α/impostors); prompt-paired (v1, registered 2026-12-07: floor = delta_cb "
              "× (ε + critical) / mean of a one-sided sign-flip test over prompts (per prompt, the base's seeds' "
              "mean distance of that prompt's generation minus the candidate's; 1999 seeded flips, exact up to 12 "
              "prompts; α 0.01, nearer X at α/impostors), ε = floor.smallest_effect base-seed SDs; "
              "welch-t-min-effect's floor where a seed × prompt-group F test (p < 0.05) finds seeds moving prompts "
              "together; computed only by a gate that chooses it).")
Reason = Annotated[str, typer.Option(
    "--reason", help="Why, in a sentence; recorded as one line, beside the verdicts.  [required]")]


def _emit(data: dict[str, Any]) -> None:
    from voicegate.cli._machine import emit

    emit(data)


@app.command("amend")
def amend_cmd(
    gate: Gate,
    rule: Annotated[str, typer.Option("--rule", help=RULES_HELP)],
    reason: Reason = "",
    registered_in: Annotated[str | None, typer.Option(
        "--registered-in", metavar="OTHER_GATE",
        help="The gate whose registration (in this workspace's git history, before any of its results) "
             "declared RULE; default: found in git.")] = None,
    post_hoc: Annotated[bool, typer.Option(
        "--post-hoc", help="Allow citing a registration made AFTER this gate's numbers: the amendment is then "
                           "recorded everywhere as a post-hoc correction, not a pre-registered rule.")] = False,
    workspace: Workspace = None,
    as_json: AsJson = False,
) -> None:
    """Re-score the SAME stored generations under another registered rule; append the amendment everywhere.

    The amendment must cite another gate's registration that declared RULE as its deciding floor rule,
    before any of that gate's results. Order is git's history: registered before this gate's first
    recorded score (an ancestor of its commit), it is prospective; after it, only --post-hoc records it,
    as a post-hoc correction.
    """
    from voicegate.gate import amend

    lines = amend(workspace, gate, rule, reason, registered_in=registered_in, post_hoc=post_hoc)
    if as_json:
        from voicegate.cli._documents import amend_document

        _emit(amend_document(workspace, gate, rule, lines))
        return
    for line in lines:
        typer.echo(line)


@app.command("ship")
def ship_cmd(gate: Gate, arm: Annotated[str, typer.Argument(metavar="ARM", help="The candidate arm a person ships.")],
             reason: Reason = "", workspace: Workspace = None, as_json: AsJson = False) -> None:
    """Record a person's shipping decision beside (never over) the verdicts."""
    from voicegate.gate import ship

    lines = ship(workspace, gate, arm, reason)
    for line in lines:
        if line.startswith("warning:") or not as_json:
            typer.echo(line, err=line.startswith("warning:"))
    if as_json:
        from voicegate.cli._documents import ship_document

        _emit(ship_document(workspace, gate, arm, lines))


@app.command("note")
def note_cmd(gate: Gate,
             text: Annotated[str, typer.Option("--text", help="What is known, in a sentence (e.g. a defect "
                                               "found and deliberately left alone).")] = "",
             workspace: Workspace = None, as_json: AsJson = False) -> None:
    """Put a person's note on the record (every artifact the spec names); it changes no verdict or decision.

    The place for "defect found, not acted on": a later post-hoc amendment is read against it.
    """
    from voicegate.gate import note

    lines = note(workspace, gate, text)
    if not as_json:
        for line in lines:
            typer.echo(line)
        return
    from voicegate.cli._documents import note_document

    _emit(note_document(workspace, gate, lines))


@app.command("verify")
def verify_cmd(
    gate: Annotated[str | None, typer.Argument(metavar="GATE", help="One gate; default: every preregistrations/*.yaml.",
                                               callback=gate_arg)] = None,
    workspace: Workspace = None,
    as_json: AsJson = False,
    junit: JunitFile = None,
) -> None:
    """Check every artifact's append-only chain (and, in git, that commits only added lines)."""
    from voicegate.artifacts import describe, verify_gates
    from voicegate.spec import shown_path, workspace_root

    if gate is not None:
        from voicegate.spec import check_gate_name

        check_gate_name(gate)  # `verify ''` is a bad name (exit 2), not "every gate"
    root = workspace_root(workspace)
    if not (root / "preregistrations").is_dir():
        # "every chain holds" about a directory that holds no gate would be a false all-clear.
        raise VoicegateError(f"{root} is not a voicegate workspace (no preregistrations/); run `verify` in one "
                             "or give -C DIR")
    checks = verify_gates(root, gate)
    if junit is not None:  # before anything is written: the file verify was asked about is never overwritten
        from voicegate.cli import _machine

        _machine.check_junit(
            junit, [(fc.path, f"the {fc.kind} {shown_path(root, fc.path)}") for fc in checks],
            [(root / "preregistrations", "inside preregistrations/, where voicegate keeps the specs"),
             (root / ".git", "inside git's own directory"),
             *((fc.path.parent, "inside a gate's run directory, which voicegate keeps")
               for fc in checks if fc.kind == "ledger")])
    lines, ok = describe(root, checks)
    if as_json or junit is not None:
        from voicegate.cli import _machine
        from voicegate.cli._documents import verify_document

        doc = verify_document(root, gate, checks, ok)
        if junit is not None:
            _machine.write_junit(junit, _machine.junit_xml("voicegate verify", _machine.verify_cases(doc["files"]),
                                                           {"workspace": str(root)}))
        if as_json:
            _emit(doc)
    if not as_json:
        if not checks:
            typer.echo("no gate specs under preregistrations/: nothing to verify")
        for line in lines:
            typer.echo(line)
    if not ok:
        broken = next(c for c in checks if not c.ok)
        raise GateFailed(f"{shown_path(root, broken.path)}: {broken.problem}")
    if not as_json:
        typer.echo("every chain holds")


@app.command("import")
def import_cmd(gate: Gate, file: Annotated[Path, typer.Argument(metavar="FILE", help="JSONL: one generation a line.")],
               workspace: Workspace = None) -> None:
    """Bring in generations made outside voicegate; one bad line refuses the whole file."""
    from voicegate.generate import import_file
    from voicegate.spec import load_spec, workspace_root

    spec = load_spec(workspace_root(workspace), gate)
    manifest = import_file(spec, file)
    counts = manifest["counts"]
    typer.echo(f"imported {manifest['imports'][-1]['rows']} generations into {spec.generations_path} "
               f"({counts['rows']} stored: {counts['voice']} voice, {counts['probe']} probe)")  # not-a-result: run.json
    typer.echo(f"  source {manifest['imports'][-1]['file']}, sha256 {manifest['imports'][-1]['sha256']}")
