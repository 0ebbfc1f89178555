"""A gate's run data under `<data dir>/<gate>/`: the generations file and the run manifest.

- `_rundir`    `RunDir`, the one owner of every file name in a run directory
- `_store`     the append-only generations file (fsync'd rows, torn-tail repair, the hash)
- `_manifest`  `run.json`, what a generate or import run recorded about itself
"""

from voicegate.run._manifest import RunManifest, load_manifest, manifest_path, read_manifest, write_manifest
from voicegate.run._rundir import RunDir
from voicegate.run._store import (
    USAGE_KEYS,
    CellKey,
    RowKey,
    append_rows,
    cell_key,
    finish_reason_problem,
    generations_hash,
    read_generations,
    read_rows,
    repair_tail,
    row_key,
    row_problem,
    usage_problem,
)

__all__ = [
    "USAGE_KEYS",
    "CellKey",
    "RowKey",
    "RunDir",
    "RunManifest",
    "append_rows",
    "cell_key",
    "finish_reason_problem",
    "generations_hash",
    "load_manifest",
    "manifest_path",
    "read_generations",
    "read_manifest",
    "read_rows",
    "repair_tail",
    "row_key",
    "row_problem",
    "usage_problem",
    "write_manifest",
]
