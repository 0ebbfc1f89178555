"""`voicegate init` and `voicegate register`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voicegate.cli._app import Gate, Workspace, app, fail
from voicegate.cli._machine import AsJson


@app.command("init")
def init_cmd(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Where to lay out the workspace.")] = Path("."),
    data_dir: Annotated[str, typer.Option(help="Data directory for generations and scores.")] = "runs",
    track_data: Annotated[bool, typer.Option(help="Keep the data directory in git (off: it is ignored).")] = False,
    inside: Annotated[bool, typer.Option("--inside", help="Allow DIR inside another git repository (its history "
                                         "then holds the registrations).")] = False,
) -> None:
    """Lay out a workspace: preregistrations/, gates/, the data directory and an example spec."""
    from voicegate.gate import init_workspace

    for line in init_workspace(directory, data_dir=data_dir, track_data=track_data, inside=inside):
        typer.echo(line)


@app.command("register")
def register_cmd(
    gate: Gate,
    supersede: Annotated[bool, typer.Option(
        help="Replace an existing registration (only while no results exist).")] = False,
    workspace: Workspace = None,
    as_json: AsJson = False,
) -> None:
    """Pre-register preregistrations/GATE.yaml: hash it and every file it names; commit the spec and its record.

    Only those two go into the registration commit. The files the spec names (prompts,
    corpora, probes) are pinned by their sha256 in the record, not committed: corpora are
    often large and live outside the repository, and a workspace's own prompts are yours to
    commit (before registering, so the commit holds what the hashes pin). Every missing file
    the spec needs is named in one line.
    """
    from voicegate.gate import register
    from voicegate.spec import shown_path

    done = register(workspace, gate, supersede=supersede)
    spec, reg = done.spec, done.registration
    if as_json:
        from voicegate.cli._documents import register_document
        from voicegate.cli._machine import emit

        doc = register_document(done)
        for line in doc["warnings"]:
            fail(line)
        emit(doc)
        return
    # After the registration, not before: a refusal is one line, and the warning is for a spec that went in.
    for note in (done.warning, *done.warnings, done.cache_note, *(f"note: {n}" for n in done.notes)):
        if note:
            fail(note)
    for line in done.pin_warnings():
        fail(line)
    typer.echo(f"registered {spec.gate}: spec sha256 {reg.spec_sha256} (canonical)")
    typer.echo(f"  spec file sha256 {reg.spec_file_sha256}  {reg.data['spec_path']} (check: sha256sum)")
    typer.echo(f"  {len(reg.data['files'])} files hashed (pinned in the record, not committed), "
               f"deciding rule {spec.floor_rule}")
    if reg.data["supersedes"]:
        typer.echo(f"  supersedes the registration of {reg.data['supersedes']['registered_at']}")
    for f in reg.data.get("follows") or []:
        typer.echo(f"  a follow-up design of {f['gate']} ({f['why']}; its verdict: {f['verdict']}): every score "
                   "entry of this design says so")
    typer.echo(f"  commit {reg.commit}: {shown_path(spec.root, spec.path)} and {shown_path(spec.root, reg.path)}")
    from voicegate.gate import design_lines

    for line in design_lines(spec):  # seeds, words per pool, and a pilot's power where one is on file
        if line.startswith("warning:"):
            fail(line)
        else:
            typer.echo(f"  {line}")
