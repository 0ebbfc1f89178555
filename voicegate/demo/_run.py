"""`voicegate demo`: a complete gate against an embedded stand-in seat, as a user would run it.

Each step is the real command in a child process (`python -m voicegate ...`), talking to
the stand-in over loopback; the demo only lays out the workspace, starts and stops the seat,
and says where everything went.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate.demo._voices import VOICES
from voicegate.demo._workspace import GATE, write_workspace

Echo = Callable[[str], None]

SHIP_REASON = "additive, reversible and safety-clean"
AMEND_REASON = ("global-max-spread let ckpt925's outlier seed set every candidate's floor; "
                "pairwise-max-spread was registered before this amendment")


def _generator(voice: Callable[[str, int, int], str | tuple[str, str]]):
    def generate(model: str, seed: int, prompt: str, max_tokens: int) -> str | tuple[str, str]:
        return voice(prompt, seed, max_tokens)
    return generate


def demo_seat():
    """The stand-in seat with the demo's voices; ckpt475 is 'listed in --lora-modules', the rest load at run time."""
    from voicegate.seat import StandinSeat

    return StandinSeat(
        base="voices-base",
        adapters={"lv-marlowe-ckpt475": "/adapters/lv-marlowe-v1/ckpt475"},
        generators={model: _generator(voice) for model, voice in VOICES.items()},
        slots=8,
    )


STEPS_SAID = {
    "register": "freeze the gate: the spec (arms, prompts, seeds, corpora, floor rule) is hashed and committed "
                "before any text exists",
    "generate": "every arm x seed x prompt on one seat, interleaved; the base carrier and the candidate "
                "adapters answer the same requests",
    "score": "delta_cb = how much nearer the author's held-out text a candidate writes than the base does; "
             "it must clear the seed-spread floor; both floor rules are shown, DISAGREE where they differ",
    "ship": "a person's decision, recorded beside (never over) the verdicts — here against the rule's "
            "recommendation, which the record keeps visible",
    "amend": "re-score the SAME generations under a rule registered in advance; the correction is appended "
             "everywhere, nothing is deleted",
    "verify": "every artifact's append-only chain, checked against the run's ledger (and git)",
    "report": "the reviewer's self-contained HTML page",
}


def steps(seat_url: str) -> list[list[str]]:
    return [
        ["register", GATE],
        ["generate", GATE, "--seat", seat_url, "--quiet"],
        ["score", GATE],
        ["ship", GATE, "ckpt475", "--reason", SHIP_REASON],
        ["amend", GATE, "--rule", "pairwise-max-spread", "--reason", AMEND_REASON],
        ["verify", GATE],
        ["report", GATE],
    ]


def run_demo(directory: Path | None, echo: Echo) -> Path:
    root = (directory or Path(tempfile.mkdtemp(prefix="voicegate-demo-"))).resolve()
    write_workspace(root)
    echo(f"demo workspace: {root}")
    env = {**os.environ, "VOICEGATE_WORKSPACE": str(root), "PYTHONUNBUFFERED": "1"}
    env.pop("VOICEGATE_SEAT_URL", None)
    started = time.monotonic()
    with demo_seat() as seat:
        echo(f"stand-in seat on {seat.url} (embedded; stopped when the demo ends)")
        for args in steps(seat.url):
            echo(f"\n# {STEPS_SAID[args[0]]}")
            echo(f"$ voicegate {' '.join(_quote(a) for a in args)}")
            done = subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, env=env,
                                  check=False, capture_output=True, text=True)
            for stream in (done.stdout, done.stderr):
                if stream.strip():
                    echo(stream.rstrip("\n"))
            if done.returncode != 0:
                raise VoicegateError(f"demo step `voicegate {args[0]}` exited {done.returncode}")
    echo(f"\ndone in {time.monotonic() - started:.1f} s; the stand-in seat is stopped.")
    echo("artifacts (append-only, chained; `voicegate verify` checks them):")
    for rel in (f"gates/{GATE}.md", "demo/adapters/lv-marlowe-v1/README.md", "demo/deploy/compose.yaml",
                f"runs/{GATE}/report.html", f"preregistrations/{GATE}.yaml",
                f"preregistrations/{GATE}.registration.json", f"runs/{GATE}/generations.jsonl"):
        echo(f"  {root / rel}")
    echo("\nnext:")
    echo(f"  open the report:        {(root / 'runs' / GATE / 'report.html').as_uri()}")
    echo("  every number explained: docs/concepts.md; your first gate step by step: docs/tutorial.md")
    echo("  start your own gate:    voicegate init DIR")
    if directory is None:
        echo(f"  this workspace is a temporary folder, kept so you can look: rm -r {root} when done")
    return root


def _quote(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg
