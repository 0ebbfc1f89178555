"""The reviewer's report: one self-contained HTML page drawn from a gate's stored results.

    data = load_report_data(spec)      # a ReportData: typed results (GateResult), records, settings
    html = render_report(data)         # pure: data in (a ReportData, or the same as plain data), a page out
    path = write_report(spec)          # both, written atomically (default <run_dir>/report.html)
"""

from __future__ import annotations

from pathlib import Path

from voicegate._atomic import write_atomic
from voicegate.report._data import DEFAULT_SAMPLES, ReportData
from voicegate.report._load import default_out, load_report_data
from voicegate.report._page import render_report
from voicegate.report._table import print_score, ship_line
from voicegate.spec import GateSpec

__all__ = [
    "ReportData",
    "load_report_data",
    "print_score",
    "render_report",
    "ship_line",
    "write_report",
]


def write_report(spec: GateSpec, out: Path | None = None, *, samples: int = DEFAULT_SAMPLES) -> Path:
    """Render the gate's report and write it; nothing is written when the gate cannot be reported.

    `out` may not name a file voicegate appends to or reads (the gate record, a README, compose.yaml,
    the spec, a corpus, the run's state): a report written over the record would erase its entries.
    """
    from voicegate.spec import check_output_path

    if out is not None:
        check_output_path(spec, out, "--out", allowed=default_out(spec))
    html = render_report(load_report_data(spec, samples=samples))
    path = out if out is not None else default_out(spec)
    write_atomic(path, html)
    return path
