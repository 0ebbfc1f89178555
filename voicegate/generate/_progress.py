"""What `voicegate generate` prints while it runs and when it stops.

Progress goes to stderr as rich bars (done/total per arm, tokens/s, ETA), silent under
``--quiet``; notes that change what a user should expect print always, through `Say`.
A run that stops early says where its stored generations are and the command that
picks up where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Self

from voicegate.generate._result import GenerateResult
from voicegate.generate._schedule import Job
from voicegate.spec import GateSpec

Say = Callable[[str], None]


class ProgressBars:
    """Rich progress on stderr: done/total per arm, tokens/s, ETA. Silent under --quiet."""

    def __init__(self, spec: GateSpec, jobs: list[Job], done: set[tuple[str, str, int, str]], quiet: bool):
        self.quiet = quiet
        self.tokens = 0
        self.t0 = time.monotonic()
        self._progress = None
        if quiet:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description:>14}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[tps]}"), TimeRemainingColumn(),
            console=Console(stderr=True), transient=False,
        )
        self._tasks = {}
        total = {a.name: 0 for a in spec.arms}
        have = {a.name: 0 for a in spec.arms}
        for j in jobs:
            total[j.arm] += 1
            have[j.arm] += j.key in done
        self._all = self._progress.add_task("all", total=len(jobs), completed=sum(have.values()), tps="")
        for a in spec.arms:
            self._tasks[a.name] = self._progress.add_task(a.name, total=total[a.name], completed=have[a.name], tps="")

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, arm: str, tokens: int) -> None:
        self.tokens += tokens
        if self._progress is None:
            return
        tps = self.tokens / max(time.monotonic() - self.t0, 1e-9)
        self._progress.update(self._all, advance=1, tps=f"{tps:,.0f} tok/s")
        self._progress.update(self._tasks[arm], advance=1)

    def say(self, line: str) -> None:
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)


def saved(result: GenerateResult) -> str:
    """Where the stored generations are; a file that was never written is not named."""
    if result.stored == 0 and not result.path.exists():
        return f"no generation is stored yet (0/{result.total})"
    return f"{result.stored}/{result.total} generations are saved in {result.where}"


def resume_hint(result: GenerateResult) -> str:
    return f"run `{result.resume}` again to resume"
