"""The use cases: what a user (or the CLI) does to a gate, one function each.

    from voicegate.gate import register, score, amend, ship
    register(root, "lv-bronte")                        # commit the spec and its files' hashes
    outcome = score(root, "lv-bronte", dry_run=True)   # ScoreOutcome: .result is a GateResult
    ship(root, "lv-bronte", "ckpt475", "additive, reversible and safety-clean")
    register(root, "lv-hemingway")                     # the next gate, deciding by pairwise-max-spread
    amend(root, "lv-bronte", "pairwise-max-spread", "why the rule changes")   # cites lv-hemingway's commit

Each returns what was said about the artifacts it touched; the CLI prints it.
"""

from voicegate.artifacts import InForce
from voicegate.gate._amend import amend, amend_spec
from voicegate.gate._init import init_workspace
from voicegate.gate._register import Registered, register
from voicegate.gate._score import ScoreOutcome, load_generations, score
from voicegate.gate._ship import ship

__all__ = [
    "InForce",
    "Registered",
    "ScoreOutcome",
    "amend",
    "amend_spec",
    "init_workspace",
    "load_generations",
    "register",
    "score",
    "ship",
]
