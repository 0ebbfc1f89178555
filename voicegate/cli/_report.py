"""`voicegate report GATE`: write the reviewer's self-contained HTML page.

The page goes to `<data dir>/<gate>/report.html` by default, beside the scores it
is drawn from: it is a derived view that can be re-rendered at any time, not a
record, so it does not live in `gates/` with the append-only records (and does
not churn git). `--out` puts it anywhere, e.g. to attach to an e-mail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voicegate._errors import VoicegateError
from voicegate.cli._app import Gate, Workspace, app
from voicegate.cli._machine import AsJson


@app.command("report")
def report(
    gate: Gate,
    workspace: Workspace = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write the page "
                                              "(default: <data dir>/<gate>/report.html).")] = None,
    samples: Annotated[int, typer.Option("--samples", min=0, max=100,
                                         help="How many (prompt, seed) groups to show side by side.")] = 4,
    as_json: AsJson = False,
) -> None:
    """Write the reviewer's report: one self-contained HTML page (no network, no seat)."""
    from voicegate.report import write_report
    from voicegate.spec import check_gate_name, load_spec, workspace_root

    root = workspace_root(workspace)
    check_gate_name(gate)
    spec = load_spec(root, gate)
    if out is not None and out.exists() and out.is_dir():
        raise VoicegateError(f"--out {out} is a directory; give a file name")
    path = write_report(spec, out, samples=samples)
    if as_json:
        from voicegate.cli._documents import report_document
        from voicegate.cli._machine import emit

        emit(report_document(spec.gate, path))
        return
    typer.echo(f"wrote {path}")
