"""What one `voicegate generate` did: its counts, its replicas, its integrity tally, and the lines that say so.

`GenerateResult` is filled in while the run goes (the runner counts a row only once it is
stored) and printed at the end: the summary, and the seat-integrity line
`voicegate generate` exits 4 on when it says FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.generate._looks import LookStop
from voicegate.scoring import Tally


@dataclass
class GenerateResult:
    gate: str
    total: int
    stored: int
    generated: int
    path: Path
    wall_s: float = 0.0
    completion_tokens: int = 0
    loaded: list[str] = field(default_factory=list)
    unloaded: list[str] = field(default_factory=list)
    reloads: int = 0
    resume: str = ""  # the command that picks up where this run stopped, as the user gave it
    isolate_arms: bool = False
    requests: int = 0                        # generation requests answered this session
    canaries: Tally = field(default_factory=Tally)
    quarantined: int = 0
    replicas: list[dict[str, Any]] = field(default_factory=list)   # per replica: cells, rows, tokens/s, status
    shown: str = ""  # `path` as messages print it: workspace-relative, like every other path voicegate prints
    look: LookStop | None = None  # a sequential design's look where this run stopped without making a row

    @property
    def where(self) -> str:
        return self.shown or str(self.path)

    def summary(self) -> str:
        if self.look is not None:
            return self.look.line
        if self.generated == 0:
            return f"{self.gate}: nothing to generate, all {self.total} generations are stored in {self.where}"
        tps = self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0
        text = (f"{self.gate}: generated {self.generated} ({self.stored}/{self.total} stored in {self.where}) "
                f"in {self.wall_s:.1f}s, {self.completion_tokens} tokens, {tps:.0f} tok/s")
        if len(self.replicas) > 1:
            text += "\n" + "\n".join(
                f"  replica {r['url']}: {r['cells']} cells, {r['rows']} rows, "
                f"{r['tokens_per_s'] or 0:.0f} tok/s" + ("" if r["status"] == "ok" else f" ({r['status']})")
                for r in self.replicas)
        return text + "\n" + self.integrity_line()

    def integrity_line(self) -> str:
        t = self.canaries
        mode = "arms isolated" if self.isolate_arms else "arms mixed in flight"
        word = "FAILED" if t.failed else ("NOT DECIDED" if t.undecided else "holds")
        head = (f"{self.gate}: seat integrity {word} ({mode}): {t.sent} canaries "
                f"sent, {t.right} reproduced their reference, {t.wrong} wrong")
        if t.foreign:
            head += f", {t.foreign} foreign weights"
        if t.confusions:
            head += " (" + ", ".join(f"{a} answered as {b} ×{n}" for (a, b), n in sorted(t.confusions.items())) + ")"
        if t.unclear:
            head += f", {t.unclear} unclear"
        head += f"; {t.references} references"
        seat, one_arm = t.floors()
        if seat is not None and one_arm is not None:
            head += (f"; catches a fault on {100 * seat:.1f}% of requests with 95% "
                     f"({100 * one_arm:.1f}% on one arm alone)")
        if t.problems:
            head += "; " + "; ".join(dict.fromkeys(t.problems))
        if t.failed:
            head += (f"; `voicegate score {self.gate}` will refuse: regenerate with "
                     f"`voicegate generate {self.gate} --isolate-arms`")
        elif t.undecided:
            head += "; " + "; ".join(dict.fromkeys(t.undecided)) + f"; `voicegate score {self.gate}` will refuse"
        return head
