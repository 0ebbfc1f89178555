"""RunDir: the one place that names the files under `<data dir>/<gate>/`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunDir:
    """A gate's run directory and every file voicegate keeps in it.

    Nothing else in voicegate spells these names: a new state file is a new
    property here, so `register` (which refuses once results exist) and the
    docs see it too.
    """

    path: Path
    data_dir: Path

    @property
    def generations(self) -> Path:
        return self.path / "generations.jsonl"

    @property
    def manifest(self) -> Path:
        return self.path / "run.json"

    @property
    def canaries(self) -> Path:
        """Seat-integrity canaries: each arm's references and the checks re-sent mid-run (`generate._canaries`,
        judged by `scoring._integrity`)."""
        return self.path / "canaries.jsonl"

    @property
    def identity(self) -> Path:
        """Every gate's references, by the weights they came from: the data dir's, not one gate's."""
        return self.data_dir / "identity.jsonl"

    @property
    def quarantine(self) -> Path:
        """Generations of a session whose integrity check failed: moved here, never deleted, never scored."""
        return self.path / "quarantine.jsonl"

    @property
    def scores(self) -> Path:
        return self.path / "scores.json"

    @property
    def recorded(self) -> Path:
        """What the artifacts were last told (the current result and entry counts)."""
        return self.path / "recorded.json"

    @property
    def decisions(self) -> Path:
        return self.path / "decisions.jsonl"

    @property
    def amendments(self) -> Path:
        return self.path / "amendments.jsonl"

    @property
    def notes(self) -> Path:
        """A person's notes on the record (`voicegate note`): what was known, and when, in the history."""
        return self.path / "notes.jsonl"

    @property
    def report(self) -> Path:
        """The reviewer's page, by default (derived and re-renderable, not a record)."""
        return self.path / "report.html"

    @property
    def intent(self) -> Path:
        """An unfinished verdict: what it will write where (see `artifacts._transaction`)."""
        return self.path / "pending-entry.json"

    @property
    def ledger(self) -> Path:
        """Every artifact entry this gate ever wrote, with its marker hash: what `verify` expects to find."""
        return self.path / "entries.jsonl"

    @property
    def adapters(self) -> Path:
        """Adapters a run loaded on the seat and has not unloaded yet (see `seat._adapters`)."""
        return self.path / "adapters.json"

    def calibration(self, seeds: int) -> Path:
        """`voicegate calibrate --seeds K`'s result: the verdicts' error rates on K-seed draws of this run (a
        pilot, not a record: no artifact cites it, and a later calibrate at the same K replaces it)."""
        return self.path / f"calibration-K{seeds}.json"

    @property
    def cache(self) -> Path:
        """The content-addressed scoring cache, shared by every gate of the data directory."""
        return self.data_dir / ".cache"

    @property
    def state_files(self) -> tuple[Path, ...]:
        """The files a verdict's transaction writes here (their temps are swept under the gate lock)."""
        return (self.scores, self.recorded, self.decisions, self.amendments, self.notes, self.intent, self.ledger)

    @property
    def results(self) -> tuple[Path, ...]:
        """Files whose existence means numbers exist (registration is refused after them).

        Quarantined generations count: moved out of the scored set, they were still made under this spec.
        """
        return (self.generations, self.quarantine, self.scores)
