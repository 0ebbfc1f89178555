"""The use cases: what a user (or the CLI) does to a gate, one function each.

    from voicegate.gate import register, score, amend, ship
    register(root, "lv-bronte")                        # commit the spec and its files' hashes
    outcome = score(root, "lv-bronte", dry_run=True)   # ScoreOutcome: .result is a GateResult
    ship(root, "lv-bronte", "ckpt475", "additive, reversible and safety-clean")
    note(root, "lv-bronte", "the global floor is one outlier seed of ckpt925; left alone")   # on the record first
    register(root, "lv-hemingway")                     # the next gate, deciding by pairwise-max-spread
    amend(root, "lv-bronte", "pairwise-max-spread", "why the rule changes")   # cites lv-hemingway's commit
    calibrate(root, "lv-pilot", seeds=5)                # error rates of 5-seed draws of a many-seed pilot

Each returns what was said about the artifacts it touched; the CLI prints it.
"""

from voicegate.gate._amend import amend, amend_spec
from voicegate.gate._calibrate import calibrate, design_lines
from voicegate.gate._error_rates import ErrorRates
from voicegate.gate._init import init_workspace
from voicegate.gate._looks import LookState
from voicegate.gate._register import register
from voicegate.gate._score import ScoreOutcome, load_generations, score
from voicegate.gate._ship import note, ship
from voicegate.gate._state import GateState, Standing, recorded_standing

__all__ = [
    "ErrorRates",
    "GateState",
    "LookState",
    "ScoreOutcome",
    "Standing",
    "amend",
    "amend_spec",
    "calibrate",
    "design_lines",
    "init_workspace",
    "load_generations",
    "note",
    "recorded_standing",
    "register",
    "score",
    "ship",
]
