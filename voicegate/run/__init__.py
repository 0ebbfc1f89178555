"""A gate's run data under `<data dir>/<gate>/`: the generations file and the run manifest.

- `_rundir`    `RunDir`, the one owner of every file name in a run directory
- `_store`     the append-only generations file (fsync'd rows, torn-tail repair, the hash)
- `_manifest`  `run.json`, what a generate or import run recorded about itself
"""

from voicegate.run._rundir import RunDir

__all__ = ["RunDir"]
